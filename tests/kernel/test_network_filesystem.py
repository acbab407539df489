"""SQLite on a network filesystem is refused: /readyz says so, and the entrypoint will not start on it."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.utils import load_backend

from kernel.db_backends.sqlite3 import filesystems
from kernel.db_backends.sqlite3.filesystems import filesystem_type, network_filesystem_of

MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
40 27 0:50 / /srv rw,relatime - nfs4 fileserver:/export rw,vers=4.2
41 40 8:2 / /srv/local rw,relatime - xfs /dev/sdb1 rw
42 27 0:51 / /mnt/my\\040share rw,relatime - cifs //nas/share rw
43 27 0:52 / /home/me/remote rw,nosuid - fuse.sshfs me@host:/data rw
"""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/srv/chartr", "nfs4"),
        ("/srv/local/chartr", "xfs"),  # a local disk mounted inside the NFS share
        ("/srvx/chartr", "ext4"),  # a name that only starts like a mount point
        ("/mnt/my share/data", "cifs"),
        ("/home/me/remote/chartr", "fuse.sshfs"),
        ("/var/lib/chartr", "ext4"),
    ],
)
def test_the_longest_mount_point_holding_the_path_gives_its_type(path, expected):
    assert filesystem_type(path, MOUNTINFO) == expected


def test_without_mountinfo_nothing_is_known():
    assert filesystem_type("/srv/chartr", None) is None


@pytest.fixture
def mounts(monkeypatch):
    monkeypatch.setattr(filesystems, "read_mountinfo", lambda: MOUNTINFO)


def test_only_a_file_on_a_network_filesystem_is_flagged(mounts):
    assert network_filesystem_of("/srv/chartr/chartr.sqlite3") == "nfs4"
    assert network_filesystem_of("/home/me/remote/chartr.sqlite3") == "fuse.sshfs"
    assert network_filesystem_of("/srv/local/chartr.sqlite3") is None
    assert network_filesystem_of(":memory:") is None
    assert network_filesystem_of("file:memorydb?mode=memory&cache=shared") is None


def test_the_sqlite_backend_reports_a_database_on_nfs(mounts):
    wrapper_class = load_backend("kernel.db_backends.sqlite3").DatabaseWrapper
    on_nfs = wrapper_class({**connection.settings_dict, "NAME": "/srv/chartr/chartr.sqlite3"}, alias="probe-nfs")
    local = wrapper_class({**connection.settings_dict, "NAME": "/var/lib/chartr.sqlite3"}, alias="probe-local")
    assert on_nfs.storage_problem() == "sqlite_on_network_filesystem"
    assert local.storage_problem() is None


@pytest.fixture
def database_on_nfs(monkeypatch):
    """This run's connection, reporting what the SQLite backend reports for a file on NFS."""
    monkeypatch.setattr(connection, "storage_problem", lambda: "sqlite_on_network_filesystem", raising=False)


@pytest.mark.django_db
def test_readyz_refuses_a_database_on_a_network_filesystem(client, database_on_nfs):
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "reason": "sqlite_on_network_filesystem"}


@pytest.mark.django_db
def test_the_server_start_refuses_it_before_migrating(database_on_nfs, monkeypatch):
    migrated = []
    monkeypatch.setattr("chartr.management.commands.prepare_server.call_command", lambda *a, **k: migrated.append(a))
    with pytest.raises(CommandError, match="sqlite_on_network_filesystem"):
        call_command("prepare_server", "--no-collectstatic")
    assert migrated == []
