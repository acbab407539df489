"""Taking, rotating and restoring data snapshots. The commands and the admin page call these.

A snapshot and a restore each run under the store lock (datadir.lock),
so they never interleave. Neither goes through the ORM for the bulk of its
work: the database is copied whole (SQLite online backup API, or pg_dump),
which is what makes the copy consistent while the server keeps writing.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.sqlite3._functions import register as register_django_sqlite_functions

from datadir import store
from datadir.errors import (
    EngineMismatch,
    SnapshotCorrupt,
    SnapshotFailed,
    SnapshotNotFound,
    SnapshotsDisabled,
    SnapshotToolMissing,
)
from datadir.lock import store_lock
from kernel.postgres import libpq_environment
from snapshots.models import AgentSnapshot, new_timeline_epoch
from snapshots.signals import agents_changed


@dataclass(frozen=True)
class SnapshotResult:
    name: str
    path: Path
    engine: str
    previous: str | None
    tables: dict[str, int]
    files: int
    linked_files: int
    copied_bytes: int
    summary: str
    rotated: tuple[str, ...] = ()


@dataclass(frozen=True)
class RestoreResult:
    restored: str
    undo_snapshot: str | None
    agents_with_new_epoch: int
    files_restored: int
    files_removed: int
    dry_run: bool = False
    undo_rotated: tuple[str, ...] = field(default=())


# --- helpers: database engine ---------------------------------------------


def _connection():
    return connections[DEFAULT_DB_ALIAS]


def _engine() -> str:
    vendor = _connection().vendor
    if vendor not in ("sqlite", "postgresql"):
        raise SnapshotFailed(f"Data snapshots support SQLite and PostgreSQL, not {vendor}.")
    return vendor


def _require_autocommit(connection) -> None:
    # The backup API reads and writes through this connection: inside a
    # transaction it would copy (or clobber) uncommitted work.
    if connection.in_atomic_block:
        raise SnapshotFailed("Data snapshots and restores cannot run inside a database transaction.")


def _live_sqlite_files() -> tuple[set[str], set[tuple[int, int]]]:
    """The live SQLite database and its sidecars: excluded from the file copy,
    because the database is copied through the backup API instead."""
    if _connection().vendor != "sqlite":
        return set(), set()
    name = str(_connection().settings_dict["NAME"])
    if not name or name == ":memory:" or name.startswith("file:"):
        return set(), set()
    base = os.path.abspath(name)
    paths = {base + suffix for suffix in ("", "-wal", "-shm", "-journal")}
    inodes = set()
    for path in paths:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        inodes.add((st.st_dev, st.st_ino))
    return paths, inodes


def _require_tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise SnapshotToolMissing(
            f"{name} is not installed (not found on PATH). Data snapshots on PostgreSQL need the "
            f"PostgreSQL client tools matching the server version, e.g. `apt install postgresql-client`."
        )
    return found


def _pg_env(settings_dict: dict[str, Any]) -> dict[str, str]:
    """Connection parameters for pg_dump/pg_restore/psql, passed through the
    environment so the password never appears on a command line."""
    return libpq_environment(settings_dict)


def _run_tool(args: list[str], *, env: dict[str, str], what: str) -> subprocess.CompletedProcess:
    result = subprocess.run(args, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SnapshotFailed(f"{what} failed (exit {result.returncode}): {result.stderr.strip()[-2000:]}")
    return result


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _open_sqlite_copy(path: Path) -> sqlite3.Connection:
    """A raw connection to a snapshot copy, with the SQL functions Django's
    backend registers: the schema's CHECK constraints call REGEXP."""
    conn = sqlite3.connect(path)
    register_django_sqlite_functions(conn)
    return conn


def _sqlite_row_counts(conn: sqlite3.Connection) -> dict[str, int]:
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    return {table: conn.execute(f"SELECT count(*) FROM {_quote(table)}").fetchone()[0] for table in tables}


# --- taking a snapshot ------------------------------------------------------


def _dump_sqlite(target_path: Path) -> dict[str, int]:
    connection = _connection()
    _require_autocommit(connection)
    connection.ensure_connection()
    target = sqlite3.connect(target_path)
    try:
        # pages=-1 copies every page in one step, inside one read transaction
        # of the source: a consistent state even while other processes write.
        connection.connection.backup(target, pages=-1)
        # The copied header says WAL; a snapshot should be one self-contained file.
        target.execute("PRAGMA journal_mode=DELETE")
        tables = _sqlite_row_counts(target)
    finally:
        target.close()
    return tables


def _dump_postgres(target_path: Path) -> dict[str, int]:
    pg_dump = _require_tool("pg_dump")
    # A connection of our own, so the exported snapshot's transaction is not
    # tangled with whatever the default connection is doing.
    private = _connection().copy()
    try:
        private.ensure_connection()
        with private.connection.cursor() as cursor:
            cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            cursor.execute("SELECT pg_export_snapshot()")
            exported = cursor.fetchone()[0]
            cursor.execute("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema() ORDER BY 1")
            tables = {}
            for (table,) in cursor.fetchall():
                cursor.execute(f"SELECT count(*) FROM {_quote(table)}")
                tables[table] = cursor.fetchone()[0]
            # pg_dump reads the very snapshot the counts came from.
            _run_tool(
                [pg_dump, "--format=custom", f"--snapshot={exported}", f"--file={target_path}"],
                env=_pg_env(private.settings_dict),
                what="pg_dump",
            )
            cursor.execute("COMMIT")
    finally:
        private.close()
    return tables


def _scan_data_files(data_dir: Path) -> dict[str, os.stat_result]:
    """Regular files of the data dir that belong in a snapshot, by posix relative path."""
    live_paths, live_inodes = _live_sqlite_files()
    found: dict[str, os.stat_result] = {}
    for root, dirs, files in os.walk(data_dir):
        if Path(root) == data_dir:
            dirs[:] = [d for d in dirs if d not in store.EXCLUDED_TOP_LEVEL]
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            if os.path.abspath(path) in live_paths:
                continue
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            # Symlinks, sockets and fifos are not data; only regular files are kept.
            if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) in live_inodes:
                continue
            found[path.relative_to(data_dir).as_posix()] = st
    return found


def _link_from_previous(previous_file: Path, target: Path, size: int) -> bool:
    try:
        if os.lstat(previous_file).st_size != size:
            return False
        os.link(previous_file, target)
    except OSError:
        # Missing, or a filesystem without hard links / at its link limit: copy instead.
        return False
    return True


def _snapshot_files(
    data_dir: Path, files_dir: Path, previous: tuple[str, dict[str, Any]] | None
) -> tuple[dict[str, dict[str, Any]], int, int]:
    previous_dir = store.snapshots_root() / previous[0] / store.FILES_DIRNAME if previous else None
    previous_files = previous[1].get("files", {}) if previous else {}
    entries: dict[str, dict[str, Any]] = {}
    linked = copied_bytes = 0
    for rel, st in _scan_data_files(data_dir).items():
        target = files_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        prior = previous_files.get(rel)
        if (
            previous_dir is not None
            and isinstance(prior, dict)
            and prior.get("size") == st.st_size
            and prior.get("mtime_ns") == st.st_mtime_ns
            and _link_from_previous(previous_dir / rel, target, st.st_size)
        ):
            entries[rel] = {**prior, "linked": True}
            linked += 1
            continue
        try:
            digest, size = store.copy_hashing(data_dir / rel, target)
        except FileNotFoundError:
            continue  # removed while we were scanning
        # The pre-copy mtime is recorded: if the file changed during the copy,
        # the next snapshot sees a different mtime and copies it again.
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.chmod(target, stat.S_IMODE(st.st_mode))
        entries[rel] = {
            "size": size,
            "mtime_ns": st.st_mtime_ns,
            "mode": stat.S_IMODE(st.st_mode),
            "sha256": digest,
            "linked": False,
        }
        copied_bytes += size
    return entries, linked, copied_bytes


def _newest_complete(root: Path) -> tuple[str, dict[str, Any]] | None:
    for name in reversed(store.snapshot_names(root)):
        try:
            return name, store.read_manifest(root / name)
        except store.ManifestError:
            continue
    return None


def _changes(
    previous: tuple[str, dict[str, Any]] | None, files: dict[str, dict[str, Any]], tables: dict[str, int]
) -> dict[str, Any]:
    before_files = previous[1].get("files", {}) if previous else {}
    before_tables = previous[1].get("database", {}).get("tables", {}) if previous else {}
    added = sorted(set(files) - set(before_files))
    removed = sorted(set(before_files) - set(files))
    changed = sorted(
        rel
        for rel in set(files) & set(before_files)
        if (files[rel]["size"], files[rel]["sha256"])
        != (before_files[rel].get("size"), before_files[rel].get("sha256"))
    )
    rows = {table: [before_tables.get(table), tables.get(table)] for table in sorted(set(tables) | set(before_tables))}
    return {
        "previous": previous[0] if previous else None,
        "files": {
            "added": added,
            "changed": changed,
            "removed": removed,
            "unchanged": len(files) - len(added) - len(changed),
        },
        "rows": rows,
    }


def _delta(before: int | None, after: int | None) -> int:
    return (after or 0) - (before or 0)


def summarize_changes(changes: dict[str, Any]) -> str:
    """One line for listings: file counts and the biggest row deltas."""
    files = changes.get("files", {})
    parts = [f"files +{len(files.get('added', []))} ~{len(files.get('changed', []))} -{len(files.get('removed', []))}"]
    deltas = [
        (table, _delta(before, after))
        for table, (before, after) in changes.get("rows", {}).items()
        if _delta(before, after)
    ]
    deltas.sort(key=lambda item: (-abs(item[1]), item[0]))
    if deltas:
        shown = ", ".join(f"{table} {delta:+d}" for table, delta in deltas[:3])
        more = f" and {len(deltas) - 3} more tables" if len(deltas) > 3 else ""
        parts.append(f"rows {shown}{more}")
    else:
        parts.append("no row count changes")
    if changes.get("previous") is None:
        parts.insert(0, "first snapshot")
    return "; ".join(parts)


def _changes_text(name: str, manifest: dict[str, Any]) -> str:
    changes = manifest["changes"]
    files = changes["files"]
    entries = manifest["files"]
    lines = [
        f"data snapshot {name} ({manifest['reason']}{': ' + manifest['note'] if manifest['note'] else ''})",
        f"taken {manifest['created']} on {manifest['engine']}",
        f"previous snapshot: {changes['previous'] or 'none (everything is listed as added)'}",
        "",
        f"files: {len(files['added'])} added, {len(files['changed'])} changed, "
        f"{len(files['removed'])} removed, {files['unchanged']} unchanged",
    ]
    lines += [f"  + {rel} ({store.human_bytes(entries[rel]['size'])})" for rel in files["added"]]
    lines += [f"  ~ {rel} ({store.human_bytes(entries[rel]['size'])})" for rel in files["changed"]]
    lines += [f"  - {rel}" for rel in files["removed"]]
    lines += ["", "rows per table (delta since the previous snapshot):"]
    width = max((len(table) for table in changes["rows"]), default=0)
    for table, (before, after) in changes["rows"].items():
        if after is None:
            lines.append(f"  {table:<{width}}  (table removed; had {before})")
        elif before is None:
            lines.append(f"  {table:<{width}}  {after:>10}  (new)")
        else:
            lines.append(f"  {table:<{width}}  {after:>10}  ({after - before:+d})")
    return "\n".join(lines) + "\n"


def _write_synced(path: Path, text: str) -> None:
    with open(path, "x") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rotate(root: Path, keep: int, protect: set[str]) -> tuple[str, ...]:
    names = store.snapshot_names(root)
    excess = names[: max(len(names) - keep, 0)]
    removed = []
    for name in excess:
        if name in protect:
            continue
        store.remove_tree(root / name)
        removed.append(name)
    return tuple(removed)


def _take_snapshot_locked(*, reason: str, note: str, protect: frozenset[str] = frozenset()) -> SnapshotResult:
    keep = store.snapshots_keep()
    if keep == 0:
        raise SnapshotsDisabled("Data snapshots are disabled (CHARTR_SNAPSHOTS_KEEP=0); nothing was done.")
    engine = _engine()
    data_dir = store.data_dir()
    root = store.snapshots_root(create=True)
    previous = _newest_complete(root)
    name = store.next_snapshot_name(root)
    created = dt.datetime.now(dt.UTC)
    work = root / f".tmp-{name}-{secrets.token_hex(4)}"
    work.mkdir(mode=0o700)
    try:
        (work / store.DB_DIRNAME).mkdir()
        if engine == "sqlite":
            db_rel = f"{store.DB_DIRNAME}/{store.SQLITE_DUMP_NAME}"
            tables = _dump_sqlite(work / db_rel)
        else:
            db_rel = f"{store.DB_DIRNAME}/{store.POSTGRES_DUMP_NAME}"
            tables = _dump_postgres(work / db_rel)
        db_path = work / db_rel
        with open(db_path, "rb+") as handle:
            os.fsync(handle.fileno())
        files, linked, copied_bytes = _snapshot_files(data_dir, work / store.FILES_DIRNAME, previous)
        changes = _changes(previous, files, tables)
        manifest = {
            "format": store.MANIFEST_FORMAT,
            "name": name,
            "created": created.isoformat(timespec="milliseconds"),
            "reason": reason,
            "note": note,
            "engine": engine,
            "database": {
                "file": db_rel,
                "size": db_path.stat().st_size,
                "sha256": store.hash_file(db_path),
                "tables": tables,
            },
            "files": files,
            "changes": changes,
            "summary": summarize_changes(changes),
        }
        _write_synced(work / store.CHANGES_NAME, _changes_text(name, manifest))
        # The manifest is written last: a directory without one is never a snapshot.
        _write_synced(work / store.MANIFEST_NAME, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        _fsync_dir(work)
        os.rename(work, root / name)
        _fsync_dir(root)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise SnapshotFailed(f"Could not write data snapshot {name} into {root}: {exc}") from exc
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    rotated = _rotate(root, keep, set(protect) | {name})
    return SnapshotResult(
        name=name,
        path=root / name,
        engine=engine,
        previous=previous[0] if previous else None,
        tables=tables,
        files=len(files),
        linked_files=linked,
        copied_bytes=copied_bytes,
        summary=manifest["summary"],
        rotated=rotated,
    )


def take_snapshot(*, wait: bool = True, reason: str = "manual", note: str = "") -> SnapshotResult:
    """Snapshot the database and the data dir's files into ``<data dir>/snapshots/<name>/``,
    then drop the oldest snapshots beyond CHARTR_SNAPSHOTS_KEEP.

    Raises SnapshotsDisabled when CHARTR_SNAPSHOTS_KEEP is 0, StoreBusy when
    ``wait`` is false and another snapshot or restore is running.
    """
    if store.snapshots_keep() == 0:
        raise SnapshotsDisabled("Data snapshots are disabled (CHARTR_SNAPSHOTS_KEEP=0); nothing was done.")
    with store_lock(wait=wait):
        store.remove_leftovers(store.snapshots_root(create=True))
        return _take_snapshot_locked(reason=reason, note=note)


# --- verifying and restoring ---------------------------------------------


@dataclass
class _Verified:
    name: str
    path: Path
    manifest: dict[str, Any]
    engine: str
    #: SQLite: a private working copy, already checked and with new epochs.
    #: PostgreSQL: the dump inside the snapshot.
    database: Path
    agents_with_new_epoch: int = 0


def _corrupt(name: str, reason: str) -> SnapshotCorrupt:
    return SnapshotCorrupt(
        f"Data snapshot {name} is missing parts or corrupt, so it was not restored and nothing was changed: {reason}"
    )


def _check_file(path: Path, size: Any, digest: Any) -> str | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{path} is missing"
    if not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if st.st_size != size:
        return f"{path} has {st.st_size} bytes, the manifest says {size}"
    if store.hash_file(path) != digest:
        return f"{path} does not match its sha256 in the manifest"
    return None


def _rotate_epochs_in_copy(conn: sqlite3.Connection) -> int:
    table = AgentSnapshot._meta.db_table
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone():
        return 0
    conn.create_function("chartr_new_timeline_epoch", 0, new_timeline_epoch)
    count = conn.execute(f"UPDATE {_quote(table)} SET timeline_epoch = chartr_new_timeline_epoch()").rowcount
    conn.commit()
    return count


def _verify(name: str, root: Path, work: Path) -> _Verified:
    path = root / name
    if not store.is_snapshot_name(name) or not path.is_dir():
        known = store.snapshot_names(root)
        hint = f" Known snapshots: {', '.join(known[-5:])}." if known else " There are no data snapshots yet."
        raise SnapshotNotFound(f"There is no data snapshot named {name!r} in {root}.{hint}")
    try:
        manifest = store.read_manifest(path)
        database = manifest["database"]
        db_path = path / store.safe_relpath(str(database.get("file", "")))
        file_paths = {rel: path / store.FILES_DIRNAME / store.safe_relpath(rel) for rel in manifest["files"]}
        # Everything _stage_files reads later is checked now, before anything changes.
        if not all(
            isinstance(entry, dict)
            and isinstance(entry.get("mtime_ns"), int)
            and isinstance(entry.get("mode", 0o600), int)
            for entry in manifest["files"].values()
        ):
            raise store.ManifestError(f"{path / store.MANIFEST_NAME} has a malformed file entry")
    except store.ManifestError as exc:
        raise _corrupt(name, str(exc)) from None
    engine = _engine()
    if manifest["engine"] != engine:
        raise EngineMismatch(
            f"Data snapshot {name} holds a {manifest['engine']} database but this server runs on {engine}; "
            "nothing was changed."
        )
    problem = _check_file(db_path, database.get("size"), database.get("sha256"))
    for rel, file_path in file_paths.items():
        if problem:
            break
        entry = manifest["files"][rel]
        problem = _check_file(file_path, entry.get("size"), entry.get("sha256"))
    if problem:
        raise _corrupt(name, problem)
    expected_tables = database.get("tables") or {}

    if engine == "postgresql":
        listing = subprocess.run([_require_tool("pg_restore"), "--list", str(db_path)], capture_output=True, text=True)
        if listing.returncode != 0:
            raise _corrupt(name, f"pg_restore --list {db_path} failed: {listing.stderr.strip()[-500:]}")
        data_entries = set()
        for line in listing.stdout.splitlines():
            # "3345; 0 16390 TABLE DATA public timeline_timelinerow postgres"
            tokens = line.split()
            if line.startswith(";") or " TABLE DATA " not in line:
                continue
            at = tokens.index("DATA")
            if len(tokens) > at + 2:
                data_entries.add(tokens[at + 2])
        missing = sorted(set(expected_tables) - data_entries)
        if missing:
            raise _corrupt(name, f"the dump has no data for tables {', '.join(missing)}")
        return _Verified(name=name, path=path, manifest=manifest, engine=engine, database=db_path)

    working = work / store.SQLITE_DUMP_NAME
    shutil.copyfile(db_path, working)
    if store.hash_file(working) != database.get("sha256"):
        raise _corrupt(name, f"{db_path} changed while it was being read")
    try:
        conn = _open_sqlite_copy(working)
        try:
            verdict = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if verdict != ["ok"]:
                raise _corrupt(name, f"{db_path} fails PRAGMA integrity_check: {'; '.join(verdict[:5])}")
            counts = _sqlite_row_counts(conn)
            if counts != expected_tables:
                differing = sorted(
                    t for t in set(counts) | set(expected_tables) if counts.get(t) != expected_tables.get(t)
                )
                detail = ", ".join(f"{t} has {counts.get(t)}, manifest {expected_tables.get(t)}" for t in differing[:5])
                raise _corrupt(name, f"row counts in {db_path} do not match the manifest: {detail}")
            agents = _rotate_epochs_in_copy(conn)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise _corrupt(name, f"{db_path} is not a readable SQLite database: {exc}") from None
    return _Verified(
        name=name, path=path, manifest=manifest, engine=engine, database=working, agents_with_new_epoch=agents
    )


def _restore_sqlite(working_copy: Path) -> None:
    connection = _connection()
    _require_autocommit(connection)
    connection.ensure_connection()
    source = sqlite3.connect(working_copy)
    try:
        # The backup API in the other direction: all pages are written under
        # the live database's write lock and committed at once, so readers in
        # other processes see the state before or after, never a mix.
        source.backup(connection.connection, pages=-1)
    finally:
        source.close()


#: Appended to psql's input when pg_restore fails part-way. It ends a COPY block
#: that may have been cut off and then fails for certain, so psql rolls the
#: whole transaction back instead of committing a truncated script.
_ABORT_RESTORE_SQL = (
    "\n\\.\nDO $$ BEGIN RAISE EXCEPTION 'pg_restore failed part-way; rolling the restore back'; END $$;\n"
)


def _tables_parents_first() -> list[str]:
    """The live database's tables, every table after the tables it references.

    The restore locks them all, in this order, before dropping anything:
    writers lock parents before children (an append locks the agent row, then
    inserts timeline rows), so taking the locks in the same order makes the
    restore wait for them instead of deadlocking with them.
    """
    from django.apps import apps

    existing = set(_connection().introspection.table_names())
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


#: PostgreSQL may still pick the restore as a deadlock victim against a writer
#: that takes its locks in an unusual order; the restore rolls back whole, so
#: trying again is safe.
RESTORE_ATTEMPTS = 3


def _restore_postgres(dump: Path) -> int:
    for attempt in range(1, RESTORE_ATTEMPTS + 1):
        try:
            return _restore_postgres_once(dump)
        except SnapshotFailed as exc:
            if "deadlock detected" not in exc.message or attempt == RESTORE_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _restore_postgres_once(dump: Path) -> int:
    pg_restore = _require_tool("pg_restore")
    psql = _require_tool("psql")
    connection = _connection()
    env = _pg_env(connection.settings_dict)
    table = _quote(AgentSnapshot._meta.db_table)
    # pg_restore's script and the epoch rotation run in ONE transaction (psql
    # --single-transaction rather than pg_restore's own), so no client ever
    # sees restored rows under an old epoch. gen_random_uuid() is core since
    # PostgreSQL 13.
    rotate = f"RESET search_path;\nUPDATE {table} SET timeline_epoch = substr(md5(gen_random_uuid()::text), 1, 16);\n"
    tables = _tables_parents_first()
    lock_all = f"LOCK TABLE {', '.join(_quote(t) for t in tables)} IN ACCESS EXCLUSIVE MODE;\n" if tables else ""
    with tempfile.TemporaryFile() as producer_errors, tempfile.TemporaryFile() as consumer_errors:
        producer = subprocess.Popen(
            [pg_restore, "--clean", "--if-exists", "--no-owner", "--no-privileges", "--file=-", str(dump)],
            stdout=subprocess.PIPE,
            stderr=producer_errors,
            env=env,
        )
        consumer = subprocess.Popen(
            [psql, "--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", "--single-transaction", "--file=-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=consumer_errors,
            env=env,
        )
        try:
            try:
                consumer.stdin.write(lock_all.encode())
                shutil.copyfileobj(producer.stdout, consumer.stdin, 1 << 16)
                producer.wait()
                consumer.stdin.write((rotate if producer.returncode == 0 else _ABORT_RESTORE_SQL).encode())
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
        producer_errors.seek(0)
        consumer_errors.seek(0)
        messages = (
            producer_errors.read().decode(errors="replace").strip()
            + "\n"
            + consumer_errors.read().decode(errors="replace").strip()
        ).strip()
    if producer.returncode != 0 or consumer.returncode != 0:
        raise SnapshotFailed(
            "The PostgreSQL restore failed and was rolled back, so the database is unchanged: " + messages[-2000:]
        )
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        return cursor.fetchone()[0]


def _stage_files(snapshot: _Verified, data_dir: Path) -> list[tuple[Path, Path]]:
    """Copy the snapshot's files next to their targets, before anything changes.

    Copying is what can fail (a full disk); putting the copies in place later
    is a rename each. Files are copied, never linked, so later writes to the
    live file can never reach into a snapshot."""
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, entry in sorted(snapshot.manifest["files"].items()):
            source = snapshot.path / store.FILES_DIRNAME / rel
            target = data_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.parent / f".{target.name}.restore-{secrets.token_hex(4)}"
            staged.append((temp, target))
            shutil.copyfile(source, temp)
            os.chmod(temp, int(entry.get("mode", 0o600)))
            os.utime(temp, ns=(entry["mtime_ns"], entry["mtime_ns"]))
    except BaseException:
        _discard_staged(staged)
        raise
    return staged


def _discard_staged(staged: list[tuple[Path, Path]]) -> None:
    for temp, _ in staged:
        temp.unlink(missing_ok=True)


def _put_staged_files(staged: list[tuple[Path, Path]], data_dir: Path) -> tuple[int, int]:
    """Move the staged copies into place and remove files the snapshot did not have."""
    for temp, target in staged:
        os.replace(temp, target)
    wanted = {target for _, target in staged}
    removed = 0
    for rel in sorted(_scan_data_files(data_dir)):
        if data_dir / rel not in wanted:
            (data_dir / rel).unlink(missing_ok=True)
            removed += 1
    return len(staged), removed


def _all_agent_ids() -> list[str]:
    with _connection().cursor() as cursor:
        cursor.execute(f"SELECT agent_id FROM {_quote(AgentSnapshot._meta.db_table)}")
        return [row[0] for row in cursor.fetchall()]


def restore_snapshot(*, name: str | None = None, wait: bool = True, dry_run: bool = False) -> RestoreResult:
    """Replace the database and data files with snapshot ``name`` (default: the newest).

    The snapshot is checked completely first (manifest, hashes, SQLite
    integrity and row counts, or ``pg_restore --list``); a bad one raises
    SnapshotCorrupt and nothing changes. Then the current state is snapshotted
    (its name is in the result, and restoring it undoes this restore), the
    database is replaced atomically, and every agent's timeline_epoch gets a
    new random value in the same step, so stale cursors get ``reset``.
    ``dry_run`` does all the checks and stops there.
    """
    if not dry_run and store.snapshots_keep() == 0:
        raise SnapshotsDisabled(
            "Data snapshots are disabled (CHARTR_SNAPSHOTS_KEEP=0), so this restore could not be undone; "
            "set CHARTR_SNAPSHOTS_KEEP to 1 or more to restore. Nothing was changed."
        )
    with store_lock(wait=wait):
        root = store.snapshots_root(create=True)
        store.remove_leftovers(root)
        if name is None:
            names = store.snapshot_names(root)
            if not names:
                raise SnapshotNotFound(f"There are no data snapshots in {root}; nothing was changed.")
            name = names[-1]
        work = root / f".restore-{secrets.token_hex(4)}"
        work.mkdir(mode=0o700)
        try:
            verified = _verify(name, root, work)
            if dry_run:
                return RestoreResult(
                    restored=name,
                    undo_snapshot=None,
                    agents_with_new_epoch=0,
                    files_restored=len(verified.manifest["files"]),
                    files_removed=0,
                    dry_run=True,
                )
            undo = _take_snapshot_locked(
                reason="pre-restore", note=f"state before restoring {name}", protect=frozenset({name})
            )
            try:
                staged = _stage_files(verified, store.data_dir())
            except OSError as exc:
                raise SnapshotFailed(
                    f"Could not copy the data files of {name} back ({exc}); the database and data files "
                    f"were not changed (the pre-restore snapshot {undo.name} was taken)."
                ) from exc
            try:
                if verified.engine == "sqlite":
                    _restore_sqlite(verified.database)
                    agents = verified.agents_with_new_epoch
                else:
                    agents = _restore_postgres(verified.database)
                files_restored, files_removed = _put_staged_files(staged, store.data_dir())
            except SnapshotFailed as exc:
                _discard_staged(staged)
                raise SnapshotFailed(f"{exc.message} The pre-restore snapshot is {undo.name}.") from exc
            except Exception as exc:
                _discard_staged(staged)
                raise SnapshotFailed(
                    f"Restoring {name} failed part-way ({exc}); restore {undo.name} to return to the state before."
                ) from exc
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if agents:
        agents_changed.send(sender=AgentSnapshot, agent_ids=_all_agent_ids(), reason="restore")
    return RestoreResult(
        restored=name,
        undo_snapshot=undo.name,
        agents_with_new_epoch=agents,
        files_restored=files_restored,
        files_removed=files_removed,
        undo_rotated=undo.rotated,
    )
