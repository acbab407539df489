"""An instance holding one of everything an export carries, built through the services."""

from __future__ import annotations

import datetime as dt

from claude_code.keys import SessionKey
from claude_code.services import append_entries, write_summary
from legacy.models import ImportRun
from legacy.services import carry_over_import_runs
from registry.models import Project, Workspace
from registry.services import archive_project, archive_workspace, create_project, create_workspace
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent, create_agent, record_heartbeat, update_agent
from tests.portability.reads import CLAUDE_CODE_PROJECT, CLAUDE_CODE_SESSIONS
from timeline.rows import ReadRow
from timeline.services import NewTimelineItem, append_timeline_items, bulk_append_timeline_rows
from timeline.writes.pruning import TrimPolicy, trim_timeline
from tokens.services import create_api_token, revoke_api_token

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC)


def _conversation(agent_id: str, turns: int) -> None:
    items = []
    for n in range(turns):
        items += [
            NewTimelineItem(item={"type": "user_message", "text": f"question {n} ✓"}, item_id=f"{agent_id}-u{n}"),
            NewTimelineItem(item={"type": "assistant_message", "text": f"answer {n}, part 1", "messageId": f"m{n}"}),
            NewTimelineItem(item={"type": "assistant_message", "text": " and part 2", "messageId": f"m{n}"}),
            NewTimelineItem(
                item={"type": "tool_call", "callId": f"c{n}", "name": "shell", "status": "completed", "n": 1.5}
            ),
        ]
    append_timeline_items(agent_id=agent_id, items=items)


def _carried_rows(agent_id: str) -> None:
    """Rows with every key a carried-over history has: turns, Paseo's keys, a null and an absent revert
    token, ``extra``, and a hole in the seqs."""

    def row(seq: int, **keys) -> ReadRow:
        values = {
            "item_id": None,
            "turn_id": None,
            "provider_message_id": None,
            "provider_timeline_item_id": None,
            "revert_token_json": None,
            "extra_json": None,
            **keys,
        }
        return ReadRow(
            seq=seq,
            committed_at=T0 + dt.timedelta(seconds=seq),
            item_type="assistant_message",
            item={"type": "assistant_message", "text": f"row {seq}", "nested": {"b": [1, 2], "a": None}},
            **values,
        )

    rows = [
        row(
            5, turn_id="turn-1", provider_message_id="pm-1", provider_timeline_item_id="pt-1", revert_token_json="null"
        ),
        row(6, item_id="carried-6", revert_token_json='{"sha":"abc"}', extra_json='{"paseoKey":[1,{"x":true}]}'),
        row(9, turn_id="turn-2", extra_json="{}"),
    ]
    bulk_append_timeline_rows(agent_id=agent_id, rows=rows, start_seq=5, epoch="paseo-epoch-uuid", keep_seqs=True)


def _claude_code_sessions() -> None:
    """A session with entries, a subagent and a written summary (version 2), and one whose subagent
    alone was appended to: its main key has no mtime yet (4 agents)."""
    talked, sidechain = CLAUDE_CODE_SESSIONS
    key = SessionKey(project_key=CLAUDE_CODE_PROJECT, session_id=talked)
    entries = [
        {"type": "user", "uuid": "u1", "cwd": "/srv/code/app", "message": {"content": "hi ✓"}},
        {"type": "custom-title", "customTitle": "Talk"},
    ]
    append_entries(key, entries)
    write_summary(key, data={"title": "Talk", "turns": 1}, expected_version=0)
    write_summary(key, data={"title": "Talk", "turns": 2, "nested": {"b": [1.5, None]}}, expected_version=1)
    append_entries(SessionKey(CLAUDE_CODE_PROJECT, talked, "subagents/agent-a1"), [{"type": "assistant", "uuid": "a"}])
    append_entries(SessionKey(CLAUDE_CODE_PROJECT, sidechain, "subagents/agent-b2"), [{"type": "user", "uuid": "b"}])


def build_instance() -> str:
    """The instance; returns a raw API token (read-write) that reads it."""
    git = create_project(directory="/srv/code/app", kind=Project.Kind.GIT, git_remote="git@example.com:app.git")
    plain = create_project(directory="/srv/code/notes", kind=Project.Kind.DIRECTORY, display_name="Notes")
    gone = create_project(directory="/srv/code/old", kind=Project.Kind.GIT)
    main = create_workspace(project=git, directory="/srv/code/app", kind=Workspace.Kind.CHECKOUT, branch="main")
    tree = create_workspace(project=git, directory="/srv/code/app-wt", kind=Workspace.Kind.WORKTREE, branch="feat")
    notes = create_workspace(project=plain, directory="/srv/code/notes", kind=Workspace.Kind.DIRECTORY)
    old = create_workspace(project=gone, directory="/srv/code/old", kind=Workspace.Kind.CHECKOUT)
    shelved = create_workspace(project=git, directory="/srv/code/app-shelved", kind=Workspace.Kind.CHECKOUT)

    talker = create_agent(
        workspace=main, agent_id="talker", provider="claude", cwd="/srv/code/app/src", title="Talk", lifecycle="idle"
    )
    _conversation("talker", 3)
    update_agent(
        agent=talker,
        labels={"team": "core"},
        config={"model": "opus"},
        requires_attention=True,
        attention_reason=AgentSnapshot.AttentionReason.PERMISSION,
    )
    record_heartbeat(agent_id="talker")
    create_agent(workspace=tree, agent_id="trimmed", provider="codex", lifecycle="idle")
    _conversation("trimmed", 4)
    trim_timeline(agent_id="trimmed", policy=TrimPolicy(keep=5))
    create_agent(workspace=tree, agent_id="emptied:1", provider="codex", lifecycle="closed")
    _conversation("emptied:1", 2)
    trim_timeline(agent_id="emptied:1", policy=TrimPolicy(keep=0))
    create_agent(workspace=notes, agent_id="carried", provider="claude", runtime_info={"pid": 7}, lifecycle="idle")
    _carried_rows("carried")
    create_agent(workspace=notes, agent_id="quiet", provider="claude", lifecycle="error")
    archived = create_agent(workspace=main, agent_id="archived.one", provider="claude", lifecycle="running")
    _conversation("archived.one", 1)
    archive_agent(agent=archived)
    create_agent(workspace=old, agent_id="with-its-project", provider="claude", lifecycle="idle")
    _conversation("with-its-project", 1)
    archive_project(project=gone)
    archive_workspace(workspace=shelved)
    _claude_code_sessions()

    _, raw = create_api_token(name="reader and writer")
    old_token, _ = create_api_token(name="old", read_only=True)
    revoke_api_token(token=old_token)
    carry_over_import_runs(
        runs=[
            ImportRun(
                id=7,
                source_path="/home/me/.paseo",
                started_at=T0,
                finished_at=T0 + dt.timedelta(seconds=3),
                counts={"projects": {"created": 1}},
                warnings=["a warning"],
            )
        ]
    )
    return raw
