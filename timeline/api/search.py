"""``GET /api/v1/search``: the fleet search (timeline/search/fleet.py) on the API's lean path (kernel/api/plain.py).

Keyset-paged as every list is (kernel/api/pagination.py): the cursor is the
last agent's newest match time and id, scoped to the query and filters it
came from.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import msgspec
from django.core.exceptions import ValidationError

from kernel.api.pagination import MAX_CURSOR_CHARS
from kernel.api.plain import Answer, Operation, json_view
from kernel.api.schema_text import NUL_FREE
from kernel.api.serializers import INT64_MAX
from registry.models import Project, Workspace
from timeline.api.shapes import Timestamp, timestamp_renderer
from timeline.items import MAX_ITEM_TYPE_LENGTH
from timeline.search.base import MAX_QUERY_LENGTH
from timeline.search.fleet import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    FleetSearchPage,
    decode_key,
    encode_key,
    search_fleet,
    search_scope,
)
from tokens.access import authorize

Id = Annotated[int, msgspec.Meta(ge=1, le=INT64_MAX)]
Time = Annotated[dt.datetime, msgspec.Meta(tz=True)]
#: Where the cursor's scope says it belongs, as a list's path does.
SCOPE_NAME = "api"


class SearchQuery(msgspec.Struct, forbid_unknown_fields=True):
    q: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=MAX_QUERY_LENGTH,
            # Text without NUL (kernel/api/schema_text.py) holding a word character, as the server reads words.
            pattern=NUL_FREE + r"[\s\S]*\w",
            description="Words that must all occur in a row's text (its item's string values, any case); \"quoted "
            'words" must occur together, in that order. Punctuation separates words.',
        ),
    ]
    project_id: Annotated[Id, msgspec.Meta(description="Only the agents of this project.")] | None = None
    workspace_id: Annotated[Id, msgspec.Meta(description="Only the agents of this workspace.")] | None = None
    item_type: (
        Annotated[
            str,
            msgspec.Meta(min_length=1, max_length=MAX_ITEM_TYPE_LENGTH, description="Only rows of this item type."),
        ]
        | None
    ) = None
    since: Annotated[Time, msgspec.Meta(description="Only rows committed at or after this time.")] | None = None
    until: Annotated[Time, msgspec.Meta(description="Only rows committed before this time.")] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT, description="Agents per page.")] = DEFAULT_LIMIT
    cursor: (
        Annotated[
            str,
            msgspec.Meta(
                max_length=MAX_CURSOR_CHARS,
                description="The `next_cursor` of the previous page, with the same query and filters. Omit for the "
                "first page. A cursor of another query or other filters is a 400 `invalid` on `cursor`.",
            ),
        ]
        | None
    ) = None


class AgentMatches(msgspec.Struct):
    agent_id: str
    title: str
    workspace_id: int
    project_id: int
    match_count: Annotated[int, msgspec.Meta(description="The agent's rows that match.")]
    newest_seq: Annotated[int, msgspec.Meta(description="The seq of the agent's newest matching row.")]
    newest_committed_at: Annotated[Timestamp, msgspec.Meta(description="When the newest matching row was committed.")]


class SearchPage(msgspec.Struct):
    results: Annotated[list[AgentMatches], msgspec.Meta(description="Agents, the newest match first.")]
    next_cursor: Annotated[
        str | None, msgspec.Meta(description="Pass as `cursor` to get the next page; null on the last page.")
    ]


def _utc(value: dt.datetime | None) -> dt.datetime | None:
    """``value`` in UTC; a time beyond what UTC can spell (9999-12-31T23:00-05:00) is the latest
    (or earliest) time it can."""
    if value is None:
        return None
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:
        return (dt.datetime.max if value.year == dt.MAXYEAR else dt.datetime.min).replace(tzinfo=dt.UTC)


def _scope(query: SearchQuery) -> str:
    names = ("q", "project_id", "workspace_id", "item_type", "since", "until")
    return search_scope(SCOPE_NAME, {name: getattr(query, name) for name in names})


def _check_filters(query: SearchQuery, since: dt.datetime | None, until: dt.datetime | None) -> None:
    """A filter that can match nothing is a mistake to name, not an empty page: an unknown project
    or workspace, or a time range that ends before it starts."""
    fields: dict[str, list[str]] = {}
    if query.project_id is not None and not Project.objects.filter(pk=query.project_id).exists():
        fields["project_id"] = ["No project has this id."]
    if query.workspace_id is not None and not Workspace.objects.filter(pk=query.workspace_id).exists():
        fields["workspace_id"] = ["No workspace has this id."]
    if since is not None and until is not None and since >= until:
        fields["until"] = ["Must be later than since."]
    if fields:
        raise ValidationError(fields, code="invalid")


def search(*, query: SearchQuery) -> Answer:
    since, until = _utc(query.since), _utc(query.until)
    _check_filters(query, since, until)
    scope = _scope(query)
    after = decode_key(query.cursor, scope=scope) if query.cursor else None
    page = search_fleet(
        query=query.q,
        project_id=query.project_id,
        workspace_id=query.workspace_id,
        item_types=[query.item_type] if query.item_type else [],
        since=since,
        until=until,
        limit=query.limit,
        after=after,
    )
    return Answer(search_document(page, scope=scope))


def search_document(page: FleetSearchPage, *, scope: str) -> SearchPage:
    render_timestamp = timestamp_renderer()
    return SearchPage(
        results=[
            AgentMatches(
                agent_id=group.agent.agent_id,
                title=group.agent.title,
                workspace_id=group.agent.workspace_id,
                project_id=group.agent.workspace.project_id,
                match_count=group.match_count,
                newest_seq=group.newest_seq,
                newest_committed_at=render_timestamp(group.newest_at),
            )
            for group in page.groups
        ],
        next_cursor=None if page.next_key is None else encode_key(page.next_key, scope=scope),
    )


fleet_search = json_view(
    Operation(
        "GET",
        search,
        operation_id="search",
        summary="Search the text of every agent's timeline",
        description=(
            "The agents with rows whose text holds every word of `q`, each with its match count and its newest "
            "matching row (`newest_seq`: read it with `GET /api/v1/agents/{agent_id}/timeline?direction=before"
            "&seq=<newest_seq + 1>`), the newest match first; the filters narrow the rows searched. An unknown "
            "`project_id` or `workspace_id`, or an `until` at or before `since`, is a 400 `invalid` naming it. "
            "Keyset-paged: `next_cursor`, as every list."
        ),
        query=SearchQuery,
        responses={200: SearchPage},
        tags=("timeline",),
    ),
    authorize=authorize,
)
