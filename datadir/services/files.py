"""The data dir's own files: scanning them, copying them into a snapshot, and
staging a snapshot's copies back for a restore."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Any

from datadir import store
from datadir.backends.base import DatabaseBackend

#: A snapshot as (name, manifest).
Previous = tuple[str, dict[str, Any]]
#: (staged copy, the file it replaces).
Staged = list[tuple[Path, Path]]


def scan_data_files(data_dir: Path, backend: DatabaseBackend) -> dict[str, os.stat_result]:
    """Regular files of the data dir that belong in a snapshot, by posix relative path."""
    live_paths, live_inodes = backend.live_files()
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


def _copy_file(source: Path, target: Path, st: os.stat_result) -> dict[str, Any]:
    digest, size = store.copy_hashing(source, target)
    # The pre-copy mtime is recorded: if the file changed during the copy,
    # the next snapshot sees a different mtime and copies it again.
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.chmod(target, stat.S_IMODE(st.st_mode))
    return {
        "size": size,
        "mtime_ns": st.st_mtime_ns,
        "mode": stat.S_IMODE(st.st_mode),
        "sha256": digest,
        "linked": False,
    }


def snapshot_files(
    data_dir: Path, files_dir: Path, previous: Previous | None, backend: DatabaseBackend
) -> tuple[dict[str, dict[str, Any]], int, int]:
    """Copy the data files into ``files_dir``, hard-linking those unchanged since
    ``previous``; their manifest entries, how many were linked, bytes copied."""
    previous_dir = store.snapshots_root() / previous[0] / store.FILES_DIRNAME if previous else None
    previous_files = previous[1].get("files", {}) if previous else {}
    entries: dict[str, dict[str, Any]] = {}
    linked = copied_bytes = 0
    for rel, st in scan_data_files(data_dir, backend).items():
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
            entries[rel] = _copy_file(data_dir / rel, target, st)
        except FileNotFoundError:
            continue  # removed while we were scanning
        copied_bytes += entries[rel]["size"]
    return entries, linked, copied_bytes


def stage_files(snapshot_path: Path, manifest: dict[str, Any], data_dir: Path) -> Staged:
    """Copy the snapshot's files next to their targets, before anything changes.

    Copying is what can fail (a full disk); putting the copies in place later
    is a rename each. Files are copied, never linked, so later writes to the
    live file can never reach into a snapshot."""
    staged: Staged = []
    try:
        for rel, entry in sorted(manifest["files"].items()):
            source = snapshot_path / store.FILES_DIRNAME / rel
            target = data_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            temp = target.parent / f".{target.name}.restore-{secrets.token_hex(4)}"
            staged.append((temp, target))
            shutil.copyfile(source, temp)
            os.chmod(temp, int(entry.get("mode", 0o600)))
            os.utime(temp, ns=(entry["mtime_ns"], entry["mtime_ns"]))
    except BaseException:
        discard_staged(staged)
        raise
    return staged


def discard_staged(staged: Staged) -> None:
    for temp, _ in staged:
        temp.unlink(missing_ok=True)


def put_staged_files(staged: Staged, data_dir: Path, backend: DatabaseBackend) -> tuple[int, int]:
    """Move the staged copies into place and remove files the snapshot did not have."""
    for temp, target in staged:
        os.replace(temp, target)
    wanted = {target for _, target in staged}
    removed = 0
    for rel in sorted(scan_data_files(data_dir, backend)):
        if data_dir / rel not in wanted:
            (data_dir / rel).unlink(missing_ok=True)
            removed += 1
    return len(staged), removed
