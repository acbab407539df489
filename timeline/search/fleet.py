"""Search the text of every agent's timeline at once: the admin's fleet search and ``GET /api/v1/search``.

One grouped query over the engine's search index (``timeline_search()``: FTS5
on SQLite, the GIN index on PostgreSQL) gives each agent with a match its
match count, its newest match's commit time and seq; one more query reads
those agents with their workspace and project. Agents come newest match
first (ties by agent id, descending), keyset-paged on that pair.

The cost is the query words' matches, never the timeline's rows: the matches
are read from the search index (the filters by item type and time narrow
them, the filters by project and workspace join the matches to their agent
by its key), grouped, and only the page of agents is read beyond them.
``tests/timeline/test_browse_at_scale.py`` shows the plans at a
million rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Q

from kernel.api.pagination import decode_cursor, encode_cursor, list_scope
from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow
from timeline.search import timeline_search
from timeline.search.base import MAX_QUERY_LENGTH, query_terms

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: The most item types one search filters by.
MAX_ITEM_TYPES = 20
#: The fields a cursor holds: the last agent's newest match time and its id.
CURSOR_FIELDS = (TimelineRow._meta.get_field("committed_at"), AgentSnapshot._meta.get_field("agent_id"))


@dataclass(frozen=True)
class AgentMatches:
    """One agent's matches: how many, and the newest (the row a result links to)."""

    agent: AgentSnapshot
    match_count: int
    newest_seq: int
    newest_at: dt.datetime


@dataclass(frozen=True)
class FleetSearchPage:
    groups: list[AgentMatches]
    #: ``(newest_at, agent_id)`` of the page's last agent when more follow, else None.
    next_key: tuple[dt.datetime, str] | None


def check_search_arguments(*, query: str, item_types: Sequence[str], limit: int) -> list[list[str]]:
    """The query's terms, or a ``ValidationError`` naming what is wrong."""
    if len(query) > MAX_QUERY_LENGTH:
        raise ValidationError({"q": [f"Ensure this has at most {MAX_QUERY_LENGTH} characters."]}, code="invalid")
    terms = query_terms(query)
    if not terms:
        raise ValidationError({"q": ["Give at least one word to search for."]}, code="invalid")
    if len(item_types) > MAX_ITEM_TYPES:
        raise ValidationError({"item_type": [f"Give at most {MAX_ITEM_TYPES} item types."]}, code="invalid")
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationError({"limit": [f"limit is between 1 and {MAX_LIMIT}."]}, code="invalid")
    return terms


def search_fleet(
    *,
    query: str,
    project_id: int | None = None,
    workspace_id: int | None = None,
    item_types: Sequence[str] = (),
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    limit: int = DEFAULT_LIMIT,
    after: tuple[dt.datetime, str] | None = None,
) -> FleetSearchPage:
    """The agents whose rows hold every word of ``query`` (committed at or after ``since`` and
    before ``until``, of ``item_types``, in the project or workspace), newest match first,
    after the key ``after`` (a page's ``next_key``). A ``since`` at or after ``until`` matches nothing."""
    terms = check_search_arguments(query=query, item_types=item_types, limit=limit)
    rows = TimelineRow.objects.all()
    if item_types:
        rows = rows.filter(item_type__in=sorted(set(item_types)))
    if since is not None:
        rows = rows.filter(committed_at__gte=since)
    if until is not None:
        rows = rows.filter(committed_at__lt=until)
    if workspace_id is not None:
        rows = rows.filter(agent__workspace_id=workspace_id)
    if project_id is not None:
        rows = rows.filter(agent__workspace__project_id=project_id)
    groups = (
        timeline_search()
        .filter_matches(rows, terms)
        .order_by()
        .values("agent_id")
        .annotate(match_count=Count("id"), newest_at=Max("committed_at"), newest_seq=Max("seq"))
    )
    if after is not None:
        at, agent_id = after
        groups = groups.filter(Q(newest_at__lt=at) | Q(newest_at=at, agent_id__lt=agent_id))
    found = list(groups.order_by("-newest_at", "-agent_id")[: limit + 1])
    page = found[:limit]
    agents = (
        AgentSnapshot.objects.select_related("workspace__project")
        .order_by()
        .in_bulk([group["agent_id"] for group in page])
    )
    result = [
        AgentMatches(
            agent=agents[group["agent_id"]],
            match_count=group["match_count"],
            newest_seq=group["newest_seq"],
            newest_at=group["newest_at"],
        )
        for group in page
        if group["agent_id"] in agents  # deleted between the two reads
    ]
    next_key = (page[-1]["newest_at"], page[-1]["agent_id"]) if len(found) > limit else None
    return FleetSearchPage(groups=result, next_key=next_key)


def search_scope(where: str, filters: dict[str, object]) -> str:
    """The scope a cursor carries: where it is used (the API, the admin page) and the filters given."""
    return list_scope(where, None, [(name, [str(value)]) for name, value in filters.items() if value not in (None, "")])


def encode_key(key: tuple[dt.datetime, str], *, scope: str) -> str:
    """A page's ``next_key`` as the opaque cursor every list hands out (kernel/api/pagination.py)."""
    return encode_cursor(list(key), scope=scope)


def decode_key(cursor: str, *, scope: str) -> tuple[dt.datetime, str]:
    """The key ``encode_key`` wrote; a 400 ``invalid`` on ``cursor`` for anything else."""
    at, agent_id = decode_cursor(cursor, list(CURSOR_FIELDS), scope=scope)
    return at, agent_id
