"""Build legacy home directories on disk, quirk by quirk."""

from __future__ import annotations

import json
from pathlib import Path

T0 = "2024-03-01T10:00:00.000Z"
T1 = "2024-03-02T10:00:00.000Z"
T2 = "2024-03-03T10:00:00.000Z"


def legacy_dir_name(cwd: str) -> str:
    """The legacy layout's <dir>: the cwd without outer slashes, the rest turned into '-'."""
    return cwd.strip("/").replace("/", "-")


class LegacyHome:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.projects: list = []
        self.workspaces: list = []

    # records -------------------------------------------------------------

    def project(self, project_id: str, root_path: str, *, kind: str = "git", **extra) -> dict:
        record = {
            "projectId": project_id,
            "rootPath": root_path,
            "kind": kind,
            "displayName": extra.pop("displayName", root_path.rstrip("/").rsplit("/", 1)[-1]),
            "createdAt": T0,
            "updatedAt": T0,
            "archivedAt": None,
            **extra,
        }
        self.projects.append(record)
        return record

    def workspace(self, workspace_id: str, project_id: str, cwd: str, *, kind: str = "local_checkout", **extra) -> dict:
        record = {
            "workspaceId": workspace_id,
            "projectId": project_id,
            "cwd": cwd,
            "kind": kind,
            "displayName": extra.pop("displayName", cwd.rsplit("/", 1)[-1]),
            "createdAt": T0,
            "updatedAt": T0,
            "archivedAt": None,
            **extra,
        }
        self.workspaces.append(record)
        return record

    def agent(self, agent_id: str, cwd: str, *, layout: str = "nested", filename: str | None = None, **extra) -> Path:
        record = {
            "id": agent_id,
            "provider": "claude",
            "cwd": cwd,
            "createdAt": T0,
            "updatedAt": T0,
            "lastActivityAt": None,
            "title": f"agent {agent_id}",
            "labels": {},
            "lastStatus": "idle",
            "config": {},
            "runtimeInfo": {},
            "persistence": None,
            "requiresAttention": False,
            "attentionReason": None,
            "attentionTimestamp": None,
            "internal": False,
            "archivedAt": None,
            **extra,
        }
        folder = self.root / "agents"
        if layout == "nested":
            folder = folder / legacy_dir_name(cwd)
        return self.write_file(
            folder / (filename or f"{agent_id}.json"), json.dumps(record, ensure_ascii=False, indent=2)
        )

    def timeline(self, agent_id: str, rows: int | list, *, epoch: str = "epoch-1", tail: str = "") -> Path:
        if isinstance(rows, int):
            rows = [row(seq) for seq in range(1, rows + 1)]
        header = {"type": "chartr.timeline", "version": 1, "agent_id": agent_id, "epoch": epoch, "exported_at": T2}
        lines = [json.dumps(header)] + [
            line if isinstance(line, str) else json.dumps(line, ensure_ascii=False) for line in rows
        ]
        return self.write_file(self.root / "timelines" / f"{agent_id}.jsonl", "\n".join(lines) + "\n" + tail)

    # files ---------------------------------------------------------------

    def write_file(self, path: Path, text: str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def save(self) -> Path:
        if self.projects:
            self.write_file(
                self.root / "projects" / "projects.json", json.dumps(self.projects, ensure_ascii=False, indent=2)
            )
        if self.workspaces:
            self.write_file(
                self.root / "projects" / "workspaces.json", json.dumps(self.workspaces, ensure_ascii=False, indent=2)
            )
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root


def row(seq: int, *, item_id: str | None = "auto", text: str | None = None, committed_at: str | None = None) -> dict:
    return {
        "seq": seq,
        "committed_at": committed_at or f"2024-03-01T10:{seq // 60 % 60:02d}:{seq % 60:02d}.{seq % 1000:03d}123Z",
        "item_id": f"item-{seq}" if item_id == "auto" else item_id,
        "item": {"type": "assistant_message", "text": text or f"message {seq} ✓", "n": seq},
    }


# --- Paseo's own history stores ---------------------------------------------


def paseo_file_name(agent_id: str) -> str:
    """agent-<base64url(agent id), no padding>.json, as Paseo names it."""
    import base64

    return f"agent-{base64.urlsafe_b64encode(agent_id.encode()).decode().rstrip('=')}.json"


def paseo_row(seq: int, *, turn_id: str | None = "turn-1", **extra) -> dict:
    row = {
        "seq": seq,
        "timestamp": f"2024-05-01T10:{seq // 60 % 60:02d}:{seq % 60:02d}.{seq % 1000:03d}Z",
        "item": {"type": "assistant_message" if seq % 3 else "user_message", "text": f"paseo {seq} ✓"},
        **extra,
    }
    if turn_id is not None:
        row["turnId"] = turn_id
    return row


def paseo_history_file(home: LegacyHome, agent_id: str, seqs, *, epoch: str, version=1, **extra) -> Path:
    document = {"version": version, "epoch": epoch, "rows": [paseo_row(seq) for seq in seqs], **extra}
    return home.write_file(home.root / "agent-timelines" / paseo_file_name(agent_id), json.dumps(document))


def paseo_history_db(home: LegacyHome, histories: dict[str, tuple[str, int, list[int]]]) -> Path:
    """timelines.db: agent id -> (epoch, backfill_complete, seqs)."""
    import sqlite3

    path = home.root / "timelines.db"
    home.root.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(
            "CREATE TABLE agent_timelines (agent_id TEXT PRIMARY KEY, epoch TEXT, backfill_complete INTEGER)"
        )
        connection.execute(
            "CREATE TABLE agent_timeline_rows (agent_id TEXT, seq INTEGER, timestamp TEXT, item TEXT, "
            "PRIMARY KEY (agent_id, seq))"
        )
        for agent_id, (epoch, complete, seqs) in histories.items():
            connection.execute("INSERT INTO agent_timelines VALUES (?, ?, ?)", (agent_id, epoch, complete))
            for seq in seqs:
                row = paseo_row(seq, turn_id=None)
                connection.execute(
                    "INSERT INTO agent_timeline_rows VALUES (?, ?, ?, ?)",
                    (agent_id, seq, row["timestamp"], json.dumps(row["item"])),
                )
    connection.close()
    return path
