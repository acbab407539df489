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

from chartr.db_backends.fence import DRAIN_SECONDS, FenceNotClosed, WriteFence
from kernel.write_fence import outside_write_fence

#: A fixed 32-bit key, derived from a name so other tools are unlikely to reuse it.
ADVISORY_LOCK_KEY = zlib.crc32(b"chartr.write-fence")
#: lock_not_available: the restore's lock_timeout ran out.
LOCK_NOT_AVAILABLE = "55P03"


class PostgreSQLWriteFence(WriteFence):
    def admits(self) -> bool:
        with self.connection.wrap_database_errors, self.connection.connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_xact_lock_shared(%s)", [ADVISORY_LOCK_KEY])
            return bool(cursor.fetchone()[0])

    @contextmanager
    def closed(self, *, drain_seconds: float = DRAIN_SECONDS) -> Iterator[None]:
        # A session of its own: nothing the restore does to its connections can drop the lock early.
        holder = self.connection.copy()
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
            with outside_write_fence():
                yield
        finally:
            # Ending the session releases the lock.
            holder.close()
