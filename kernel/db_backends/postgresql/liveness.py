"""Django's per-request connection health check, without a round trip when nothing has happened.

With ``CONN_HEALTH_CHECKS`` (on in chartr's settings) Django sends ``SELECT 1``
before the first query of every request on a kept connection, so a
connection the server dropped while it sat idle is replaced instead of failing
the request. On PostgreSQL that is a round trip per API request: about 15% of a
1-item append's wall time in process (docs/benchmarks.md).

Whatever ends a session from the server's side (a restart, a crash,
``pg_terminate_backend``, an idle timeout) reaches the client's socket as a
message or an end of stream, and an idle connection in autocommit gets nothing
else unsolicited that chartr uses (its ``LISTEN`` runs on a connection of its
own). So a kept connection whose socket has nothing to read, which libpq still
holds as good and idle, answers ``SELECT 1`` as it did the last query; only
then is the query skipped. Anything else (bytes waiting, a hang-up, a session
in a transaction, libpq already knowing the connection is bad) takes Django's
own check, which closes the connection if the query fails.
"""

from __future__ import annotations

import select

#: Anything waiting on the socket: data, an end of stream, an error or a hang-up.
WAITING = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP


def quiet_and_idle(connection) -> bool:
    """Whether the psycopg ``connection`` is good, idle and has nothing from the server to read."""
    try:
        info = connection.info
        if info.status.name != "OK" or info.transaction_status.name != "IDLE":
            return False
        poller = select.poll()
        poller.register(connection.fileno(), WAITING)
        return not poller.poll(0)
    except Exception:  # noqa: BLE001  (a closed or odd connection: let Django's check decide)
        return False
