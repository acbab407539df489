"""The chartr instance format (docs/portability.md): JSON Lines, one typed record per line.

Line 1 is the header (``{"format": "chartr.instance", "version": 1, ...}``); every later line
is a record whose ``type`` says what it is, in this order: ``project``, ``workspace``,
``agent``, then per agent ``timeline``, its ``row``s, its ``row_revision``s and ``timeline_end``, then
``claude_code_session``, ``api_token`` (only with ``--with-tokens``), ``import_run``, and last ``end`` with the
counts. A file whose
name ends in ``.gz`` is gzip-compressed. Reading is streamed: one line at a time.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from django.utils.dateparse import parse_datetime

FORMAT = "chartr.instance"
VERSION = 1
#: The kinds of record, in the order a file holds them, and the counts the ``end`` record gives; each
#: with the words the commands' progress names it by.
KINDS = {
    "project": "projects",
    "workspace": "workspaces",
    "agent": "agents",
    "timeline": "timelines",
    "row": "timeline rows",
    "row_revision": "earlier row versions",
    "claude_code_session": "Claude Code sessions",
    "api_token": "API tokens",
    "import_run": "legacy import runs",
}
#: Kinds added since version 1 of the format: a file written before them has no count for them
#: (in its header and its ``end``), which reads as 0.
ADDED_KINDS = frozenset({"claude_code_session"})


def counts_of(record: dict) -> dict | None:
    """The ``counts`` of a header or ``end`` record, a kind added since (``ADDED_KINDS``) left out
    reading as 0; None when they are not an object."""
    counts = record.get("counts")
    if not isinstance(counts, dict):
        return None
    return {**dict.fromkeys(ADDED_KINDS, 0), **counts}


class InstanceFileInvalid(Exception):
    """Bad input, named by file and line; nothing is imported."""

    def __init__(self, path: str, lineno: int | None, reason: str):
        where = f"{path}:{lineno}" if lineno else path
        super().__init__(f"{where}: {reason}")
        self.path, self.lineno, self.reason = path, lineno, reason


def canonical(record: dict) -> str:
    """A record as one line: compact JSON with sorted keys, so the same content is always the same text."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


def time_text(value: dt.datetime | None) -> str | None:
    """A time as the format writes it: ISO 8601 in UTC, microseconds kept."""
    return None if value is None else value.astimezone(dt.UTC).isoformat()


def parse_time(value: Any) -> dt.datetime | None:
    """A time the format wrote; ``ValueError`` for anything else (a time without its offset too)."""
    if value is None:
        return None
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None or parsed.tzinfo is None:
        raise ValueError(f"{value!r} is not an ISO 8601 time with its UTC offset")
    return parsed


def header(*, exported_at: dt.datetime, engine: str, with_tokens: bool, counts: dict[str, int]) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": time_text(exported_at),
        "engine": engine,
        "with_tokens": with_tokens,
        # What the instance held as the export began: the import's progress totals (``end`` has the real counts).
        "counts": counts,
    }


def open_file(path: Path, mode: str) -> IO:
    """``path`` in ``mode`` (``"wt"``: UTF-8 text, ``\\n`` line ends; or ``"rb"``), gzip-compressed when it ends in ``.gz``."""
    text = {"encoding": "utf-8", "newline": "\n"} if "t" in mode else {}
    return (gzip.open if path.suffix == ".gz" else open)(path, mode, **text)


@dataclass(frozen=True)
class Line:
    lineno: int
    record: dict

    @property
    def type(self) -> str:
        return self.record.get("type", "")


class Reader:
    """The records of a file, one line at a time, with one line of look-ahead (``peek``)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.name = str(path)
        self._handle = None
        self._lines: Iterator[Line] | None = None
        self._peeked: Line | None = None
        self.header: dict = {}

    def __enter__(self) -> Reader:
        try:
            self._handle = open_file(self.path, "rb")
        except OSError as exc:
            raise InstanceFileInvalid(self.name, None, f"cannot read: {exc.strerror or exc}") from None
        self._lines = self._read()
        first = next(self._lines, None)
        if first is None:
            raise InstanceFileInvalid(self.name, None, "empty: no header line")
        self.header = self._check_header(first)
        return self

    def __exit__(self, *exc_info) -> None:
        if self._handle is not None:
            self._handle.close()

    def error(self, line: Line | int | None, reason: str) -> InstanceFileInvalid:
        lineno = line.lineno if isinstance(line, Line) else line
        return InstanceFileInvalid(self.name, lineno, reason)

    def _read(self) -> Iterator[Line]:
        lineno = 0
        try:
            for lineno, raw in enumerate(self._handle, 1):  # noqa: B007 - lineno is read after the loop
                if not raw.endswith(b"\n"):
                    raise self.error(lineno, "the last line is cut short (no newline): the file is incomplete")
                try:
                    value = json.loads(raw)
                except (ValueError, RecursionError) as exc:
                    raise self.error(lineno, f"invalid JSON: {exc}") from None
                if not isinstance(value, dict):
                    raise self.error(lineno, "a record is a JSON object")
                yield Line(lineno, value)
        except (OSError, EOFError) as exc:  # a corrupt or truncated gzip stream
            raise self.error(lineno + 1, f"cannot read: {exc}") from None

    def _check_header(self, line: Line) -> dict:
        record = line.record
        if record.get("format") != FORMAT:
            raise self.error(line, f'not a chartr instance export: line 1 must be {{"format": "{FORMAT}", ...}}')
        if record.get("version") != VERSION:
            raise self.error(
                line, f"format version {record.get('version')!r} is not supported (this chartr reads {VERSION})"
            )
        counts = counts_of(record)
        if counts is None or not all(isinstance(counts.get(kind), int) for kind in KINDS):
            raise self.error(line, "the header's counts must give an integer for each of " + ", ".join(KINDS))
        return {**record, "counts": counts}

    def peek(self) -> Line | None:
        if self._peeked is None:
            self._peeked = next(self._lines, None)
        return self._peeked

    def next(self) -> Line | None:
        line = self.peek()
        self._peeked = None
        return line

    def take(self, kind: str) -> Iterator[Line]:
        """The records of ``kind`` from here on, until a record of another kind."""
        while (line := self.peek()) is not None and line.type == kind:
            yield self.next()

    def expect(self, kind: str) -> Line:
        line = self.next()
        if line is None:
            raise self.error(None, f"ends before its {kind!r} record: the file is incomplete")
        if line.type != kind:
            raise self.error(line, f"a {line.type!r} record where a {kind!r} record was expected")
        return line
