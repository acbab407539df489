"""Data snapshots of a PostgreSQL database: pg_dump, pg_restore --list, and
pg_restore piped into psql as one transaction.

The client tools get their connection parameters from
kernel.postgres.libpq_environment, through the environment, so a password
never appears on a command line.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from django.apps import apps
from django.db.backends.base.base import BaseDatabaseWrapper

from datadir import store
from datadir.backends.base import CheckedDump, DatabaseBackend, DumpContents, DumpRejected, quote_name
from datadir.errors import SnapshotFailed, SnapshotToolMissing, StoreBusy
from kernel.postgres import libpq_environment
from timeline.models import TimelineHead
from timeline.services import rotate_epochs_sql

#: PostgreSQL may still pick the restore as a deadlock victim against a writer
#: that takes its locks in an unusual order; the restore rolls back whole, so
#: trying again is safe.
RESTORE_ATTEMPTS = 3

#: Appended to psql's input when pg_restore fails part-way. It ends a COPY block
#: that may have been cut off and then fails for certain, so psql rolls the
#: whole transaction back instead of committing a truncated script.
_ABORT_RESTORE_SQL = (
    "\n\\.\nDO $$ BEGIN RAISE EXCEPTION 'pg_restore failed part-way; rolling the restore back'; END $$;\n"
)


#: The store lock's advisory key: a fixed 32-bit value derived from a name other tools are unlikely to use.
STORE_LOCK_KEY = zlib.crc32(b"chartr.datadir-store")


class PostgreSQLBackend(DatabaseBackend):
    engine = "postgresql"
    dump_name = store.POSTGRES_DUMP_NAME

    @contextmanager
    def store_locked(self, *, wait: bool) -> Iterator[None]:
        """A session-level advisory lock on a connection of its own: every instance sharing
        this database sees it, and it goes with the session if the holder dies."""
        holder = self.connection.copy()
        try:
            holder.ensure_connection()
            with holder.connection.cursor() as cursor:
                if wait:
                    cursor.execute("SELECT pg_advisory_lock(%s)", [STORE_LOCK_KEY])
                else:
                    cursor.execute("SELECT pg_try_advisory_lock(%s)", [STORE_LOCK_KEY])
                    if not cursor.fetchone()[0]:
                        raise StoreBusy(
                            "Another data snapshot or restore is running on another instance sharing this "
                            "PostgreSQL database. Try again when it has finished, or run without --no-wait to wait."
                        )
            yield
        finally:
            holder.close()  # ending the session releases the lock

    def table_names(self, cursor: Any) -> list[str]:
        cursor.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema() ORDER BY 1")
        return [row[0] for row in cursor.fetchall()]

    def dump(self, target: Path) -> DumpContents:
        pg_dump = require_tool("pg_dump")
        # A connection of our own, so the exported snapshot's transaction is not
        # tangled with whatever the default connection is doing.
        private = self.connection.copy()
        try:
            private.ensure_connection()
            with private.connection.cursor() as cursor:
                cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                cursor.execute("SELECT pg_export_snapshot()")
                exported = cursor.fetchone()[0]
                contents = self.contents(cursor)
                # pg_dump reads the very snapshot the counts came from.
                dumped = subprocess.run(
                    [pg_dump, "--format=custom", f"--snapshot={exported}", f"--file={target}"],
                    env=libpq_environment(private.settings_dict),
                    capture_output=True,
                    text=True,
                )
                if dumped.returncode != 0:
                    raise SnapshotFailed(f"pg_dump failed (exit {dumped.returncode}): {dumped.stderr.strip()[-2000:]}")
                cursor.execute("COMMIT")
        finally:
            private.close()
        return contents

    def verify(self, dump: Path, *, sha256: str, expected_tables: dict[str, int], work: Path) -> CheckedDump:
        """``pg_restore --list`` reads the whole table of contents and must list data for every table."""
        listing = subprocess.run([require_tool("pg_restore"), "--list", str(dump)], capture_output=True, text=True)
        if listing.returncode != 0:
            raise DumpRejected(f"pg_restore --list {dump} failed: {listing.stderr.strip()[-500:]}")
        missing = sorted(set(expected_tables) - _tables_with_data(listing.stdout))
        if missing:
            raise DumpRejected(f"the dump has no data for tables {', '.join(missing)}")
        return CheckedDump(path=dump)

    def restore(self, checked: CheckedDump) -> int:
        for attempt in range(1, RESTORE_ATTEMPTS + 1):
            try:
                return self._restore_once(checked.path)
            except SnapshotFailed as exc:
                if "deadlock detected" not in exc.message or attempt == RESTORE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def _restore_once(self, dump: Path) -> int:
        pg_restore = require_tool("pg_restore")
        psql = require_tool("psql")
        # pg_restore's script and the epoch rotation run in ONE transaction (psql
        # --single-transaction rather than pg_restore's own), so no client ever
        # sees restored rows under an old epoch. gen_random_uuid() is core since
        # PostgreSQL 13.
        rotate = (
            "RESET search_path;\n"
            + rotate_epochs_sql(quote_name, new_epoch="substr(md5(gen_random_uuid()::text), 1, 16)")
            + ";\n"
        )
        tables = tables_parents_first(self.connection)
        lock_all = (
            f"LOCK TABLE {', '.join(quote_name(t) for t in tables)} IN ACCESS EXCLUSIVE MODE;\n" if tables else ""
        )
        succeeded, messages = _pipe_into_psql(
            [pg_restore, "--clean", "--if-exists", "--no-owner", "--no-privileges", "--file=-", str(dump)],
            [psql, "--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", "--single-transaction", "--file=-"],
            env=libpq_environment(self.connection.settings_dict),
            before=lock_all,
            after=rotate,
        )
        if not succeeded:
            raise SnapshotFailed(
                "The PostgreSQL restore failed and was rolled back, so the database is unchanged: " + messages[-2000:]
            )
        with self.connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {quote_name(TimelineHead._meta.db_table)}")
            return cursor.fetchone()[0]


def require_tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise SnapshotToolMissing(
            f"{name} is not installed (not found on PATH). Data snapshots on PostgreSQL need the "
            f"PostgreSQL client tools matching the server version, e.g. `apt install postgresql-client`."
        )
    return found


def _tables_with_data(listing: str) -> set[str]:
    """Tables with a TABLE DATA entry in ``pg_restore --list`` output."""
    tables = set()
    for line in listing.splitlines():
        # "3345; 0 16390 TABLE DATA public timeline_timelinerow postgres"
        tokens = line.split()
        if line.startswith(";") or " TABLE DATA " not in line:
            continue
        at = tokens.index("DATA")
        if len(tokens) > at + 2:
            tables.add(tokens[at + 2])
    return tables


def tables_parents_first(connection: BaseDatabaseWrapper) -> list[str]:
    """The live database's tables, every table after the tables it references.

    The restore locks them all, in this order, before dropping anything:
    writers lock parents before children (an append locks the agent row, then
    inserts timeline rows), so taking the locks in the same order makes the
    restore wait for them instead of deadlocking with them.
    """
    existing = set(connection.introspection.table_names())
    order: list[str] = []
    seen: set = set()

    def visit(model) -> None:
        if model in seen:
            return
        seen.add(model)
        for related in model._meta.get_fields(include_hidden=True):
            if (
                (related.many_to_one or related.one_to_one)
                and related.concrete
                and related.related_model is not None
                and related.related_model is not model
            ):
                visit(related.related_model)
        if model._meta.db_table in existing and model._meta.db_table not in order:
            order.append(model._meta.db_table)

    for model in apps.get_models(include_auto_created=True):
        visit(model)
    return order


def _pipe_into_psql(
    producer_args: list[str], consumer_args: list[str], *, env: dict[str, str], before: str, after: str
) -> tuple[bool, str]:
    """Run ``producer | consumer`` with ``before`` fed to psql ahead of the
    script and ``after`` behind it, or the abort SQL if the producer failed.
    Whether both succeeded, and their error output."""
    with tempfile.TemporaryFile() as producer_errors, tempfile.TemporaryFile() as consumer_errors:
        producer = subprocess.Popen(producer_args, stdout=subprocess.PIPE, stderr=producer_errors, env=env)
        consumer = subprocess.Popen(
            consumer_args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=consumer_errors, env=env
        )
        try:
            try:
                consumer.stdin.write(before.encode())
                shutil.copyfileobj(producer.stdout, consumer.stdin, 1 << 16)
                producer.wait()
                consumer.stdin.write((after if producer.returncode == 0 else _ABORT_RESTORE_SQL).encode())
                consumer.stdin.close()
            except BrokenPipeError:
                pass  # psql stopped on an error; its output says which
            consumer.wait()
        finally:
            for child in (producer, consumer):
                if child.poll() is None:
                    child.kill()
                    child.wait()
            producer.stdout.close()
        messages = (_read_all(producer_errors) + "\n" + _read_all(consumer_errors)).strip()
    return producer.returncode == 0 and consumer.returncode == 0, messages


def _read_all(stream: IO[bytes]) -> str:
    stream.seek(0)
    return stream.read().decode(errors="replace").strip()
