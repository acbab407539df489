"""A real-shaped Codex home for the tests: every line as Codex writes it.

Each builder below names, in the comment above it, the Rust declarations its line follows, as
``file:line`` in openai/codex at commit 5ef96ab2785f3ecddf279639eff7b1b42c906fa4 (paths under
``codex-rs/``) unless the comment names another commit. A line carries every field its type
requires there: the non-``Option`` fields without ``#[serde(default)]``; an ``Option`` field may be
left out, serde reading it as ``None``. ``rollout_reference`` is no ``RolloutItem`` at that commit;
its line follows the segment writer that wrote it, at the commit its comment names.
"""

from __future__ import annotations

import json
from pathlib import Path

LIVE = "0199a213-81c0-7800-8aa1-bbab2a035a53"
ARCHIVED = "0199a214-0000-7000-8000-000000000002"
FORK = "0199a215-0000-7000-8000-000000000003"
SEGMENTED = "0199a216-0000-7000-8000-000000000004"
#: Stands in for ``codex_rollout::ROTATED_ROLLOUT_SEGMENTS_SUBDIR``, whose value is not pinned here:
#: the importer finds a sealed segment by its reference's path, whatever the directory.
SEGMENTS_DIR = "rollout_segments"
#: Where the Codex that wrote the rollouts kept its home (its references name this machine's paths).
OTHER_MACHINE_HOME = "/Users/someone/.codex"
#: The commit of the segment writer ``rotate`` follows.
SEGMENT_WRITER_COMMIT = "848575dc0d9feddd91b6656d8b4cadfb18d2d73c"


def rollout_name(stamp: str, thread_id: str) -> str:
    return f"rollout-{stamp}-{thread_id}.jsonl"


# history/src/lib.rs:369 (RolloutLine: timestamp, ordinal optional, the item flattened), lib.rs:215
# (RolloutItem) as history/src/rollout_payload.rs:33 (RolloutItemWire) reads it: tag "type",
# snake_case, the item under "payload".
def line(timestamp: str, kind: str, payload: dict) -> dict:
    return {"timestamp": timestamp, "type": kind, "payload": payload}


# protocol/src/protocol.rs:3358 (SessionMetaLine: SessionMeta flattened, git), protocol.rs:3245
# (SessionMeta: id, timestamp, cwd, originator, cli_version; session_id, which protocol.rs:3365 fills
# from id when absent; forked_from_id optional), protocol.rs:3536 (GitInfo, all optional).
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


# protocol/src/protocol.rs:3417 (TurnContextItem: cwd, approval_policy, sandbox_policy, model; summary
# optional), protocol.rs:1092 (AskForApproval, kebab-case), protocol.rs:1178 (SandboxPolicy, tag "type",
# kebab-case; WorkspaceWrite at :1204, its fields defaulted).
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


# protocol/src/models.rs:1027 (ResponseItem, tag "type", snake_case), :1036 (Message: role, content),
# models.rs:879 (ContentItem: input_text at :880, output_text at :894, each with text).
def user(text: str, *, at: str) -> dict:
    return line(
        at, "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    )


# protocol/src/models.rs:1036 (ResponseItem::Message), models.rs:894 (ContentItem::OutputText).
def assistant(text: str, *, at: str) -> dict:
    return line(
        at,
        "response_item",
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
    )


# protocol/src/models.rs:1069 (ResponseItem::Reasoning: summary; encrypted_content optional),
# models.rs:2096 (ReasoningItemReasoningSummary: summary_text with text).
def reasoning(summary: str, *, at: str) -> dict:
    return line(
        at,
        "response_item",
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "encrypted_content": "gAAAAB..."},
    )


# protocol/src/models.rs:1098 (ResponseItem::FunctionCall: name, arguments as a JSON string, call_id).
def function_call(call_id: str, command: list[str], *, at: str) -> dict:
    arguments = json.dumps({"command": command, "workdir": "/home/me/app", "timeout_ms": 120000})
    return line(
        at, "response_item", {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}
    )


# protocol/src/models.rs:1147 (ResponseItem::FunctionCallOutput: output; call_id optional),
# models.rs:2292 (FunctionCallOutputPayload, read at :2377 as a string or content items).
def function_output(call_id: str, output: str, exit_code: int, *, at: str) -> dict:
    text = json.dumps({"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.2}})
    return line(at, "response_item", {"type": "function_call_output", "call_id": call_id, "output": text})


# protocol/src/models.rs:1167 (ResponseItem::CustomToolCall: call_id, name, input).
def custom_tool_call(call_id: str, name: str, tool_input: str, *, at: str) -> dict:
    return line(
        at, "response_item", {"type": "custom_tool_call", "call_id": call_id, "name": name, "input": tool_input}
    )


# protocol/src/models.rs:1191 (ResponseItem::CustomToolCallOutput: call_id, output), models.rs:2292
# (FunctionCallOutputPayload).
def custom_tool_output(call_id: str, output: str, *, at: str) -> dict:
    return line(at, "response_item", {"type": "custom_tool_call_output", "call_id": call_id, "output": output})


# protocol/src/models.rs:1082 (ResponseItem::LocalShellCall: status, action; call_id optional),
# models.rs:2043 (LocalShellStatus), :2051 (LocalShellAction, tag "type"), :2056 (LocalShellExecAction:
# command; the rest optional).
def local_shell_call(call_id: str, command: list[str], cwd: str, *, at: str) -> dict:
    action = {"type": "exec", "command": command, "timeout_ms": None, "working_directory": cwd}
    return line(
        at, "response_item", {"type": "local_shell_call", "call_id": call_id, "status": "completed", "action": action}
    )


# protocol/src/protocol.rs:1464 (EventMsg, tag "type", snake_case): user_message (:1534,
# UserMessageEvent at :2664: message), agent_message (:1531, AgentMessageEvent at :2641: message),
# token_count (:1528, TokenCountEvent at :2465: info and rate_limits, both optional).
def event(kind: str, *, at: str, **fields) -> dict:
    return line(at, "event_msg", {"type": kind, **fields})


# history/src/lib.rs:290 (CompactedItem) as history/src/rollout_payload.rs:245 (CompactedItemWire)
# reads it: message; the rest optional.
def compacted(message: str, *, at: str) -> dict:
    return line(at, "compacted", {"message": message})


# thread-store/src/local/segment_writer.rs:223 at SEGMENT_WRITER_COMMIT (the RolloutReferenceItem a
# rotation writes: rollout_path and max_depth; thread_id, rollout_timestamp, segment_id,
# nth_user_message optional), pushed as RolloutItem::RolloutReference at :236.
def rollout_reference(rollout_path: str, thread_id: str, rollout_timestamp: str, *, at: str) -> dict:
    payload = {"rollout_path": rollout_path, "thread_id": thread_id, "rollout_timestamp": rollout_timestamp}
    return line(at, "rollout_reference", {**payload, "max_depth": 1})


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
        custom_tool_call("call_patch", "apply_patch", "*** Begin Patch", at=t + "6.000Z"),
        custom_tool_output("call_patch", "Exit code: 0\nSuccess.", at=t + "6.500Z"),
        local_shell_call("call_ls", ["ls"], cwd, at=t + "7.000Z"),
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

    # thread-store/src/local/segment_writer.rs:183 at SEGMENT_WRITER_COMMIT
    # (rotate_thread_segment_with_handle; the sealed path is rotated_segment_path at :527).
    def rotate(self, relative: str, thread_id: str, *, at: str, segment: str = "initial") -> str:
        """What Codex's segment writer does: seal the live file at an immutable path, and start the live
        file again with ``session_meta`` and a ``rollout_reference`` to the sealed copy."""
        live = self.root / relative
        sealed = f"{SEGMENTS_DIR}/{thread_id}/{segment}/{live.name}"
        (self.root / sealed).parent.mkdir(parents=True, exist_ok=True)
        (self.root / sealed).write_bytes(live.read_bytes())
        meta = json.loads(live.read_text().split("\n")[0])
        meta["payload"]["segment_id"] = "0199a300-0000-7000-8000-00000000aaaa"
        stamp = live.name[len("rollout-") : len("rollout-") + 19]
        reference = rollout_reference(f"{OTHER_MACHINE_HOME}/{sealed}", thread_id, stamp, at=at)
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
            compacted("Summary so far", at="2025-10-03T07:30:02.000Z"),
        ],
    )
    (root / "history.jsonl").write_text(
        json.dumps({"session_id": LIVE, "ts": 1759312801, "text": "Run the tests"}) + "\n"
    )
    (root / "state_5.sqlite").write_bytes(b"SQLite format 3\x00")
    (root / "config.toml").write_text('model = "gpt-5-codex"\n')
    return home
