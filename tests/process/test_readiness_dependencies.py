"""A real server whose configured Redis is down starts, but /readyz answers 503 naming Redis."""

from __future__ import annotations

import pytest

from tests.process.live_support import ServerProcess
from tests.support.processes import LISTENING, REDIS_URL, redis_available, wait_for

pytestmark = [pytest.mark.process, pytest.mark.timeout(120)]


def launch(tmp_path, database, redis_url: str) -> ServerProcess:
    server = ServerProcess(
        tmp_path, database=database, env={"CHARTR_LIVE_TRANSPORT": "redis", "CHARTR_REDIS_URL": redis_url}
    )
    server.launch()
    server.port = int(
        wait_for(lambda: LISTENING.search(server.process.output), timeout=45, what="gunicorn to listen")[1]
    )
    return server


def test_readyz_is_503_naming_redis_while_the_configured_redis_is_down(tmp_path, scratch_db):
    server = launch(tmp_path, scratch_db(migrated=True), "redis://127.0.0.1:1/0")
    try:
        response = wait_for(
            lambda: server.get("/healthz").status_code == 200 and server.get("/readyz"), timeout=30, what="probes"
        )
        assert response.status_code == 503
        assert response.json() == {"status": "unavailable", "reason": "redis_unreachable"}
    finally:
        server.stop()


def test_readyz_is_200_with_the_configured_redis_up(tmp_path, scratch_db):
    if not redis_available():
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    server = launch(tmp_path, scratch_db(migrated=True), REDIS_URL)
    try:
        wait_for(lambda: server.get("/readyz").status_code == 200, timeout=30, what="/readyz to answer 200")
    finally:
        server.stop()
