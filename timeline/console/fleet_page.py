"""The fleet search's admin page, ``/admin/search/``: the text of every agent's timeline at once.

A GET form (it works without JavaScript): words, a project, a workspace, item
types and a time range in the operator's zone (as the timeline page reads
times: ``timeline.console.timeline_page``). The results are timeline/search/fleet.py's:
agents with a match, the newest match first, each with its match count and a
link to its newest match on its timeline page, which goes on from there with
its previous/next match links. "Next page" carries the keyset cursor.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, QueryDict
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString
from rest_framework.exceptions import ValidationError as CursorError

from kernel.zones import operator_zone
from registry.models import Project, Workspace
from timeline.console.entries import KNOWN_ITEM_TYPES
from timeline.console.rendering import search_pattern, snippet
from timeline.console.timeline_page import parse_operator_time
from timeline.models import TimelineRow
from timeline.search.base import MAX_QUERY_LENGTH
from timeline.search.fleet import AgentMatches, decode_key, encode_key, search_fleet, search_scope

VIEW_PERMISSION = "snapshots.view_agentsnapshot"
TEMPLATE = "admin/timeline/fleet_search.html"
PAGE_SIZE = 25
SCOPE_NAME = "admin"


@dataclass
class Result:
    group: AgentMatches
    link: str
    #: The newest matching row's text around the words, marked.
    snippet: SafeString = SafeString("")


def _snippets(groups: list[AgentMatches], query: str) -> dict[tuple[str, int], SafeString]:
    """Each group's newest matching row as a snippet, read in one query."""
    if not groups:
        return {}
    wanted = reduce(or_, (Q(agent_id=group.agent.pk, seq=group.newest_seq) for group in groups))
    pattern = search_pattern(query)
    rows = TimelineRow.objects.filter(wanted).only("agent_id", "seq", "item")
    return {(row.agent_id, row.seq): snippet(row.item, pattern) for row in rows}


@dataclass
class SearchForm:
    """What the operator asked, read leniently: a value that is no id or time is a notice, not an error."""

    query: str = ""
    project_id: int | None = None
    workspace_id: int | None = None
    item_types: list[str] = field(default_factory=list)
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    raw: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _id(params: QueryDict, name: str, form: SearchForm, label: str) -> int | None:
    value = params.get(name, "").strip()
    form.raw[name] = value
    if not value:
        return None
    if value.isascii() and value.isdigit() and len(value) <= 18:
        return int(value)
    form.problems.append(f"{label} “{value[:30]}” is not an id.")
    return None


def _time(params: QueryDict, name: str, form: SearchForm, zone) -> dt.datetime | None:
    value = params.get(name, "").strip()
    form.raw[name] = value[:40]
    if not value:
        return None
    parsed = parse_operator_time(value, zone)
    if parsed is None:
        form.problems.append(f"Give the {name} time as YYYY-MM-DD HH:MM[:SS].")
    return parsed


def read_form(params: QueryDict, zone) -> SearchForm:
    form = SearchForm(query=params.get("q", "").strip()[:MAX_QUERY_LENGTH])
    form.project_id = _id(params, "project", form, "Project")
    form.workspace_id = _id(params, "workspace", form, "Workspace")
    form.item_types = sorted({name for name in params.getlist("type") if name and len(name) <= 64})
    form.since = _time(params, "since", form, zone)
    form.until = _time(params, "until", form, zone)
    return form


def _scope(form: SearchForm) -> str:
    filters = {
        "q": form.query,
        "project": form.project_id,
        "workspace": form.workspace_id,
        "type": ",".join(form.item_types),
        "since": form.since.isoformat() if form.since else None,
        "until": form.until.isoformat() if form.until else None,
    }
    return search_scope(SCOPE_NAME, filters)


def _match_link(group: AgentMatches, form: SearchForm) -> str:
    """The agent's timeline page around its newest match, anchored on its row."""
    url = reverse("admin:snapshots_agentsnapshot_timeline", args=[quote(group.agent.pk)])
    query = urlencode([("q", form.query), ("around", group.newest_seq), *(("type", t) for t in form.item_types)])
    return f"{url}?{query}#seq-{group.newest_seq}"


def _run(request: HttpRequest, form: SearchForm) -> tuple[list[Result], str, str]:
    """(results, the next page's query string or "", a notice or "")."""
    scope = _scope(form)
    try:
        after = decode_key(request.GET["cursor"], scope=scope) if request.GET.get("cursor") else None
        page = search_fleet(
            query=form.query,
            project_id=form.project_id,
            workspace_id=form.workspace_id,
            item_types=form.item_types,
            since=form.since,
            until=form.until,
            limit=PAGE_SIZE,
            after=after,
        )
    except ValidationError as exc:
        return [], "", " ".join(message for messages in exc.message_dict.values() for message in messages)
    except CursorError:
        return [], "", "That page link belongs to another search: search again."
    snippets = _snippets(page.groups, form.query)
    results = [
        Result(
            group=group,
            link=_match_link(group, form),
            snippet=snippets.get((group.agent.pk, group.newest_seq), SafeString("")),
        )
        for group in page.groups
    ]
    following = ""
    if page.next_key is not None:
        params = request.GET.copy()
        params["cursor"] = encode_key(page.next_key, scope=scope)
        following = "?" + params.urlencode()
    return results, following, ""


def fleet_search_view(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm(VIEW_PERMISSION):
        raise PermissionDenied
    zone = operator_zone(request)
    form = read_form(request.GET, zone)
    results, following, notice = [], "", ""
    if form.problems:
        notice = " ".join(form.problems)
    elif form.query:
        results, following, notice = _run(request, form)
    context = {
        **admin.site.each_context(request),
        "title": "Search every timeline",
        "form": form,
        "results": results,
        "searched": bool(form.query) and not notice,
        "following": following,
        "notice": notice,
        "item_types": [(name, name in form.item_types) for name in sorted(KNOWN_ITEM_TYPES | set(form.item_types))],
        "projects": Project.objects.order_by("display_name", "id").only("id", "display_name"),
        "workspaces": Workspace.objects.select_related("project")
        .order_by("project__display_name", "display_name", "id")
        .only("id", "display_name", "project__display_name"),
        "zone": zone,
        "zone_name": str(zone.key),
        "now": timezone.now(),
    }
    return TemplateResponse(request, TEMPLATE, context)
