"""The write fence on PostgreSQL: an advisory lock, shared by writers, exclusive for a restore.

Every transaction begins with ``pg_try_advisory_xact_lock_shared``, which it
holds until it ends. A restore closes the fence with ``pg_advisory_lock`` in
exclusive mode on a connection of its own. PostgreSQL queues lock requests: a
shared request that conflicts with a waiting exclusive one is refused, so once
the restore asks, no new transaction gets in, and the restore gets the lock
as soon as the admitted ones end. Advisory locks belong to the database, so
this holds for every server process on every machine; the lock goes with the
restore's session if it dies.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from kernel.db_backends.fence import DRAIN_SECONDS, FenceNotClosed, WriteFence
from kernel.write_fence import outside_write_fence

#: A fixed 32-bit key, derived from a name so other tools are unlikely to reuse it.
ADVISORY_LOCK_KEY = zlib.crc32(b"chartr.write-fence")
#: lock_not_available: the restore's lock_timeout ran out.
LOCK_NOT_AVAILABLE = "55P03"


#: Every transaction sends it: the key is written into the text, so nothing is bound per call.
_ADMIT_SQL = f"SELECT pg_try_advisory_xact_lock_shared({int(ADVISORY_LOCK_KEY)})"


class PostgreSQLWriteFence(WriteFence):
    #: psycopg's cursor on the connection, kept for the next transaction as the append keeps its own.
    cursor = None

    def admits(self) -> bool:
        with self.connection.wrap_database_errors:
            raw = self.connection.connection
            cursor = self.cursor
            if cursor is None or cursor.connection is not raw or cursor.closed:
                cursor = self.cursor = psycopg.Cursor(raw)
            cursor.execute(_ADMIT_SQL, prepare=True)
            return bool(cursor.fetchone()[0])

    @contextmanager
    def closed(self, *, drain_seconds: float = DRAIN_SECONDS) -> Iterator[None]:
        # A session of its own: nothing the restore does to its connections can drop the lock early.
        holder = self.connection.copy()
        locked = False
        try:
            holder.ensure_connection()
            with holder.connection.cursor() as cursor:
                cursor.execute("SELECT set_config('lock_timeout', %s, false)", [f"{int(drain_seconds * 1000)}ms"])
                try:
                    cursor.execute("SELECT pg_advisory_lock(%s)", [ADVISORY_LOCK_KEY])
                except Exception as exc:
                    if getattr(exc, "sqlstate", None) == LOCK_NOT_AVAILABLE:
                        raise FenceNotClosed(f"a write transaction was still running after {drain_seconds:g}s") from exc
                    raise
                locked = True
            with outside_write_fence():
                yield
        finally:
            try:
                if locked:
                    _open_now(holder)
            finally:
                # Ending the session releases the lock too, but the server does that after
                # the client has gone: a write sent right after could still be refused.
                holder.close()


def _open_now(holder) -> None:
    """Release the restore's lock and wait for the server to say so."""
    try:
        with holder.connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [ADVISORY_LOCK_KEY])
    except psycopg.Error:
        pass  # A broken session: closing it below releases the lock as the server ends it.
