"""What changed since the previous snapshot: the manifest's ``changes``, its
one-line summary, and the snapshot's changes.txt."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from datadir import store
from datadir.records import RecordChange, holdings, past_sentence, record_changes, summarize_record_changes
from datadir.services.files import Previous


def changes(
    previous: Previous | None,
    files: dict[str, dict[str, Any]],
    tables: dict[str, int],
    records: dict[str, dict[str, list]] | None = None,
) -> dict[str, Any]:
    before_files = previous[1].get("files", {}) if previous else {}
    before_tables = previous[1].get("database", {}).get("tables", {}) if previous else {}
    added = sorted(set(files) - set(before_files))
    removed = sorted(set(before_files) - set(files))
    changed = sorted(
        rel
        for rel in set(files) & set(before_files)
        if (files[rel]["size"], files[rel]["sha256"])
        != (before_files[rel].get("size"), before_files[rel].get("sha256"))
    )
    rows = {table: [before_tables.get(table), tables.get(table)] for table in sorted(set(tables) | set(before_tables))}
    found: dict[str, Any] = {}
    before_records = previous[1].get("records") if previous else None
    if records is not None:
        found["holds"] = holdings(records)
        if before_records is not None:
            found["records"] = [asdict(change) for change in record_changes(before_records, records)]
    return {
        **found,
        "previous": previous[0] if previous else None,
        "files": {
            "added": added,
            "changed": changed,
            "removed": removed,
            "unchanged": len(files) - len(added) - len(changed),
        },
        "rows": rows,
    }


def _file_phrase(files: dict[str, Any]) -> str:
    shown = ", ".join(f"{len(files[key])} {key}" for key in ("added", "changed", "removed") if files.get(key))
    return f"data files: {shown}" if shown else ""


def summarize_changes(changes: dict[str, Any]) -> str:
    """One line for listings, in the operator's words: records added, deleted, archived and
    unarchived, timeline rows gained, data files changed (never table names)."""
    files = _file_phrase(changes.get("files", {}))
    if changes.get("previous") is None:
        parts = ["first snapshot", changes.get("holds", "")]
    elif "records" in changes:
        phrases = summarize_record_changes([RecordChange(**item) for item in changes["records"]])
        parts = phrases or ["no project, workspace, agent or timeline changed"]
    else:
        # A snapshot of a previous snapshot without records: the row totals alone.
        delta = sum((after or 0) - (before or 0) for before, after in changes.get("rows", {}).values())
        parts = [f"rows {delta:+,} in all tables" if delta else "no row count changes"]
    return "; ".join(part for part in [*parts, files] if part)


def changes_text(name: str, manifest: dict[str, Any]) -> str:
    changes = manifest["changes"]
    files = changes["files"]
    entries = manifest["files"]
    lines = [
        f"data snapshot {name} ({manifest['reason']}{': ' + manifest['note'] if manifest['note'] else ''})",
        f"taken {manifest['created']} on {manifest['engine']}",
        f"previous snapshot: {changes['previous'] or 'none (everything is listed as added)'}",
        "",
        f"files: {len(files['added'])} added, {len(files['changed'])} changed, "
        f"{len(files['removed'])} removed, {files['unchanged']} unchanged",
    ]
    lines += [f"  + {rel} ({store.human_bytes(entries[rel]['size'])})" for rel in files["added"]]
    lines += [f"  ~ {rel} ({store.human_bytes(entries[rel]['size'])})" for rel in files["changed"]]
    lines += [f"  - {rel}" for rel in files["removed"]]
    if "holds" in changes:
        lines += ["", f"holds {changes['holds']}"]
    if "records" in changes:
        lines += ["", "projects, workspaces and agents changed since the previous snapshot:"]
        lines += [f"  {past_sentence(RecordChange(**item))}" for item in changes["records"]] or ["  none"]
    lines += ["", "rows per table (delta since the previous snapshot):"]
    width = max((len(table) for table in changes["rows"]), default=0)
    for table, (before, after) in changes["rows"].items():
        if after is None:
            lines.append(f"  {table:<{width}}  (table removed; had {before})")
        elif before is None:
            lines.append(f"  {table:<{width}}  {after:>10}  (new)")
        else:
            lines.append(f"  {table:<{width}}  {after:>10}  ({after - before:+d})")
    return "\n".join(lines) + "\n"
