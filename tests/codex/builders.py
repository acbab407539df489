"""A real-shaped Codex home for the tests: every line as Codex writes it.

Each line is a ``RolloutLine``: ``{"timestamp", "type", "payload"}`` (``RolloutItem`` is
``#[serde(tag = "type", content = "payload", rename_all = "snake_case")]``), with the fields the Rust
type behind its ``type`` requires (fields that are ``Option`` may be left out; serde reads a missing
one as ``None``). Sources, in openai/codex:

- ``codex-rs/protocol/src/protocol.rs``: ``pub struct RolloutLine`` (``timestamp``, ``ordinal``
  optional, the item flattened), ``pub enum RolloutItem`` (``session_meta``, ``response_item``,
  ``compacted``, ``turn_context``, ``event_msg``), ``pub struct SessionMetaLine`` (``SessionMeta``
  flattened, ``git``), ``pub struct SessionMeta`` (required: ``id``, ``timestamp``, ``cwd``,
  ``originator``, ``cli_version``; ``forked_from_id`` optional), ``pub struct GitInfo``
  (``commit_hash``, ``branch``, ``repository_url``, all optional), ``pub struct TurnContextItem``
  (required: ``cwd``, ``approval_policy``, ``sandbox_policy``, ``model``, ``summary``),
  ``pub struct CompactedItem`` (``message``). Line numbers move with every commit of that file
  (over a thousand versions); search for the declarations named here.
- ``codex-rs/protocol/src/models.rs`` at 152e7caecdc1050f186f3ec768ec5fb2cfa04923:
  ``enum ContentItem`` (line 37: ``input_text``/``output_text`` with ``text``), ``enum ResponseItem``
  (line 45): ``message`` (46: ``role``, ``content``), ``reasoning`` (52: ``summary`` of
  ``summary_text``, ``encrypted_content``), ``local_shell_call`` (60: ``call_id``, ``status``,
  ``action`` ``{"type": "exec", "command", ...}``), ``function_call`` (69: ``name``, ``arguments``
  as a JSON string, ``call_id``), ``function_call_output`` (86: ``call_id``, ``output``: a string on
  success), ``custom_tool_call`` (90: ``call_id``, ``name``, ``input``), ``custom_tool_call_output``
  (100: ``call_id``, ``output``).
- ``codex-rs/protocol/src/protocol.rs`` ``pub enum EventMsg`` (``#[serde(tag = "type")]``):
  ``user_message`` (``message``), ``agent_message`` (``message``), ``token_count`` (``info``,
  ``rate_limits``, both optional).
- ``codex-rs/thread-store/src/local/segment_writer.rs`` at 848575dc0d9feddd91b6656d8b4cadfb18d2d73c,
  ``rotate_thread_segment_with_handle``: the live file is copied to
  ``<codex home>/<ROTATED_ROLLOUT_SEGMENTS_SUBDIR>/<thread id>/<segment id or "initial">/<file name>``
  and replaced by a file that starts with ``session_meta`` then a ``rollout_reference`` whose
  payload is ``RolloutReferenceItem {rollout_path, thread_id, rollout_timestamp, segment_id,
  max_depth, nth_user_message, ...}``. The constant's value is not pinned here (the importer finds
  sealed segments by the reference's path, whatever the directory): ``rollout_segments`` stands in.
- ``codex-rs/rollout/src/lib.rs``: ``SESSIONS_SUBDIR = "sessions"``,
  ``ARCHIVED_SESSIONS_SUBDIR = "archived_sessions"``; archiving moves the file into
  ``archived_sessions/`` under its own name (``segment_writer_tests.rs``, ``rotation_keeps_the_canonical_thread_active``).
"""

from __future__ import annotations

import json
from pathlib import Path

LIVE = "0199a213-81c0-7800-8aa1-bbab2a035a53"
ARCHIVED = "0199a214-0000-7000-8000-000000000002"
FORK = "0199a215-0000-7000-8000-000000000003"
SEGMENTED = "0199a216-0000-7000-8000-000000000004"
SEGMENTS_DIR = "rollout_segments"
#: Where the Codex that wrote the rollouts kept its home (its references name this machine's paths).
OTHER_MACHINE_HOME = "/Users/someone/.codex"


def rollout_name(stamp: str, thread_id: str) -> str:
    return f"rollout-{stamp}-{thread_id}.jsonl"


def line(timestamp: str, kind: str, payload: dict) -> dict:
    return {"timestamp": timestamp, "type": kind, "payload": payload}


def session_meta(thread_id: str, cwd: str, *, at: str, forked_from: str | None = None, **extra) -> dict:
    payload = {
        "id": thread_id,
        "timestamp": at,
        "cwd": cwd,
        "originator": "codex_cli_rs",
        "cli_version": "0.46.0",
        "source": "cli",
        "model_provider": "openai",
        "git": {"commit_hash": "4f2a9c1", "branch": "main", "repository_url": "git@github.com:me/app.git"},
        **extra,
    }
    if payload["git"] is None:
        del payload["git"]  # Option<GitInfo>, skipped when None
    if forked_from:
        payload["forked_from_id"] = forked_from
    return line(at, "session_meta", payload)


def turn_context(cwd: str, *, at: str) -> dict:
    return line(
        at,
        "turn_context",
        {
            "cwd": cwd,
            "approval_policy": "on-request",
            "sandbox_policy": {"type": "workspace-write", "network_access": False},
            "model": "gpt-5-codex",
            "effort": "medium",
            "summary": "auto",
        },
    )


def user(text: str, *, at: str) -> dict:
    return line(
        at, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    )


def assistant(text: str, *, at: str) -> dict:
    return line(
        at,
        "response_item",
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
    )


def reasoning(summary: str, *, at: str) -> dict:
    return line(
        at,
        "response_item",
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "encrypted_content": "gAAAAB..."},
    )


def function_call(call_id: str, command: list[str], *, at: str) -> dict:
    arguments = json.dumps({"command": command, "workdir": "/home/me/app", "timeout_ms": 120000})
    return line(
        at, "response_item", {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}
    )


def function_output(call_id: str, output: str, exit_code: int, *, at: str) -> dict:
    text = json.dumps({"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.2}})
    return line(at, "response_item", {"type": "function_call_output", "call_id": call_id, "output": text})


def event(kind: str, *, at: str, **fields) -> dict:
    return line(at, "event_msg", {"type": kind, **fields})


def conversation(cwd: str, *, day: str, prompt: str) -> list[dict]:
    """One turn as Codex records it: context, the user's message (twice: for the model and the UI),
    reasoning, a shell call that works and one that fails, a patch, the answer, token counts."""
    t = f"{day}T10:00:0"
    return [
        turn_context(cwd, at=t + "1.000Z"),
        user("<environment_context>\n  <cwd>" + cwd + "</cwd>\n</environment_context>", at=t + "1.100Z"),
        user(prompt, at=t + "1.200Z"),
        event("user_message", message=prompt, images=[], at=t + "1.210Z"),
        reasoning("**Looking at the tests**", at=t + "2.000Z"),
        function_call("call_ok", ["bash", "-lc", "pytest -q"], at=t + "3.000Z"),
        function_output("call_ok", "3 passed", 0, at=t + "4.000Z"),
        function_call("call_bad", ["bash", "-lc", "false"], at=t + "5.000Z"),
        function_output("call_bad", "", 1, at=t + "5.500Z"),
        line(
            t + "6.000Z",
            "response_item",
            {"type": "custom_tool_call", "call_id": "call_patch", "name": "apply_patch", "input": "*** Begin Patch"},
        ),
        line(
            t + "6.500Z",
            "response_item",
            {"type": "custom_tool_call_output", "call_id": "call_patch", "output": "Exit code: 0\nSuccess."},
        ),
        line(
            t + "7.000Z",
            "response_item",
            {
                "type": "local_shell_call",
                "call_id": "call_ls",
                "status": "completed",
                "action": {"type": "exec", "command": ["ls"], "timeout_ms": None, "working_directory": cwd},
            },
        ),
        assistant("Done: the tests pass. ✓", at=t + "8.000Z"),
        event("agent_message", message="Done: the tests pass. ✓", at=t + "8.010Z"),
        event("token_count", info=None, rate_limits=None, at=t + "8.020Z"),
    ]


class CodexHomeBuilder:
    """A ``$CODEX_HOME`` on disk, written line by line as Codex writes it."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def write(self, relative: str, records: list[dict]) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records))
        return path

    def append(self, relative: str, records: list[dict]) -> None:
        with (self.root / relative).open("a") as handle:
            handle.writelines(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)

    def files(self) -> dict[str, list[dict]]:
        """Every rollout of the home, by relative path: its lines, parsed."""
        return {
            path.relative_to(self.root).as_posix(): [json.loads(text) for text in path.read_text().split("\n") if text]
            for path in sorted(self.root.rglob("rollout-*.jsonl"))
        }

    def rotate(self, relative: str, thread_id: str, *, at: str, segment: str = "initial") -> str:
        """What Codex's segment writer does: seal the live file at an immutable path, and start the live
        file again with ``session_meta`` and a ``rollout_reference`` to the sealed copy."""
        live = self.root / relative
        sealed = f"{SEGMENTS_DIR}/{thread_id}/{segment}/{live.name}"
        (self.root / sealed).parent.mkdir(parents=True, exist_ok=True)
        (self.root / sealed).write_bytes(live.read_bytes())
        meta = json.loads(live.read_text().split("\n")[0])
        meta["payload"]["segment_id"] = "0199a300-0000-7000-8000-00000000aaaa"
        reference = line(
            at,
            "rollout_reference",
            {
                "rollout_path": f"{OTHER_MACHINE_HOME}/{sealed}",
                "thread_id": thread_id,
                "rollout_timestamp": live.name[len("rollout-") : len("rollout-") + 19],
                "max_depth": 1,
            },
        )
        self.write(relative, [meta, reference])
        return sealed


def real_shaped_home(root: Path) -> CodexHomeBuilder:
    """A live thread, an archived one, a fork of the live one, and a thread already rotated into segments,
    beside the files a Codex home holds that are not threads."""
    home = CodexHomeBuilder(root)
    app = "/home/me/app"
    live = f"sessions/2025/10/01/{rollout_name('2025-10-01T10-00-00', LIVE)}"
    home.write(
        live,
        [
            session_meta(LIVE, app, at="2025-10-01T10:00:00.000Z"),
            *conversation(app, day="2025-10-01", prompt="Run the tests"),
        ],
    )
    home.write(
        f"archived_sessions/{rollout_name('2025-09-20T08-00-00', ARCHIVED)}",
        [
            session_meta(ARCHIVED, "/home/me/notes", at="2025-09-20T08:00:00.000Z", git=None),
            user("Tidy my notes", at="2025-09-20T08:00:01.000Z"),
        ],
    )
    home.write(
        f"sessions/2025/10/02/{rollout_name('2025-10-02T09-00-00', FORK)}",
        [
            session_meta(FORK, app, at="2025-10-02T09:00:00.000Z", forked_from=LIVE),
            user("Run the tests", at="2025-10-02T09:00:00.100Z"),
            assistant("Forked here.", at="2025-10-02T09:00:01.000Z"),
        ],
    )
    segmented = f"sessions/2025/10/03/{rollout_name('2025-10-03T07-00-00', SEGMENTED)}"
    home.write(
        segmented,
        [
            session_meta(SEGMENTED, app + "/lib", at="2025-10-03T07:00:00.000Z"),
            user("First part", at="2025-10-03T07:00:01.000Z"),
        ],
    )
    home.rotate(segmented, SEGMENTED, at="2025-10-03T07:30:00.000Z")
    home.append(
        segmented,
        [
            user("Second part", at="2025-10-03T07:30:01.000Z"),
            line("2025-10-03T07:30:02.000Z", "compacted", {"message": "Summary so far"}),
        ],
    )
    (root / "history.jsonl").write_text(
        json.dumps({"session_id": LIVE, "ts": 1759312801, "text": "Run the tests"}) + "\n"
    )
    (root / "state_5.sqlite").write_bytes(b"SQLite format 3\x00")
    (root / "config.toml").write_text('model = "gpt-5-codex"\n')
    return home
