"""Reading Paseo's own history stores, writing nothing.

A Paseo home keeps each agent's committed history in one of two places:

- ``agent-timelines/agent-<base64url(agent id), no padding>.json``: the
  current store, ``{"version": 1, "epoch", "rows": [{"seq", "timestamp",
  "item", "turnId"?}], "nextSeq"?}``. Rows ascend by seq but need not start at
  1: Paseo's bounded stores prune old rows.
- ``timelines.db``: the older SQLite cache, ``agent_timelines(agent_id, epoch,
  backfill_complete)`` and ``agent_timeline_rows(agent_id, seq, timestamp,
  item)``. Rows of an agent whose ``backfill_complete`` is 0 are not committed
  history and are never imported.

When an agent has both, the file wins, as in Paseo's own migration. Every
history becomes a ``PaseoHistory`` (read again, streamed, when it is
written), a ``Problem`` (invalid content), or a skipped entry with its reason.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from legacy.jsonl import check_epoch
from legacy.located import Checks, RecordErrors, load_json, problems_of
from legacy.problems import Problem, RecordError
from snapshots.models import AGENT_ID_RE
from timeline.items import LEGACY_ITEM_TYPE, contains_nul, item_json, item_problems
from timeline.rows import PaseoRow as PaseoShape
from timeline.rows import ReadRow, RowKeys, paseo_name, problem, read_row

AGENT_TIMELINES = "agent-timelines"
TIMELINES_DB = "timelines.db"
#: SQLite's companions of the database file: part of it, read with it.
TIMELINES_DB_COMPANIONS = ("timelines.db-wal", "timelines.db-shm", "timelines.db-journal")
FILE_PREFIX = "agent-"
PASEO_VERSION = 1


#: The row keys chartr models (``timeline.rows.PaseoRow``); every other key of a row goes to its ``extra``.
ROW_KEYS = frozenset(PaseoShape.__struct_encode_fields__)
_IDS = frozenset(paseo_name(name) for name in RowKeys.__struct_fields__[:3])


@dataclass(frozen=True)
class PaseoRow(ReadRow):
    """One committed Paseo row, with the keys chartr does not model (``extra``) as they were."""

    extra: dict = field(default_factory=dict)
    #: what was wrong with the original item, now wrapped in a ``legacy_item``
    problems: tuple[str, ...] = ()


@dataclass
class PaseoHistory:
    agent_id: str
    #: the file, or ``timelines.db``
    source: Path
    from_db: bool
    epoch: str
    #: the first retained seq; ``last_seq`` is first_seq - 1 when no row is retained
    first_seq: int
    last_seq: int
    #: the seq ranges ``(first, last)`` missing between first_seq and last_seq
    holes: list[tuple[int, int]] = field(default_factory=list)
    #: ``(seq, problems)`` of each item stored as a ``legacy_item``
    normalised: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)

    @property
    def row_count(self) -> int:
        return self.rows_between(self.first_seq, self.last_seq)

    def rows_between(self, low: int, high: int) -> int:
        """How many of its rows have a seq from ``low`` to ``high``."""
        if high < low:
            return 0
        missing = sum(max(0, min(high, last) - max(low, first) + 1) for first, last in self.holes)
        return high - low + 1 - missing

    def last_row_at_or_below(self, seq: int) -> int:
        """The seq of its last row at or below ``seq`` (``first_seq - 1`` when none)."""
        for first, last in self.holes:
            if first <= seq <= last:
                return first - 1
        return seq

    def rows(self) -> Iterator[PaseoRow]:
        """The rows again, from the store, in seq order."""
        if self.from_db:
            yield from _db_rows(self.source, self.agent_id)
        else:
            document = load_json(self.source)
            for index, raw in enumerate(document["rows"]):
                yield parse_row(raw, index=index)


@dataclass
class PaseoStores:
    histories: dict[str, PaseoHistory] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: "path: reason" for every history left out on purpose
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: rows of histories left out, by the agent they belonged to
    skipped_rows: int = 0


# --- names and rows -----------------------------------------------------------


def agent_id_from_file_name(name: str) -> str | None:
    """``agent-<base64url id>.json`` -> the id, or None when the name encodes none."""
    if not (name.startswith(FILE_PREFIX) and name.endswith(".json")):
        return None
    encoded = name[len(FILE_PREFIX) : -len(".json")]
    try:
        agent_id = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return agent_id if AGENT_ID_RE.fullmatch(agent_id) else None


def _normalised(item: dict) -> tuple[dict, tuple[str, ...]]:
    """``item``, or, when the API's own checks refuse it, a ``legacy_item`` wrapping it whole."""
    problems = tuple(item_problems(item))
    if not problems:
        return item, ()
    return {"type": LEGACY_ITEM_TYPE, "item": item, "problems": list(problems)}, problems


def _row_error(index: int, key: str, message: str) -> RecordErrors:
    """What is wrong with one key of ``rows[index]``, said where that key is written."""
    return RecordErrors([(("rows", index, key), message)])


#: What ``timestamp`` must be.
TIMESTAMP = "an ISO 8601 time or epoch milliseconds"


def parse_row(raw: Any, *, index: int) -> PaseoRow:
    """A Paseo row: its item checked as the API checks one (``_normalised``), every key kept."""
    if not isinstance(raw, dict):
        raise RecordError(f"rows[{index}] must be a JSON object")
    # Paseo writes an empty id for none.
    sent = {key: value for key, value in raw.items() if key in ROW_KEYS and not (key in _IDS and value == "")}
    try:
        row = msgspec.convert(sent, PaseoShape)
    except msgspec.ValidationError as exc:
        key, message = problem(exc, raw, PaseoShape, committed_at=TIMESTAMP)
        raise _row_error(index, key, f"rows[{index}].{message}") from None
    if contains_nul(raw):
        raise RecordError(f"rows[{index}] contains a NUL character (\\u0000), which chartr cannot store")
    item, problems = _normalised(row.item)
    extra = {key: value for key, value in raw.items() if key not in ROW_KEYS}
    return read_row(
        row,
        PaseoRow,
        committed_at=_committed_at(row.committed_at, raw, index),
        item=item,
        item_type=item["type"],
        extra=extra,
        extra_json=item_json(extra) if extra else None,
        problems=problems,
    )


def _committed_at(value: dt.datetime | float, raw: dict, index: int) -> dt.datetime:
    """A time without its offset is UTC, as every legacy time; a number is epoch milliseconds."""
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    try:
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        message = f"rows[{index}].timestamp must be {TIMESTAMP}, not {raw['timestamp']!r}"
        raise _row_error(index, "timestamp", message) from None


@dataclass
class _Seqs:
    """What reading a history's rows found: its seq range, its holes, its normalised items."""

    first: int | None = None
    last: int | None = None
    holes: list[tuple[int, int]] = field(default_factory=list)
    normalised: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)

    def history(
        self, agent_id: str, source: Path, epoch: str, *, from_db: bool, next_seq: int | None = None
    ) -> PaseoHistory:
        """The history these rows make; one retaining no row goes on at ``next_seq`` (1 without one)."""
        first = (next_seq or 1) if self.first is None else self.first
        last = first - 1 if self.last is None else self.last
        return PaseoHistory(agent_id, source, from_db, epoch, first, last, self.holes, self.normalised)


def _check_seqs(rows: Iterator[PaseoRow]) -> _Seqs:
    """The seqs of rows that must ascend; a hole between two is kept and reported, not refused."""
    seqs = _Seqs()
    for index, row in enumerate(rows):
        if seqs.last is not None and row.seq <= seqs.last:
            raise RecordErrors(
                [(("rows", index, "seq"), f"seq {row.seq} follows {seqs.last}: the rows' seqs must ascend")]
            )
        if seqs.last is not None and row.seq > seqs.last + 1:
            seqs.holes.append((seqs.last + 1, row.seq - 1))
        if row.problems:
            seqs.normalised.append((row.seq, row.problems))
        seqs.first = row.seq if seqs.first is None else seqs.first
        seqs.last = row.seq
    return seqs


# --- agent-timelines/*.json ---------------------------------------------------


def scan_history_files(directory: Path, stores: PaseoStores) -> None:
    if not directory.is_dir():
        return
    for path in sorted(directory.iterdir()):
        agent_id = agent_id_from_file_name(path.name) if path.is_file() else None
        if agent_id is None:
            stores.skipped.append(f"{path}: skipped, not an agent-<base64url id>.json history file")
            continue
        try:
            history = _read_history_file(path, agent_id)
        except _UnknownVersion as exc:
            stores.skipped.append(f"{path}: skipped, unknown version {exc.version!r} (expected {PASEO_VERSION})")
            continue
        except RecordError as exc:
            stores.problems += problems_of(path, exc)
            stores.skipped_rows += _row_count(path)
            continue
        stores.histories[agent_id] = history


def _row_count(path: Path) -> int:
    """The rows of a history file refused whole, for the report (0 when it has no readable rows)."""
    try:
        document = load_json(path)
    except RecordError:
        return 0
    rows = document.get("rows") if isinstance(document, dict) else None
    return len(rows) if isinstance(rows, list) else 0


class _UnknownVersion(RecordError):
    def __init__(self, version: Any):
        super().__init__(f"unknown version {version!r}")
        self.version = version


def _file_rows(rows: list) -> list[PaseoRow]:
    """Every row of a history file, or every problem of its rows (each on its line)."""
    checks, parsed = Checks(), []
    for index, raw in enumerate(rows):
        row = checks.run(("rows", index), parse_row, raw, index=index)
        if row is not None:
            parsed.append(row)
    checks.raise_any()
    return parsed


def _read_history_file(path: Path, agent_id: str) -> PaseoHistory:
    document = load_json(path)
    if not isinstance(document, dict):
        raise RecordError("a history file must hold a JSON object")
    if document.get("version") != PASEO_VERSION:
        raise _UnknownVersion(document.get("version"))
    epoch = check_epoch(document.get("epoch"))
    rows = document.get("rows")
    if not isinstance(rows, list):
        raise RecordError("rows must be a JSON array")
    seqs = _check_seqs(_file_rows(rows))
    next_seq = document.get("nextSeq")
    if next_seq is not None and (not isinstance(next_seq, int) or isinstance(next_seq, bool) or next_seq < 1):
        raise RecordError(f"nextSeq must be a positive integer, not {next_seq!r}")
    if seqs.last is not None and next_seq is not None and next_seq != seqs.last + 1:
        raise RecordError(f"nextSeq {next_seq} does not follow the last row's seq {seqs.last}")
    return seqs.history(agent_id, path, epoch, from_db=False, next_seq=next_seq)


# --- timelines.db ---------------------------------------------------------------


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def _db_rows(path: Path, agent_id: str) -> Iterator[PaseoRow]:
    with closing(_connect(path)) as connection:
        cursor = connection.execute(
            "SELECT seq, timestamp, item FROM agent_timeline_rows WHERE agent_id = ? ORDER BY seq", (agent_id,)
        )
        for index, (seq, timestamp, item) in enumerate(cursor):
            try:
                parsed_item = json.loads(item) if isinstance(item, str) else item
            except ValueError:
                raise RecordError(f"seq {seq}: item is not valid JSON") from None
            yield parse_row({"seq": seq, "timestamp": timestamp, "item": parsed_item}, index=index)


def scan_history_db(path: Path, stores: PaseoStores) -> None:
    """Histories of the SQLite cache that no current file overrides."""
    if not path.is_file():
        return
    try:
        with closing(_connect(path)) as connection:
            timelines = connection.execute("SELECT agent_id, epoch, backfill_complete FROM agent_timelines").fetchall()
            counts = dict(
                connection.execute("SELECT agent_id, COUNT(*) FROM agent_timeline_rows GROUP BY agent_id").fetchall()
            )
    except sqlite3.DatabaseError as exc:
        stores.problems.append(Problem(str(path), "", f"not a readable Paseo timelines.db: {exc}"))
        return
    known = set()
    for agent_id, epoch, backfill_complete in sorted(timelines, key=lambda t: str(t[0])):
        known.add(agent_id)
        _scan_db_history(path, stores, agent_id, epoch, backfill_complete, counts.get(agent_id, 0))
    for agent_id in sorted(set(counts) - known, key=str):
        stores.skipped.append(f"{path}: agent {agent_id!r}: skipped, rows without an agent_timelines entry (no epoch)")
        stores.skipped_rows += counts[agent_id]


def _scan_db_history(
    path: Path, stores: PaseoStores, agent_id: Any, epoch: Any, backfill_complete: Any, count: int
) -> None:
    where = f"{path}: agent {agent_id!r}"
    if not backfill_complete:
        stores.skipped.append(f"{where}: skipped, interrupted backfill: its {count} row(s) are not committed history")
        stores.skipped_rows += count
        return
    current = stores.histories.get(agent_id)
    if current is not None:
        stores.warnings.append(f"{where}: {count} cached row(s) ignored, the current file {current.source} wins")
        return
    if not isinstance(agent_id, str) or not AGENT_ID_RE.fullmatch(agent_id):
        stores.problems.append(Problem(str(path), f"agent {agent_id!r}", "not a valid agent id"))
        return
    try:
        epoch = check_epoch(epoch)
        seqs = _check_seqs(_db_rows(path, agent_id))
    except RecordError as exc:
        stores.problems.append(Problem(str(path), f"agent {agent_id!r}", str(exc)))
        stores.skipped_rows += count
        return
    stores.histories[agent_id] = seqs.history(agent_id, path, epoch, from_db=True)


def scan_paseo_stores(home: Path) -> PaseoStores:
    stores = PaseoStores()
    scan_history_files(home / AGENT_TIMELINES, stores)
    scan_history_db(home / TIMELINES_DB, stores)
    return stores
