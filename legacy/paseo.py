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

from legacy.problems import Problem, RecordError
from legacy.records import load_json, parse_time, problem_for
from snapshots.models import AGENT_ID_RE
from timeline.items import contains_nul
from timeline.models import EPOCH_MAX_LENGTH, TimelineRow

AGENT_TIMELINES = "agent-timelines"
TIMELINES_DB = "timelines.db"
#: SQLite's companions of the database file: part of it, read with it.
TIMELINES_DB_COMPANIONS = ("timelines.db-wal", "timelines.db-shm", "timelines.db-journal")
FILE_PREFIX = "agent-"
PASEO_VERSION = 1

_EPOCH_MAX = EPOCH_MAX_LENGTH
_ITEM_TYPE_MAX = TimelineRow._meta.get_field("item_type").max_length
_TURN_ID_MAX = TimelineRow._meta.get_field("turn_id").max_length


@dataclass(frozen=True)
class PaseoRow:
    """One committed Paseo row, as ``timeline.services.bulk_append_timeline_rows`` takes it."""

    seq: int
    committed_at: dt.datetime
    item: dict
    item_type: str
    turn_id: str | None
    item_id: str | None = None


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

    @property
    def row_count(self) -> int:
        return self.last_seq - self.first_seq + 1

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


def _timestamp(value: Any) -> dt.datetime:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # The SQLite cache may hold epoch milliseconds.
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    return parse_time(value, "timestamp", required=True)


def parse_row(raw: Any, *, index: int) -> PaseoRow:
    """A Paseo row; keys chartr has no place for are ignored."""
    if not isinstance(raw, dict):
        raise RecordError(f"rows[{index}] must be a JSON object")
    seq = raw.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise RecordError(f"rows[{index}].seq must be a positive integer, not {seq!r}")
    item = raw.get("item")
    if not isinstance(item, dict):
        raise RecordError(f"rows[{index}].item must be a JSON object")
    item_type = item.get("type")
    if not isinstance(item_type, str) or not item_type or len(item_type) > _ITEM_TYPE_MAX:
        raise RecordError(f'rows[{index}].item must have a "type" string of 1 to {_ITEM_TYPE_MAX} characters')
    turn_id = raw.get("turnId")
    if turn_id is not None and (not isinstance(turn_id, str) or len(turn_id) > _TURN_ID_MAX):
        raise RecordError(f"rows[{index}].turnId must be null or a string of at most {_TURN_ID_MAX} characters")
    if contains_nul(item) or (turn_id is not None and "\x00" in turn_id):
        raise RecordError(f"rows[{index}] contains a NUL character (\\u0000), which chartr cannot store")
    try:
        committed_at = _timestamp(raw.get("timestamp"))
    except (RecordError, OverflowError, OSError, ValueError) as exc:
        raise RecordError(f"rows[{index}].{exc}") from None
    return PaseoRow(seq=seq, committed_at=committed_at, item=item, item_type=item_type, turn_id=turn_id or None)


def _check_epoch(epoch: Any) -> str:
    if not isinstance(epoch, str) or not epoch or len(epoch) > _EPOCH_MAX or "\x00" in epoch:
        raise RecordError(f"epoch must be a string of 1 to {_EPOCH_MAX} characters")
    return epoch


def _check_seqs(rows: Iterator[PaseoRow]) -> tuple[int | None, int | None]:
    """(first seq, last seq) of rows that must ascend without a hole."""
    first = last = None
    for row in rows:
        if last is not None and row.seq != last + 1:
            raise RecordError(f"seq {row.seq} follows {last}: the retained rows must be contiguous")
        first = row.seq if first is None else first
        last = row.seq
    return first, last


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
            stores.problems.append(problem_for(path, exc))
            continue
        stores.histories[agent_id] = history


class _UnknownVersion(RecordError):
    def __init__(self, version: Any):
        super().__init__(f"unknown version {version!r}")
        self.version = version


def _read_history_file(path: Path, agent_id: str) -> PaseoHistory:
    document = load_json(path)
    if not isinstance(document, dict):
        raise RecordError("a history file must hold a JSON object")
    if document.get("version") != PASEO_VERSION:
        raise _UnknownVersion(document.get("version"))
    epoch = _check_epoch(document.get("epoch"))
    rows = document.get("rows")
    if not isinstance(rows, list):
        raise RecordError("rows must be a JSON array")
    first, last = _check_seqs(parse_row(raw, index=index) for index, raw in enumerate(rows))
    next_seq = document.get("nextSeq")
    if next_seq is not None and (not isinstance(next_seq, int) or isinstance(next_seq, bool) or next_seq < 1):
        raise RecordError(f"nextSeq must be a positive integer, not {next_seq!r}")
    if first is None:
        # Nothing retained: the history still goes on at nextSeq.
        first = next_seq or 1
        last = first - 1
    elif next_seq is not None and next_seq != last + 1:
        raise RecordError(f"nextSeq {next_seq} does not follow the last row's seq {last}")
    return PaseoHistory(agent_id=agent_id, source=path, from_db=False, epoch=epoch, first_seq=first, last_seq=last)


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
        epoch = _check_epoch(epoch)
        first, last = _check_seqs(_db_rows(path, agent_id))
    except RecordError as exc:
        stores.problems.append(Problem(str(path), f"agent {agent_id!r}", str(exc)))
        return
    first = first or 1
    last = first - 1 if last is None else last
    stores.histories[agent_id] = PaseoHistory(
        agent_id=agent_id, source=path, from_db=True, epoch=epoch, first_seq=first, last_seq=last
    )


def scan_paseo_stores(home: Path) -> PaseoStores:
    stores = PaseoStores()
    scan_history_files(home / AGENT_TIMELINES, stores)
    scan_history_db(home / TIMELINES_DB, stores)
    return stores
