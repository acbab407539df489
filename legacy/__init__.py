"""Bringing a legacy (file-based) home directory into chartr, and the timeline JSONL format.

- ``services``: ``import_legacy``, the one write path of an import.
- ``scan``: check the home (projects, workspaces, agents, timeline files), writing nothing.
- ``records``: parse and validate ``projects/*.json`` and ``agents/**.json`` (every field: docs/legacy.md).
- ``located``: every problem of a file at once, each on its line; reading JSON files.
- ``jsonl``: the timeline JSONL format, read streamed, line by line.
- ``timelines``: check timeline files, then append their rows through ``timeline.services``.
- ``write``: write the checked projects, workspaces and agents in batches.
- ``backup``: the copy of the input kept before an import writes.
- ``report``: ``ImportReport``, what an import did.
- ``selectors``: batched, locked reads of an import.
- ``export``: ``write_timeline``, the streamed JSONL writer.
"""
