"""Whether a SQLite database sits on a network filesystem, where its locking cannot be trusted.

SQLite serves one machine: its locks are POSIX locks (and, in WAL mode, a
shared-memory index) that NFS, SMB/CIFS, sshfs and the like either do not
implement or do not share between machines, so two hosts writing one file
corrupt it. The check is cheap: the filesystem type of the database's
directory, from the longest matching mount point in ``/proc/self/mountinfo``
(Linux; elsewhere nothing is detected and nothing is refused).
"""

from __future__ import annotations

import os
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")

#: Filesystem types (as mountinfo names them) that reach another machine.
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "gpfs", "ocfs2",
        "fuse.sshfs", "fuse.glusterfs", "fuse.s3fs", "fuse.rclone", "fuse.cephfs", "fuse.juicefs",
    }
)  # fmt: skip


def _unescape(field: str) -> str:
    # mountinfo writes space, tab, newline and backslash in paths as octal escapes (\040 ...).
    for code in ("\\040", "\\011", "\\012", "\\134"):
        field = field.replace(code, chr(int(code[1:], 8)))
    return field


def read_mountinfo() -> str | None:
    try:
        return MOUNTINFO.read_text()
    except OSError:
        return None


def filesystem_type(path: str | os.PathLike, mountinfo: str | None) -> str | None:
    """The type of the filesystem ``path`` is on, or None when ``mountinfo`` does not say."""
    target = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for line in (mountinfo or "").splitlines():
        fields, _, tail = line.partition(" - ")
        parts, tail_parts = fields.split(), tail.split()
        if len(parts) < 5 or not tail_parts:
            continue
        mount_point = _unescape(parts[4])
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        # The longest mount point holding the path wins; of equal ones, the later (it hides the earlier).
        if inside and (best is None or len(mount_point) >= best[0]):
            best = (len(mount_point), tail_parts[0])
    return best[1] if best else None


def network_filesystem_of(database_name: str | os.PathLike) -> str | None:
    """The network filesystem type under a SQLite database file, or None (local, in memory, or unknown)."""
    name = str(database_name or "")
    if not name or name == ":memory:" or name.startswith("file:"):
        return None
    kind = filesystem_type(Path(name).parent, read_mountinfo())
    return kind if kind in NETWORK_FILESYSTEMS else None
