"""`make serve` stops with its server: a SIGTERM to make, or Ctrl-C at the terminal, leaves no gunicorn behind."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys

import pytest

from tests.conftest import skip_or_fail
from tests.support.processes import LISTENING, REDIS_URL, Process, group_members, isolated_env, wait_for

RUNTIME_STAMP = ".venv/.installed-runtime"


def port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.parametrize("how", ["sigterm-to-make", "ctrl-c"])
def test_stopping_make_serve_stops_gunicorn_and_frees_the_port(tmp_path, scratch_db, how):
    make = shutil.which("make")
    if make is None:
        skip_or_fail("make is not installed")
    database = scratch_db(migrated=True)
    # Two workers need a live transport across them (on SQLite too); nothing here opens a stream, so Redis may be down.
    env = isolated_env(
        tmp_path,
        CHARTR_COLLECTSTATIC="0",
        CHARTR_WORKERS="2",
        CHARTR_LIVE_TRANSPORT="redis",
        CHARTR_REDIS_URL=REDIS_URL,
        **database.env(),
    )
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(name, None)
    # `make serve` as the README runs it, with this interpreter and without (re)installing anything.
    command = [make, "--no-print-directory", "-o", RUNTIME_STAMP, "serve", f"SERVE_PYTHON={sys.executable}"]
    serve = Process(command, env, tmp_path / "serve.log")  # its own session: process group id = make's pid
    try:
        port = int(wait_for(lambda: LISTENING.search(serve.output), timeout=90, what="gunicorn to listen")[1])
        wait_for(lambda: serve.output.count("Booting worker") >= 2, timeout=60, what="both workers")
        members = group_members(serve.pid)
        assert sum("gunicorn" in m for m in members) == 3, members  # the arbiter and two workers
        assert not port_is_free(port)

        if how == "sigterm-to-make":
            os.kill(serve.pid, signal.SIGTERM)  # make alone, as `kill <pid of make>` does
        else:
            os.killpg(serve.pid, signal.SIGINT)  # the whole foreground group, as the terminal does
        serve.popen.wait(timeout=40)
        wait_for(lambda: not group_members(serve.pid), timeout=30, what="every process of the run to exit")
        assert port_is_free(port)
        assert "Shutting down: Master" in serve.output, serve.output
    finally:
        serve.signal_group(signal.SIGKILL)  # whatever is left of the group, even once make is gone
        serve.kill()
