"""Bringing a legacy (file-based) home directory into chartr, and the timeline JSONL format.

- ``records``: parse and validate ``projects/*.json`` and ``agents/**.json``.
- ``jsonl``: the timeline JSONL format, read streamed, line by line.
- ``services``: ``import_legacy``, the one write path of an import.
- ``export``: ``write_timeline``, the streamed JSONL writer.
"""
