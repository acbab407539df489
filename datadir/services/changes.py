"""What changed since the previous snapshot: the manifest's ``changes``, its
one-line summary, and the snapshot's changes.txt."""

from __future__ import annotations

from typing import Any

from datadir import store
from datadir.services.files import Previous


def changes(previous: Previous | None, files: dict[str, dict[str, Any]], tables: dict[str, int]) -> dict[str, Any]:
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
    return {
        "previous": previous[0] if previous else None,
        "files": {
            "added": added,
            "changed": changed,
            "removed": removed,
            "unchanged": len(files) - len(added) - len(changed),
        },
        "rows": rows,
    }


def _delta(before: int | None, after: int | None) -> int:
    return (after or 0) - (before or 0)


def summarize_changes(changes: dict[str, Any]) -> str:
    """One line for listings: file counts and the biggest row deltas."""
    files = changes.get("files", {})
    parts = [f"files +{len(files.get('added', []))} ~{len(files.get('changed', []))} -{len(files.get('removed', []))}"]
    deltas = [
        (table, _delta(before, after))
        for table, (before, after) in changes.get("rows", {}).items()
        if _delta(before, after)
    ]
    deltas.sort(key=lambda item: (-abs(item[1]), item[0]))
    if deltas:
        shown = ", ".join(f"{table} {delta:+d}" for table, delta in deltas[:3])
        more = f" and {len(deltas) - 3} more tables" if len(deltas) > 3 else ""
        parts.append(f"rows {shown}{more}")
    else:
        parts.append("no row count changes")
    if changes.get("previous") is None:
        parts.insert(0, "first snapshot")
    return "; ".join(parts)


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
