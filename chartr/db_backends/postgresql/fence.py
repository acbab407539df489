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
from psycopg import generators, pq

from chartr.db_backends.fence import DRAIN_SECONDS, FenceNotClosed, WriteFence
from kernel.write_fence import outside_write_fence

#: A fixed 32-bit key, derived from a name so other tools are unlikely to reuse it.
ADVISORY_LOCK_KEY = zlib.crc32(b"chartr.write-fence")
#: lock_not_available: the restore's lock_timeout ran out.
LOCK_NOT_AVAILABLE = "55P03"


#: Every transaction sends it: the key is written into the text, so nothing is bound per call.
_ADMIT_SQL = f"SELECT pg_try_advisory_xact_lock_shared({int(ADVISORY_LOCK_KEY)})"


#: ``_begin_and_admit`` uses two psycopg internals (the connection's own BEGIN text and its
#: wait loop); a psycopg without them gets the two round trips it always had.
_BEGIN_WITH_THE_FENCE = hasattr(psycopg.Connection, "_get_tx_start_command") and hasattr(psycopg.Connection, "wait")


class PostgreSQLWriteFence(WriteFence):
    def admits(self) -> bool:
        with self.connection.wrap_database_errors:
            raw = self.connection.connection
            if (
                _BEGIN_WITH_THE_FENCE
                and raw.pgconn.transaction_status == pq.TransactionStatus.IDLE
                and not raw.autocommit
                and not getattr(raw, "_pipeline", None)
            ):
                return self._begin_and_admit(raw)
            with raw.cursor() as cursor:
                cursor.execute(_ADMIT_SQL)
                return bool(cursor.fetchone()[0])

    @staticmethod
    def _begin_and_admit(raw) -> bool:
        """Send psycopg's ``BEGIN`` and the fence's query in one round trip.

        psycopg would send its ``BEGIN`` alone before the transaction's first
        statement, which here is always the fence's: one message with both
        (simple query protocol, as psycopg sends its ``BEGIN``) saves a round
        trip on every transaction, about 60 us of CPU. psycopg sees the
        transaction open and sends no ``BEGIN`` of its own; commit and rollback
        are psycopg's as before.
        """
        begin = raw._get_tx_start_command()
        with raw.lock:
            raw.pgconn.send_query(begin + b"; " + _ADMIT_SQL.encode())
            results = raw.wait(generators.execute(raw.pgconn))
        for result in results:
            if result.status == pq.ExecStatus.FATAL_ERROR:
                raise psycopg.errors.error_from_result(result, encoding=raw.info.encoding)
        admitted = results[-1]
        if admitted.status != pq.ExecStatus.TUPLES_OK or admitted.ntuples != 1:
            raise psycopg.InternalError(f"the write fence's query returned {admitted.status!r}")
        return admitted.get_value(0, 0) == b"t"

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
