"""A Claude Code home (``$CLAUDE_CONFIG_DIR``) shaped as Claude Code writes it, for tests.

``write_claude_home(config_dir, cwd)`` writes ``projects/<project key>/<session id>.jsonl`` for two
sessions, one with two subagents (``<session id>/subagents/agent-<id>.jsonl`` and the
``agent-<id>.meta.json`` sidecar beside each), and returns what it wrote (``ClaudeHome``).

The lines follow Claude Code's own transcript format, as the Claude Agent SDK reads it
(claude_agent_sdk 0.2.x, ``_internal/sessions.py``, ``session_summary.py``, ``session_import.py``):

- every conversation line carries the envelope ``parentUuid`` (null for the first), ``isSidechain``,
  ``userType``, ``cwd``, ``sessionId``, ``version``, ``gitBranch``, ``type``, ``uuid`` and an ISO
  ``timestamp`` (``_parse_transcript_entries`` keeps user/assistant/progress/system/attachment lines
  with a uuid; ``_build_conversation_chain`` walks ``parentUuid``);
- one API response is several ``assistant`` lines, one per content block (``thinking``, ``text``,
  ``tool_use``), sharing ``message.id`` and chained one after the other; each ``tool_result`` is a
  ``user`` line whose ``parentUuid`` is its own call's line, with ``toolUseResult`` beside the
  message, so parallel calls fork the chain (``_recover_orphaned_parallel_tool_results``);
- ``system`` lines (``subtype``, ``content``, ``level``), ``summary`` lines (``summary``,
  ``leafUuid``, no ``uuid``), ``custom-title`` (``customTitle``, ``sessionId``, no ``uuid``) and
  ``file-history-snapshot`` (``messageId``, ``snapshot``, ``isSnapshotUpdate``, no ``uuid``);
- a subagent transcript is a sidechain (``isSidechain: true``, ``agentId``) whose first line is
  the ``Task`` prompt, under ``<session>/subagents/agent-<id>.jsonl``, with the ``.meta.json``
  sidecar naming the spawning ``toolUseId`` (``_read_agent_metadata_sidecar``).

The project key is the SDK's ``project_key_for_directory(cwd)`` (realpath, NFC, sanitised), so
the SDK's own readers (``get_session_messages(..., directory=cwd)``, ``list_sessions``) find it.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk import project_key_for_directory

VERSION = "2.0.14"
MODEL = "claude-sonnet-4-5-20250929"


@dataclass
class ClaudeHome:
    config_dir: Path
    cwd: Path
    project_key: str
    #: session id -> its transcript's lines, as written
    sessions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: session id -> {subagent id: its lines}
    subagents: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)

    @property
    def project_dir(self) -> Path:
        return self.config_dir / "projects" / self.project_key


class _Writer:
    """Builds one transcript's lines, as Claude Code chains them."""

    def __init__(self, session_id: str, cwd: str, seed: str, *, agent_id: str | None = None):
        self.session_id, self.cwd, self.seed, self.agent_id = session_id, cwd, seed, agent_id
        self.lines: list[dict[str, Any]] = []
        self.last: str | None = None
        self.count = 0
        self.clock = 0

    def next_uuid(self) -> str:
        self.count += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed}/{self.count}"))

    def timestamp(self, *, peek: bool = False) -> str:
        """The next line's time (three seconds apart); ``peek`` leaves the clock where it is."""
        tick = self.clock + 1
        if not peek:
            self.clock = tick
        minutes, seconds = divmod(tick * 3, 60)
        return f"2025-10-14T09:{minutes:02d}:{seconds:02d}.{tick % 1000:03d}Z"

    def envelope(self, kind: str, parent: str | None) -> dict[str, Any]:
        line: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": "main",
        }
        if self.agent_id is not None:
            line["agentId"] = self.agent_id
        line["type"] = kind
        return line

    def add(self, line: dict[str, Any]) -> str:
        line_uuid = self.next_uuid()
        line.update(uuid=line_uuid, timestamp=self.timestamp())
        self.lines.append(line)
        self.last = line_uuid
        return line_uuid

    def user(self, content: Any, *, parent: str | None = None, **extra: Any) -> str:
        line = self.envelope("user", self.last if parent is None else parent)
        line["message"] = {"role": "user", "content": content}
        line.update(extra)
        return self.add(line)

    def response(self, *blocks: dict[str, Any], stop_reason: str = "tool_use") -> list[str]:
        """One API message, one ``assistant`` line per content block, sharing ``message.id``."""
        message_id = "msg_01" + uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed}/msg/{self.count}").hex[:22]
        request_id = "req_011" + uuid.uuid5(uuid.NAMESPACE_URL, f"{self.seed}/req/{self.count}").hex[:21]
        written = []
        for index, block in enumerate(blocks):
            line = self.envelope("assistant", self.last)
            line["message"] = {
                "model": MODEL,
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": stop_reason if index == len(blocks) - 1 else None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 4,
                    "cache_creation_input_tokens": 1520,
                    "cache_read_input_tokens": 11890,
                    "cache_creation": {"ephemeral_5m_input_tokens": 1520, "ephemeral_1h_input_tokens": 0},
                    "output_tokens": 26 + index,
                    "service_tier": "standard",
                },
            }
            line["requestId"] = request_id
            written.append(self.add(line))
        return written

    def tool_result(self, call_line: str, tool_use_id: str, output: str, **result: Any) -> str:
        content = [{"tool_use_id": tool_use_id, "type": "tool_result", "content": output, "is_error": False}]
        return self.user(content, parent=call_line, toolUseResult={"stdout": output, "stderr": "", **result})

    def system(self, subtype: str, content: str) -> str:
        line = self.envelope("system", self.last)
        line.update(subtype=subtype, content=content, isMeta=False, level="info")
        return self.add(line)

    def plain(self, line: dict[str, Any]) -> None:
        """A line without uuid (summary, title, snapshot): it is not part of the chain."""
        self.lines.append(line)


def _tool_use(seed: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    tool_id = "toolu_01" + uuid.uuid5(uuid.NAMESPACE_URL, f"{seed}/{name}/{tool_input}").hex[:22]
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def _main_session(session_id: str, cwd: str) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    w = _Writer(session_id, cwd, f"session/{session_id}")
    first_prompt = w.next_uuid()
    w.count -= 1  # the snapshot names the prompt that follows it, taken as it was sent
    w.plain(
        {
            "type": "file-history-snapshot",
            "messageId": first_prompt,
            "snapshot": {"messageId": first_prompt, "trackedFileBackups": {}, "timestamp": w.timestamp(peek=True)},
            "isSnapshotUpdate": False,
        }
    )
    w.user("The login test fails since yesterday: find out why and fix it.")
    read = _tool_use(w.seed, "Read", {"file_path": f"{cwd}/tests/test_login.py"})
    grep = _tool_use(w.seed, "Grep", {"pattern": "def login", "path": cwd, "output_mode": "content"})
    lines = w.response(
        {"type": "thinking", "thinking": "Start from the failing test and the login code.", "signature": "EpYB" * 8},
        {"type": "text", "text": "I'll look at the test and the login function."},
        read,
        grep,
    )
    # Parallel calls: each result's parent is its own call's line, so the chain forks.
    w.tool_result(lines[2], read["id"], "1\tdef test_login(client):\n2\t    assert client.login('a', 'b')")
    w.tool_result(lines[3], grep["id"], "app/auth.py:12:def login(user, password):")
    task = _tool_use(
        w.seed,
        "Task",
        {
            "description": "Check the auth history",
            "prompt": "Which commit changed login?",
            "subagent_type": "general-purpose",
        },
    )
    explore = _tool_use(
        w.seed,
        "Task",
        {"description": "List the fixtures", "prompt": "List the test fixtures.", "subagent_type": "Explore"},
    )
    calls = w.response({"type": "text", "text": "Two subagents will dig in."}, task, explore)
    w.tool_result(calls[1], task["id"], "Commit 4f2a changed the password hashing.", totalDurationMs=5120)
    w.tool_result(calls[2], explore["id"], "conftest.py defines client and user.", totalDurationMs=2010)
    edit = _tool_use(w.seed, "Edit", {"file_path": f"{cwd}/app/auth.py", "old_string": "md5", "new_string": "sha256"})
    done = w.response({"type": "text", "text": "The hash changed; I'll update the check."}, edit)
    w.tool_result(done[1], edit["id"], "The file app/auth.py has been updated.")
    w.response(
        {"type": "text", "text": "Fixed: login hashes with sha256 again, and the test passes."}, stop_reason="end_turn"
    )
    w.system("turn_duration", "Turn took 41s")
    leaf = w.last
    w.plain({"type": "summary", "summary": "Fix the failing login test", "leafUuid": leaf})
    w.plain({"type": "custom-title", "customTitle": "login test fix", "sessionId": session_id})
    subagents = {
        "a1b2c3d4": _subagent(session_id, cwd, "a1b2c3d4", task, "Commit 4f2a changed the password hashing."),
        "e5f6a7b8": _subagent(session_id, cwd, "e5f6a7b8", explore, "conftest.py defines client and user."),
    }
    return w.lines, subagents


def _subagent(session_id: str, cwd: str, agent_id: str, task: dict[str, Any], answer: str) -> list[dict[str, Any]]:
    w = _Writer(session_id, cwd, f"subagent/{session_id}/{agent_id}", agent_id=agent_id)
    w.user(task["input"]["prompt"])
    bash = _tool_use(
        w.seed, "Bash", {"command": "git log --oneline -5 -- app/auth.py", "description": "Recent auth commits"}
    )
    call = w.response({"type": "text", "text": "Looking at the history."}, bash)
    w.tool_result(call[1], bash["id"], "4f2a Switch hashing\n9c1d Add login", interrupted=False, isImage=False)
    w.response({"type": "text", "text": answer}, stop_reason="end_turn")
    return w.lines


def _short_session(session_id: str, cwd: str) -> list[dict[str, Any]]:
    w = _Writer(session_id, cwd, f"session/{session_id}")
    w.user("<command-name>/init</command-name>\n<command-message>init</command-message>\n<command-args></command-args>")
    w.user("Explain what the Makefile's serve target does.")
    w.response({"type": "text", "text": "It installs, migrates and starts gunicorn."}, stop_reason="end_turn")
    w.plain({"type": "summary", "summary": "Makefile serve target", "leafUuid": w.last})
    return w.lines


def _write_jsonl(path: Path, lines: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Claude Code writes compact JSON, one record per line.
    path.write_text("".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n" for line in lines))


def write_claude_home(config_dir: Path, cwd: Path) -> ClaudeHome:
    """Write the home under ``config_dir`` for sessions run in ``cwd`` (made when missing)."""
    cwd.mkdir(parents=True, exist_ok=True)
    real_cwd = str(cwd.resolve())
    home = ClaudeHome(config_dir=config_dir, cwd=Path(real_cwd), project_key=project_key_for_directory(real_cwd))
    main_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{real_cwd}/main"))
    short_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{real_cwd}/short"))
    home.sessions[main_id], home.subagents[main_id] = _main_session(main_id, real_cwd)
    home.sessions[short_id] = _short_session(short_id, real_cwd)
    home.subagents[short_id] = {}
    for session_id, lines in home.sessions.items():
        _write_jsonl(home.project_dir / f"{session_id}.jsonl", lines)
        for agent_id, agent_lines in home.subagents[session_id].items():
            transcript = home.project_dir / session_id / "subagents" / f"agent-{agent_id}.jsonl"
            _write_jsonl(transcript, agent_lines)
            task_id = next(line for line in agent_lines if line["type"] == "user")["message"]["content"]
            meta = {"agentType": "general-purpose", "toolUseId": _task_id_for(home, session_id, task_id)}
            transcript.with_name(f"agent-{agent_id}.meta.json").write_text(json.dumps(meta))
    return home


def _task_id_for(home: ClaudeHome, session_id: str, prompt: str) -> str:
    """The id of the ``Task`` call in the session whose prompt spawned the subagent."""
    for line in home.sessions[session_id]:
        for block in (line.get("message") or {}).get("content") or []:
            if isinstance(block, dict) and block.get("name") == "Task" and block["input"]["prompt"] == prompt:
                return block["id"]
    raise LookupError(prompt)
