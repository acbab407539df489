"""Reads of an agent's committed timeline.

Every read is a range scan of the (agent, seq) unique index bounded by
``limit`` (``limit=0``, every row of the window: by ``CHARTR_TIMELINE_READ_ALL_MAX_ROWS``),
so its cost does not grow with the length of the history. The
retained rows lie between ``min_seq`` and ``head_seq`` (``RetainedRange``, the
one place that knows what a timeline still holds), contiguous unless an imported
history had holes, which lets ``has_older``/``has_newer`` be answered from the
page itself without counting anything; a page spanning a hole lists it in ``holes``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from kernel.errors import NotFound
from snapshots.models import AgentSnapshot
from timeline.errors import TooManyRows
from timeline.models import TimelineRow, has_revert_token
from timeline.reads.page_sql import page_sql
from timeline.reads.projection import project_rows
from timeline.search import timeline_search
from timeline.search.base import query_terms

Direction = Literal["tail", "before", "after"]
Projection = Literal["canonical", "projected"]
DEFAULT_READ_LIMIT = 200
MAX_READ_LIMIT = 1000


@dataclass(frozen=True)
class RetainedRange:
    """The rows a timeline still holds: ``min_seq..head_seq``, contiguous.

    ``min_seq`` is 1 until older rows are pruned (an imported Paseo history
    that starts later, or a trim); an empty range has ``min_seq == head_seq + 1``.
    Every read and the live stream decide what a cursor means here, and only here.
    """

    min_seq: int
    head_seq: int
    #: The rows it holds (the agent's ``committed_rows``), when the reader knows it.
    committed_rows: int | None = None

    @property
    def has_holes(self) -> bool:
        """Whether seqs are missing between ``min_seq`` and ``head_seq``: an imported
        history that had holes (legacy.paseo) keeps its rows at their own seqs."""
        return self.committed_rows is not None and self.committed_rows < self.head_seq - self.min_seq + 1

    def holes_in(self, seqs: list[int], *, low: int, high: int) -> list[list[int]]:
        """The missing seq ranges ``[first, last]`` between ``low`` and ``high`` (both
        within the retained range) for the ascending ``seqs`` read there."""
        if not self.has_holes:
            return []
        holes, expected = [], max(low, self.min_seq)
        for seq in seqs:
            if seq > expected:
                holes.append([expected, seq - 1])
            expected = seq + 1
        if expected <= min(high, self.head_seq):
            holes.append([expected, min(high, self.head_seq)])
        return holes

    @property
    def next_seq(self) -> int:
        """The seq the next committed row will get."""
        return self.head_seq + 1

    @property
    def is_empty(self) -> bool:
        return self.min_seq > self.head_seq

    def gap_after(self, after_seq: int) -> bool:
        """Whether rows right after ``after_seq`` are no longer retained, so
        a client at that cursor cannot continue without missing rows."""
        return after_seq < self.min_seq - 1

    def window(self) -> dict[str, int]:
        """Paseo's ``window``: the bounds of the whole timeline, not of a page; ``min_seq`` is 0
        when nothing is retained, as Paseo's stores answer."""
        return {"min_seq": 0 if self.is_empty else self.min_seq, "max_seq": self.head_seq, "next_seq": self.next_seq}


@dataclass(frozen=True)
class TimelinePage:
    agent_id: str
    epoch: str
    retained: RetainedRange
    direction: Direction
    rows: list[dict]
    has_older: bool
    has_newer: bool
    reset: bool
    #: the client's epoch is not the agent's: its cursor belongs to another history
    stale_cursor: bool = False
    #: the client's ``after`` cursor lies below the retained rows
    gap: bool = False
    #: each row's ``item`` is the stored JSON text, not decoded (``read_timeline(items_as_json=True)``)
    items_as_json: bool = False
    #: the missing seq ranges ``[first, last]`` the page spans (only an imported history has any)
    holes: list[list[int]] = field(default_factory=list)
    #: a backfill is under way (``timeline.writes.history.begin_backfill``): the rows are not yet the whole conversation
    backfilling: bool = False
    #: the first and last seq of the canonical rows the page covers (None when it has none); a projected
    #: entry overlapping them is answered whole, so it may start before ``start_seq`` or end after ``end_seq``
    start_seq: int | None = None
    end_seq: int | None = None


def get_agent_for_timeline(*, agent_id: str) -> AgentSnapshot:
    # order_by(): a primary-key lookup needs no ORDER BY (first() would add one).
    found = list(AgentSnapshot.objects.filter(pk=agent_id).only("agent_id", "archived_at").order_by()[:1])
    if not found:
        raise NotFound(f"Agent {agent_id} does not exist.")
    return found[0]


def rows_after(*, agent_id: str, after_seq: int, limit: int) -> list[TimelineRow]:
    """Committed rows with seq > after_seq, ascending. The live stream's catch-up read.

    Each has ``has_revert_token``: the JSON field reads a null token (JSON null) and none (SQL NULL) alike."""
    rows = TimelineRow.objects.filter(agent_id=agent_id, seq__gt=after_seq).order_by("seq")
    has_token = has_revert_token()
    return list(rows.annotate(has_revert_token=has_token)[:limit])


#: How far a projected page looks past its own rows for the rest of an entry that overlaps it.
PROJECTED_CONTEXT_ROWS = 500


def check_read_arguments(*, projection: str, limit: int, seq: int | None) -> None:
    if projection not in ("canonical", "projected"):
        raise ValidationError({"projection": ["Use canonical or projected."]}, code="invalid")
    if not 0 <= limit <= MAX_READ_LIMIT:
        raise ValidationError({"limit": [f"limit is between 0 (every row) and {MAX_READ_LIMIT}."]}, code="invalid")
    if seq is not None and seq < 0:
        raise ValidationError({"seq": ["seq is 0 or more."]}, code="invalid")


def read_timeline(
    *,
    agent_id: str,
    direction: Direction = "tail",
    seq: int | None = None,
    limit: int = DEFAULT_READ_LIMIT,
    epoch: str | None = None,
    projection: Projection = "canonical",
    items_as_json: bool = False,
) -> TimelinePage:
    """A page of the agent's committed rows, as plain dicts of ROW_FIELDS (or projected entries).

    With ``items_as_json`` each canonical row's ``item`` is left as the JSON
    text the database holds, for a caller that only writes it out again (the
    API): decoding and re-encoding it was most of a page's cost. Projected
    entries always decode their items, to merge them.
    """
    if direction not in ("tail", "before", "after"):
        raise ValidationError({"direction": ["Use tail, before or after."]}, code="invalid")
    check_read_arguments(projection=projection, limit=limit, seq=seq)

    statements = page_sql()
    asked = (direction, seq)
    every_row, limit = limit == 0, limit or settings.CHARTR_TIMELINE_READ_ALL_MAX_ROWS + 1
    keep_json = items_as_json and projection == "canonical"
    found, rows = statements.agent_and_rows(agent_id, direction, seq, limit, decode_items=not keep_json)
    if found is None:
        raise NotFound(f"Agent {agent_id} does not exist.")
    head_seq, min_seq, agent_epoch, committed_rows, backfilling = found
    retained = RetainedRange(min_seq=min_seq, head_seq=head_seq, committed_rows=committed_rows)
    stale_cursor = epoch is not None and epoch != agent_epoch
    direction, seq, gap = _cursor_to_read(retained, direction, seq, stale_cursor=stale_cursor)

    if rows is None or (direction, seq) != asked:
        rows = statements.rows(agent_id, direction, seq, limit, decode_items=not keep_json)
    if every_row and len(rows) == limit:  # every row, up to the bound: one more was read to tell
        raise TooManyRows.for_window(limit - 1)
    has_older, has_newer = _page_neighbours(rows, retained, direction, seq)
    holes = _page_holes(rows, retained, direction, seq)
    entries = rows
    if projection == "projected":
        entries = _projected_whole(statements, agent_id, rows)
    return TimelinePage(
        agent_id=agent_id,
        epoch=agent_epoch,
        retained=retained,
        direction=direction,
        rows=entries,
        has_older=has_older,
        has_newer=has_newer,
        reset=stale_cursor or gap,
        stale_cursor=stale_cursor,
        gap=gap,
        items_as_json=keep_json,
        holes=holes,
        # SQLite hands the column back as 0 or 1.
        backfilling=bool(backfilling),
        start_seq=rows[0]["seq"] if rows else None,
        end_seq=rows[-1]["seq"] if rows else None,
    )


def _projected_whole(statements, agent_id: str, rows: list[dict]) -> list[dict]:
    """The projected entries that overlap the page's rows, each whole, as Paseo's
    ``selectProjectedTimelinePage`` answers them: a cursor inside an assistant message still gets
    the whole message. The fold reads up to PROJECTED_CONTEXT_ROWS rows on each side of the page."""
    if not rows:
        return []
    first, last = rows[0]["seq"], rows[-1]["seq"]
    before = statements.rows(agent_id, "before", first, PROJECTED_CONTEXT_ROWS, decode_items=True)
    after = statements.rows(agent_id, "after", last, PROJECTED_CONTEXT_ROWS, decode_items=True)
    entries = project_rows([*before, *rows, *after])
    return [entry for entry in entries if entry["seq_start"] <= last and entry["seq_end"] >= first]


def _page_holes(rows: list[dict], retained: RetainedRange, direction: Direction, seq: int | None) -> list[list[int]]:
    """The holes between the cursor and the page's far end (none when the history has none)."""
    if not rows or not retained.has_holes:
        return []
    seqs = [row["seq"] for row in rows]
    low = seq + 1 if direction == "after" and seq is not None else seqs[0]
    high = seq - 1 if direction == "before" and seq is not None else seqs[-1]
    return retained.holes_in(seqs, low=low, high=high)


def _cursor_to_read(
    retained: RetainedRange, direction: Direction, seq: int | None, *, stale_cursor: bool
) -> tuple[Direction, int | None, bool]:
    """The direction and seq to read for the client's cursor, and whether it fell into a gap."""
    if seq is None and direction != "tail":
        # Without a seq, `after` reads from the first retained row and `before` from the head.
        seq = retained.min_seq - 1 if direction == "after" else retained.head_seq + 1
    if stale_cursor:
        # The history was replaced: the client's seqs mean nothing now, so it
        # gets a fresh tail instead of silently wrong rows.
        return "tail", None, False
    if direction == "after" and retained.gap_after(seq):
        # The rows right after the cursor are gone: the client must drop what it
        # holds, and gets a fresh tail, as for a stale epoch (Paseo's bounded reset window).
        return "tail", None, True
    return direction, seq, False


def _page_neighbours(
    rows: list[dict], retained: RetainedRange, direction: Direction, seq: int | None
) -> tuple[bool, bool]:
    """(has_older, has_newer): whether retained rows lie before and after the page."""
    if rows:
        return rows[0]["seq"] > retained.min_seq, rows[-1]["seq"] < retained.head_seq
    if retained.is_empty or direction == "tail":
        return False, False
    if direction == "before":
        # Nothing retained below seq: whatever is retained is at seq or above.
        return False, retained.head_seq >= seq
    # Nothing retained above seq: whatever is retained is at seq or below.
    return seq >= retained.min_seq, False


# --- Browsing: the admin's timeline page ---------------------------------------
#
# Every read below is bounded by its limit through an index: (agent, seq) for
# pages, (agent, item_type, seq) once per wanted type for filtered pages (merged
# here), (agent, committed_at, seq) for a jump to a time. Only a text search
# costs more: it reads the search index's matches for the words (timeline/search/).

Browse = Literal["tail", "before", "after", "around"]


@dataclass(frozen=True)
class BrowsePage:
    """Rows of one agent in ascending seq, possibly of some item types only."""

    rows: list[TimelineRow]
    head_seq: int
    has_older: bool
    has_newer: bool

    @property
    def min_seq(self) -> int | None:
        return self.rows[0].seq if self.rows else None

    @property
    def max_seq(self) -> int | None:
        return self.rows[-1].seq if self.rows else None

    @property
    def through(self) -> int:
        """For a tail or an ``after`` read: the seq up to which it holds every row of its types
        (a live tail goes on after it). ``head_seq`` was read before the rows, so all rows up
        to it were there to be read; when more rows were left (``has_newer``) only up to the
        last one read. Rows read beyond it come again in the next read, and are dropped there."""
        if self.has_newer and self.max_seq is not None:
            return min(self.max_seq, self.head_seq)
        return self.head_seq


def _rows_of_types(agent_id: str, item_types: Sequence[str]) -> list[QuerySet]:
    rows = TimelineRow.objects.filter(agent_id=agent_id)
    return [rows.filter(item_type=item_type) for item_type in sorted(set(item_types))] or [rows]


def _older(querysets: list[QuerySet], *, below: int | None, limit: int) -> tuple[list[TimelineRow], bool]:
    """Up to ``limit`` rows with seq < ``below`` (all when None), ascending, and whether there are more.

    Each queryset is read through its own index range, at most ``limit + 1`` rows."""
    if below is not None:
        querysets = [queryset.filter(seq__lt=below) for queryset in querysets]
    found = [row for queryset in querysets for row in queryset.order_by("-seq")[: limit + 1]]
    found.sort(key=lambda row: row.seq, reverse=True)
    return found[:limit][::-1], len(found) > limit


def _newer(querysets: list[QuerySet], *, above: int, limit: int) -> tuple[list[TimelineRow], bool]:
    """Up to ``limit`` rows with seq > ``above``, ascending, and whether there are more."""
    found = [row for queryset in querysets for row in queryset.filter(seq__gt=above).order_by("seq")[: limit + 1]]
    found.sort(key=lambda row: row.seq)
    return found[:limit], len(found) > limit


def _exists(querysets: list[QuerySet], *, nearest: str, **bound) -> bool:
    """Whether any queryset has a row within ``bound``; ordered by ``nearest`` so the
    database reads one index entry instead of choosing to scan the table."""
    return any(queryset.filter(**bound).order_by(nearest).values_list("seq")[:1] for queryset in querysets)


def browse_timeline(
    *, agent: AgentSnapshot, item_types: Sequence[str] = (), direction: Browse = "tail", seq: int = 0, limit: int = 50
) -> BrowsePage:
    """A page of ``agent``'s rows (only of ``item_types`` when given): the newest
    (``tail``), those just before or after ``seq``, or those ``around`` it: ``seq``
    itself when it is one of them, up to half a page before it and the rest after.

    The head is read first: every row up to ``head_seq`` was committed before the rows
    were read, so a live tail that goes on from ``head_seq`` (``BrowsePage.through``)
    misses no row committed meanwhile."""
    head_seq = agent.timeline_head.head_seq
    querysets = _rows_of_types(agent.pk, item_types)
    if direction == "tail":
        rows, has_older = _older(querysets, below=None, limit=limit)
        has_newer = False
    elif direction == "before":
        rows, has_older = _older(querysets, below=seq, limit=limit)
        has_newer = _exists(querysets, nearest="seq", seq__gte=seq)
    elif direction == "after":
        rows, has_newer = _newer(querysets, above=seq, limit=limit)
        has_older = _exists(querysets, nearest="-seq", seq__lte=seq)
    else:
        older, has_older = _older(querysets, below=seq + 1, limit=limit - limit // 2)
        newer, has_newer = _newer(querysets, above=seq, limit=limit - len(older))
        rows = older + newer
    return BrowsePage(rows=rows, head_seq=head_seq, has_older=has_older, has_newer=has_newer)


#: How far before a read ``earlier_tool_call_rows`` looks for the first rows of its tool calls.
TOOL_CALL_LOOKBACK = 200


def earlier_tool_call_rows(
    *, agent_id: str, rows: Sequence[TimelineRow], lookback: int = TOOL_CALL_LOOKBACK
) -> list[TimelineRow]:
    """The agent's ``tool_call`` rows among the ``lookback`` seqs just before ``rows`` (ascending)
    that have a ``callId`` of a tool call in ``rows``: the earlier states of the calls a read shows.

    One range of the (agent, item_type, seq) index, at most ``lookback`` rows, whatever the
    history's length; a call that started further back shows the states from there on."""
    call_ids = sorted(
        {
            row.item["callId"]
            for row in rows
            if row.item_type == "tool_call" and isinstance(row.item, dict) and isinstance(row.item.get("callId"), str)
        }
    )
    if not call_ids:
        return []
    first = rows[0].seq
    return list(
        TimelineRow.objects.filter(
            agent_id=agent_id, item_type="tool_call", seq__lt=first, seq__gte=max(1, first - lookback)
        )
        .filter(item__callId__in=call_ids)
        .order_by("seq")
    )


def seq_at_or_after_time(*, agent_id: str, at: dt.datetime) -> int | None:
    """The seq of the agent's first row committed at or after ``at``, or None."""
    return (
        TimelineRow.objects.filter(agent_id=agent_id, committed_at__gte=at)
        .order_by("committed_at", "seq")
        .values_list("seq", flat=True)
        .first()
    )


SearchDirection = Literal["newest", "before", "after"]


def find_match(
    *,
    agent_id: str,
    query: str,
    item_types: Sequence[str] = (),
    direction: SearchDirection = "newest",
    seq: int = 0,
) -> int | None:
    """The seq of the agent's newest row whose text holds every word of ``query``
    (``newest``), or of the nearest such row before or after ``seq``; None when
    there is none, or when ``query`` has no word in it."""
    terms = query_terms(query)
    if not terms:
        return None
    rows = TimelineRow.objects.filter(agent_id=agent_id)
    if item_types:
        rows = rows.filter(item_type__in=sorted(set(item_types)))
    if direction == "before":
        rows = rows.filter(seq__lt=seq)
    elif direction == "after":
        rows = rows.filter(seq__gt=seq)
    search = timeline_search()
    matches = search.order_matches(search.filter_matches(rows, terms), newest_first=direction != "after")
    return next(iter(matches.values_list("seq", flat=True)[:1]), None)
