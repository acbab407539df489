"""A Claude Code home on disk, shaped as Claude Code writes it, for the import and export tests.

The layout and record shapes follow the Claude Agent SDK, which reads these files
(anthropics/claude-agent-sdk-python, ``src/claude_agent_sdk/_internal/sessions.py`` and
``session_import.py``): ``projects/<project key>/<session id>.jsonl``, one compact JSON record per
line; ``user`` and ``assistant`` lines with ``uuid``, ``parentUuid``, ``sessionId``, ``cwd``,
``timestamp`` and an API ``message`` (one assistant message split over lines sharing
``message.id``, ``tool_use`` in an assistant line and its ``tool_result`` in the next user line);
``summary`` (``leafUuid``, no ``uuid``), ``custom-title`` (``customTitle``),
``file-history-snapshot``; subagents in ``<session id>/subagents/agent-<id>.jsonl`` beside an
``agent-<id>.meta.json`` sidecar; and the side files a real home holds (``tool-results/``,
``file-history/``, ``todos/``, ``history.jsonl``).
"""

from __future__ import annotations

import json
from pathlib import Path

PROJECT_KEY = "-home-dev-shop"
CWD = "/home/dev/shop"
SESSION_ID = "5f0c8e9e-3b1d-4d47-9c1e-2a6f1b7c9d01"
OTHER_SESSION_ID = "7a2d4c6e-8f10-4b32-a5c7-9e1f3b5d7a02"
SUBAGENT_ID = "a1b2c3d4e5f6"


def _base(uuid: str, parent: str | None, *, session_id: str = SESSION_ID, n: int = 0, sidechain: bool = False):
    return {
        "parentUuid": parent,
        "isSidechain": sidechain,
        "userType": "external",
        "cwd": CWD,
        "sessionId": session_id,
        "version": "2.0.14",
        "gitBranch": "main",
        "uuid": uuid,
        "timestamp": f"2026-11-30T09:{n // 60:02d}:{n % 60:02d}.000Z",
    }


def user(uuid: str, parent: str | None, content, **kw) -> dict:
    return {**_base(uuid, parent, **kw), "type": "user", "message": {"role": "user", "content": content}}


def assistant(uuid: str, parent: str, message_id: str, block: dict, **kw) -> dict:
    return {
        **_base(uuid, parent, **kw),
        "type": "assistant",
        "requestId": "req_011CVa" + message_id[-6:],
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "cache_read_input_tokens": 1800, "output_tokens": 40},
        },
    }


def main_session() -> list[dict]:
    """A session: a prompt, thinking, a Bash call and its result, a failed Read, an answer, a title."""
    return [
        {
            "type": "file-history-snapshot",
            "messageId": "m-0",
            "snapshot": {"messageId": "m-0", "trackedFileBackups": {}, "timestamp": "2026-11-30T09:00:00.000Z"},
            "isSnapshotUpdate": False,
        },
        user("u-1", None, "List the files and tell me what the shop does.", n=1),
        assistant(
            "a-1",
            "u-1",
            "msg_01ABCDEF",
            {"type": "thinking", "thinking": "I should run ls first.", "signature": "EqQBCkYIBxgCKkB"},
            n=2,
        ),
        assistant(
            "a-2",
            "a-1",
            "msg_01ABCDEF",
            {
                "type": "tool_use",
                "id": "toolu_01XYZ",
                "name": "Bash",
                "input": {"command": "ls -la", "description": "List files"},
            },
            n=3,
        ),
        {
            **user(
                "u-2",
                "a-2",
                [
                    {
                        "tool_use_id": "toolu_01XYZ",
                        "type": "tool_result",
                        "content": "README.md\nshop.py\n",
                        "is_error": False,
                    }
                ],
                n=4,
            ),
            "toolUseResult": {"stdout": "README.md\nshop.py\n", "stderr": "", "interrupted": False, "isImage": False},
        },
        assistant(
            "a-3",
            "u-2",
            "msg_01GHIJKL",
            {
                "type": "tool_use",
                "id": "toolu_02ABC",
                "name": "Read",
                "input": {"file_path": "/home/dev/shop/missing.py"},
            },
            n=5,
        ),
        user(
            "u-3",
            "a-3",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02ABC",
                    "content": "<tool_use_error>File does not exist.</tool_use_error>",
                    "is_error": True,
                }
            ],
            n=6,
        ),
        assistant(
            "a-4", "u-3", "msg_01MNOPQR", {"type": "text", "text": "The shop sells teapots — see shop.py. ☕"}, n=7
        ),
        {
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "level": "info",
            **_base("s-1", "a-4", n=8),
        },
        {"type": "summary", "summary": "Teapot shop overview", "leafUuid": "a-4"},
        {"type": "custom-title", "customTitle": "Shop tour", "sessionId": SESSION_ID},
    ]


def other_session() -> list[dict]:
    """A second session titled only by its ``summary``."""
    return [
        user("o-1", None, "Run the tests", session_id=OTHER_SESSION_ID, n=1),
        assistant(
            "o-2",
            "o-1",
            "msg_02AAAAAA",
            {"type": "text", "text": "All 12 tests pass."},
            session_id=OTHER_SESSION_ID,
            n=2,
        ),
        {"type": "summary", "summary": "Running the test suite", "leafUuid": "o-2"},
    ]


def subagent_session() -> list[dict]:
    return [
        {**user("sa-1", None, "Find every TODO in shop.py", sidechain=True, n=3), "agentId": SUBAGENT_ID},
        {
            **assistant(
                "sa-2",
                "sa-1",
                "msg_03BBBBBB",
                {"type": "text", "text": "Two TODOs, lines 4 and 9."},
                sidechain=True,
                n=4,
            ),
            "agentId": SUBAGENT_ID,
        },
    ]


SUBAGENT_META = {"agentType": "general-purpose", "parentToolUseId": "toolu_01XYZ"}


def line(record: dict) -> str:
    """One record as Claude Code writes it (``JSON.stringify``: compact, non-ASCII kept)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_transcript(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line(record) for record in records), encoding="utf-8")
    return path


def write_home(root: Path) -> Path:
    """A Claude config home at ``root`` (``$CLAUDE_CONFIG_DIR``); returns its ``projects`` directory."""
    project = root / "projects" / PROJECT_KEY
    write_transcript(project / f"{SESSION_ID}.jsonl", main_session())
    write_transcript(project / f"{OTHER_SESSION_ID}.jsonl", other_session())
    subagents = project / SESSION_ID / "subagents"
    write_transcript(subagents / f"agent-{SUBAGENT_ID}.jsonl", subagent_session())
    (subagents / f"agent-{SUBAGENT_ID}.meta.json").write_text(json.dumps(SUBAGENT_META), encoding="utf-8")
    tool_results = project / SESSION_ID / "tool-results"
    tool_results.mkdir()
    (tool_results / "toolu_01XYZ.txt").write_text("README.md\nshop.py\n")
    (root / "todos").mkdir()
    (root / "todos" / f"{SESSION_ID}-agent-{SESSION_ID}.json").write_text("[]")
    (root / "file-history" / SESSION_ID).mkdir(parents=True)
    (root / "history.jsonl").write_text(line({"display": "List the files", "project": CWD, "timestamp": 1764493200000}))
    return root / "projects"


def read_transcript(path: Path) -> list[dict]:
    return [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines() if raw.strip()]
