"""One representation: a Claude Code home imported by ``manage.py import_claude_code`` loads through
``ChartrSessionStore`` under the SDK's own keys, and a session the SDK imported itself
(``import_session_to_store``) is one the command finds already there, against a live chartr."""

from __future__ import annotations

import asyncio

from chartr_client import AsyncClient
from chartr_client.claude import ChartrSessionStore
from claude_agent_sdk import import_session_to_store

from tests.claude_code import home as claude_home
from tests.clients.python.conftest import PATIENT

MAIN = {"project_key": claude_home.PROJECT_KEY, "session_id": claude_home.SESSION_ID}
OTHER = {"project_key": claude_home.PROJECT_KEY, "session_id": claude_home.OTHER_SESSION_ID}
SUBPATH = f"subagents/agent-{claude_home.SUBAGENT_ID}"


def test_the_sdks_import_and_the_command_write_one_representation(live, tmp_path, monkeypatch):
    projects = claude_home.write_home(tmp_path / "claude")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))

    async def sdk_import_then_load():
        async with AsyncClient(live.base_url, live.token, retry=PATIENT) as client:
            store = ChartrSessionStore(client=client)
            await import_session_to_store(claude_home.SESSION_ID, store)
            output = live.server.manage("import_claude_code", str(projects))
            return output, (
                await store.load(MAIN),
                await store.list_subkeys(MAIN),
                await store.load({**MAIN, "subpath": SUBPATH}),
                await store.load(OTHER),
                [session["session_id"] for session in await store.list_sessions(claude_home.PROJECT_KEY)],
            )

    output, (main, subkeys, sub, other, listed) = asyncio.run(sdk_import_then_load())
    # the SDK's session and its subagent were there already; only the other session is new
    assert "3: 1 new, 0 topped up, 2 unchanged" in output, output
    assert main == claude_home.main_session()
    assert subkeys == [SUBPATH]
    assert sub == [*claude_home.subagent_session(), {**claude_home.SUBAGENT_META, "type": "agent_metadata"}]
    assert other == claude_home.other_session()
    assert sorted(listed) == sorted([claude_home.SESSION_ID, claude_home.OTHER_SESSION_ID])
    live.server.manage("export_claude_code", "--out", str(tmp_path / "out"))
    for name in (f"{claude_home.SESSION_ID}.jsonl", f"{claude_home.SESSION_ID}/{SUBPATH}.jsonl"):
        exported = tmp_path / "out" / "projects" / claude_home.PROJECT_KEY / name
        assert claude_home.read_transcript(exported) == claude_home.read_transcript(
            projects / claude_home.PROJECT_KEY / name
        )
