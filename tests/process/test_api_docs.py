"""docs/api.md's stream-handover example, run as written against a real server."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import httpx
import pytest

from tests.process.live_support import ServerProcess, append

pytestmark = [pytest.mark.process, pytest.mark.timeout(180)]

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def example_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", API_DOC.read_text(), flags=re.DOTALL)
    (block,) = [block for block in blocks if "def follow(" in block]
    return block


@pytest.fixture
def follow():
    namespace: dict = {}
    exec(compile(example_code(), str(API_DOC), "exec"), namespace)  # noqa: S102 - our own docs
    return namespace["follow"]


@pytest.fixture
def live(tmp_path, scratch_db):
    server = ServerProcess(tmp_path, database=scratch_db(migrated=True))
    token = server.setup(["docs-agent"])["token"]
    server.start()
    with httpx.Client() as client:
        yield server, token, client
    server.stop()


def messages(*texts: str) -> list[dict]:
    return [{"item": {"type": "user_message", "text": text}, "item_id": text} for text in texts]


def test_the_example_catches_up_then_follows_live_rows_once_each(live, follow):
    server, token, client = live
    assert append(client, server, token, "docs-agent", messages("a", "b", "c")).status_code == 201
    result: dict = {}

    def run():
        result["rows"], result["epoch"] = follow(
            server.base_url, token, "docs-agent", until=lambda rows: len(rows) >= 5
        )

    follower = threading.Thread(target=run, daemon=True)
    follower.start()
    assert append(client, server, token, "docs-agent", messages("d", "e")).status_code == 201
    follower.join(timeout=60)
    assert not follower.is_alive()
    assert sorted(result["rows"]) == [1, 2, 3, 4, 5]
    assert [result["rows"][seq]["item"]["text"] for seq in range(1, 6)] == list("abcde")


def test_the_example_drops_a_replaced_history_on_reset(live, follow):
    server, token, client = live
    assert append(client, server, token, "docs-agent", messages("a", "b")).status_code == 201
    kept = {1: {"seq": 1, "item": {"type": "user_message", "text": "old"}}, 9: {"seq": 9}}
    rows, epoch = follow(
        server.base_url,
        token,
        "docs-agent",
        rows=kept,
        epoch="an-epoch-from-another-history",
        until=lambda rows: 9 not in rows,
    )
    assert sorted(rows) == [1, 2] and rows[1]["item"]["text"] == "a"
    assert epoch != "an-epoch-from-another-history"
