"""The SDK's own readers see the same history in chartr as on disk (a real-shaped Claude Code home).

``import_session_to_store`` replays each session (and its subagents) into
``ChartrSessionStore`` on a live chartr; then ``get_session_messages_from_store``,
``get_subagent_messages_from_store``, ``list_subagents_from_store`` and ``list_sessions_from_store``
answer what their on-disk counterparts answer from the files. A second import doubles nothing the
readers see; the lines without uuid (summary, title, snapshot, the subagents' metadata) are
appended again, as the SDK's protocol says of entries without uuid.
"""

from __future__ import annotations

import asyncio

import claude_agent_sdk as sdk
from chartr_client import AsyncClient
from chartr_client.claude import ChartrSessionStore

from tests.clients.python.conftest import PATIENT
from tests.support.claude_code_home import write_claude_home


def _listing(infos) -> list[tuple]:
    return sorted(
        (i.session_id, i.summary, i.custom_title, i.first_prompt, i.git_branch, i.cwd, i.tag, i.created_at)
        for i in infos
    )


async def _store_view(store: ChartrSessionStore, home) -> dict:
    directory = str(home.cwd)
    view = {"listing": _listing(await sdk.list_sessions_from_store(store, directory=directory))}
    for session_id in home.sessions:
        view[session_id] = await sdk.get_session_messages_from_store(store, session_id, directory=directory)
        agents = sorted(await sdk.list_subagents_from_store(store, session_id, directory=directory))
        view[session_id, "agents"] = agents
        for agent_id in agents:
            view[session_id, agent_id] = await sdk.get_subagent_messages_from_store(
                store, session_id, agent_id, directory=directory
            )
    return view


def _disk_view(home) -> dict:
    directory = str(home.cwd)
    view = {"listing": _listing(sdk.list_sessions(directory=directory))}
    for session_id in home.sessions:
        view[session_id] = sdk.get_session_messages(session_id, directory=directory)
        agents = sorted(sdk.list_subagents(session_id, directory=directory))
        view[session_id, "agents"] = agents
        for agent_id in agents:
            view[session_id, agent_id] = sdk.get_subagent_messages(session_id, agent_id, directory=directory)
    return view


def test_imported_sessions_read_back_as_on_disk_and_a_second_import_doubles_nothing(live, tmp_path, monkeypatch):
    home = write_claude_home(tmp_path / "claude", tmp_path / "work" / "app")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home.config_dir))
    disk = _disk_view(home)
    # The fixture is rich enough to mean something: tool calls, results, subagents and titles.
    main_id = next(iter(home.sessions))
    assert len(disk[main_id]) >= 10 and disk[main_id, "agents"] == ["a1b2c3d4", "e5f6a7b8"]
    assert all(disk[main_id, agent] for agent in disk[main_id, "agents"])
    assert {row[2] for row in disk["listing"]} == {"login test fix", None}

    async def scenario():
        async with AsyncClient(live.base_url, live.token, retry=PATIENT) as client:
            store = ChartrSessionStore(client=client, namespace="imported")
            for session_id in home.sessions:
                await sdk.import_session_to_store(session_id, store, directory=str(home.cwd))
            first = await _store_view(store, home)
            loaded = {
                sid: await store.load({"project_key": home.project_key, "session_id": sid}) for sid in home.sessions
            }
            for session_id in home.sessions:
                await sdk.import_session_to_store(session_id, store, directory=str(home.cwd))
            second = await _store_view(store, home)
            again = {
                sid: await store.load({"project_key": home.project_key, "session_id": sid}) for sid in home.sessions
            }
            return first, loaded, second, again

    first, loaded, second, again = asyncio.run(scenario())
    assert first == disk
    assert second == first
    for session_id, lines in home.sessions.items():
        assert loaded[session_id] == lines
        assert again[session_id] == lines + [line for line in lines if "uuid" not in line]
