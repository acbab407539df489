"""The client's tests run against a live chartr: gunicorn with the uvicorn worker, as deployed.

The server listens on a port fixed for the test (so a restart comes back at
the same address, as a real one does); ``proxy`` puts a connection-breaking
proxy in front of it. Everything here is marked ``process``.
"""

from __future__ import annotations

import socket
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from chartr_client import Client, ReconnectPolicy, RetryPolicy

from tests.clients.python.proxy import Proxy
from tests.process.conftest import migrated_templates, scratch_db  # noqa: F401 (the process tests' fixtures)
from tests.process.live_support import ServerProcess
from tests.support.processes import GUNICORN

HERE = Path(__file__).resolve().parent

#: Patient enough for a server restart on a loaded machine, quick between attempts.
PATIENT = RetryPolicy(max_attempts=60, initial_backoff=0.1, max_backoff=1.0)
RECONNECT = ReconnectPolicy(initial_delay=0.1, max_delay=1.0, give_up_after=90)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.process)
            item.add_marker(pytest.mark.timeout(240))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Live:
    server: ServerProcess
    token: str

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def client(self, *, base_url: str | None = None, token: str | None = None, **kwargs) -> Client:
        kwargs.setdefault("retry", PATIENT)
        kwargs.setdefault("reconnect", RECONNECT)
        return Client(base_url or self.base_url, token or self.token, **kwargs)

    def token_for(self, *args: str) -> str:
        return self.server.manage("create_api_token", *args).split()[-1]


@pytest.fixture
def live(tmp_path, scratch_db):  # noqa: F811
    database = scratch_db(migrated=True)
    server = ServerProcess(tmp_path, database=database)
    bind = GUNICORN.index("-b") + 1
    server.command = [sys.executable, *GUNICORN[:bind], f"127.0.0.1:{free_port()}", *GUNICORN[bind + 1 :]]
    token = server.setup([])["token"]
    server.start()
    yield Live(server, token)
    server.stop()


@pytest.fixture
def proxy(live):
    proxy = Proxy(live.server.port)
    yield proxy
    proxy.close()


@pytest.fixture
def client(live):
    with live.client() as client:
        yield client


@pytest.fixture
def workspace(client, tmp_path):
    project = client.create_project(f"/srv/client-test/{tmp_path.name}", "git")
    return client.create_workspace(project.id, project.directory + "/main", "checkout")
