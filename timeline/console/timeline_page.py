"""The agent's timeline on its own admin page: ``/admin/snapshots/agentsnapshot/<agent_id>/timeline/``.

Paged HTML that works without JavaScript: filter by item type, search the
text (a match redirects to the page around it, anchored on the row), jump to
a seq or to the first row at or after a time; every time in the operator's
zone (``?tz=``, the ``chartr_tz`` cookie the page's script sets from the
browser, or ``TIME_ZONE``). ``static/timeline/agent_timeline.js`` adds the
live tail (through the session-authenticated stream next to this page, see
``timeline.live.views.admin_timeline_stream``), j/k and ``/``.

``TimelineConfig.ready()`` registers ``agent_timeline_urls`` with
``snapshots.admin.register_agent_page``; snapshots does not import this.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass, field
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from kernel.zones import operator_zone
from snapshots.models import AgentSnapshot
from timeline.console.entries import KNOWN_ITEM_TYPES, TimelineEntry, build_entries
from timeline.live.views import admin_timeline_stream
from timeline.search.base import MAX_QUERY_LENGTH
from timeline.selectors import (
    BrowsePage,
    browse_timeline,
    earlier_tool_call_rows,
    find_match,
    seq_at_or_after_time,
)

PAGE_SIZE = 50
PAGE_TEMPLATE = "admin/timeline/agent_timeline.html"
ROWS_TEMPLATE = "admin/timeline/rows.html"
#: The params that keep their value from page to page; the others are one-off requests.
KEPT_PARAMS = ("type", "tz")


def _seq_param(value: str | None) -> int | None:
    # isascii(): str.isdigit() also accepts characters like "²" that int() refuses.
    value = (value or "").strip()
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 19 else None


def _query(params: QueryDict, **changes: Any) -> str:
    """``?`` + the kept params of ``params`` with ``changes`` (None drops one)."""
    query = QueryDict(mutable=True)
    for name in KEPT_PARAMS:
        values = [value for value in params.getlist(name) if value]
        if values:
            query.setlist(name, values)
    for name, value in changes.items():
        if value is not None:
            query[name] = str(value)
    return "?" + query.urlencode()


@dataclass
class TimelinePageView:
    """What the page shows; built by ``build_page``."""

    agent: AgentSnapshot
    zone: zoneinfo.ZoneInfo
    page: BrowsePage
    entries: list[TimelineEntry]
    item_types: list[str]
    query: str = ""
    notice: str = ""
    links: dict[str, str] = field(default_factory=dict)
    #: Whether this is the newest page, which the live tail extends.
    live: bool = False

    @property
    def chips(self) -> list[tuple[str, bool]]:
        return [(name, name in self.item_types) for name in sorted(KNOWN_ITEM_TYPES | set(self.item_types))]


def _redirect_to(request: HttpRequest, seq: int, **extra: Any) -> HttpResponseRedirect:
    """The page around ``seq``, scrolled to its row."""
    return HttpResponseRedirect(request.path + _query(request.GET, around=seq, **extra) + f"#seq-{seq}")


def _jump(request: HttpRequest, agent: AgentSnapshot, zone: zoneinfo.ZoneInfo, item_types: list[str], text: str):
    """A redirect for a search (``text``) or a jump that found its row; a notice when it found none; else None."""
    params = request.GET
    paging = any(params.get(name) for name in ("around", "before_seq", "after_seq"))
    if text and (not paging or any(name in params for name in ("match_before", "match_after"))):
        before, after = _seq_param(params.get("match_before")), _seq_param(params.get("match_after"))
        direction, seq = ("before", before) if before is not None else ("after", after) if after else ("newest", 0)
        found = find_match(agent_id=agent.pk, query=text, item_types=item_types, direction=direction, seq=seq)
        if found is not None:
            return _redirect_to(request, found, q=text)
        where = {"newest": "", "before": f" before seq {seq}", "after": f" after seq {seq}"}[direction]
        return f"No row{where} matches “{text}”."
    if params.get("seq", "").strip():
        seq = _seq_param(params.get("seq"))
        if seq is None or not 1 <= seq <= agent.timeline_head.head_seq:
            return f"There is no seq {params['seq'].strip()[:30]}: this timeline has seq 1 to {agent.timeline_head.head_seq}."
        return _redirect_to(request, seq)
    if params.get("at", "").strip():
        at = parse_operator_time(params["at"], zone)
        if at is None:
            return "Give the time as YYYY-MM-DD HH:MM[:SS]."
        seq = seq_at_or_after_time(agent_id=agent.pk, at=at)
        if seq is None:
            return f"No row was committed at or after {timezone.localtime(at, zone):%Y-%m-%d %H:%M:%S %Z}."
        return _redirect_to(request, seq)
    return None


def build_page(request: HttpRequest, agent: AgentSnapshot, *, fragment: bool = False):
    """The page (or a redirect to the row a search or jump found)."""
    params = request.GET
    zone = operator_zone(request)
    item_types = sorted({name for name in params.getlist("type") if name and len(name) <= 64})
    query = params.get("q", "").strip()[:MAX_QUERY_LENGTH]
    notice = "" if fragment else _jump(request, agent, zone, item_types, query)
    if isinstance(notice, HttpResponse):
        return notice
    cursors = (("around", "around"), ("before", "before_seq"), ("after", "after_seq"))
    asked = ((direction, _seq_param(params.get(name))) for direction, name in cursors)
    direction, seq = next(((direction, seq) for direction, seq in asked if seq is not None), ("tail", 0))
    page = browse_timeline(agent=agent, item_types=item_types, direction=direction, seq=seq, limit=PAGE_SIZE)
    around = seq if direction == "around" else None
    earlier = earlier_tool_call_rows(agent_id=agent.pk, rows=page.rows) if page.rows else []
    return TimelinePageView(
        agent=agent,
        zone=zone,
        page=page,
        entries=build_entries(page.rows, earlier=earlier, anchor=around, query=query),
        item_types=item_types,
        query=query,
        notice=notice or "",
        links=_links(params, page, query, around),
        live=direction == "tail",
    )


def _links(params: QueryDict, page: BrowsePage, query: str, around: int | None) -> dict[str, str]:
    links = {"newest": _query(params)}
    if page.has_older and page.min_seq is not None:
        links["older"] = _query(params, before_seq=page.min_seq)
    if page.has_newer and page.max_seq is not None:
        links["newer"] = _query(params, after_seq=page.max_seq)
    if query and around is not None:
        links["previous_match"] = _query(params, q=query, match_before=around)
        links["next_match"] = _query(params, q=query, match_after=around)
    return links


def timeline_page(request: HttpRequest, object_id: str, *, model_admin: admin.ModelAdmin) -> HttpResponse:
    agent = model_admin.get_object(request, unquote(object_id))
    if agent is None:
        raise Http404(f"Agent {object_id} does not exist.")
    if not model_admin.has_view_or_change_permission(request, agent):
        raise PermissionDenied
    fragment = request.GET.get("fragment") == "rows"
    view = build_page(request, agent, fragment=fragment)
    if isinstance(view, HttpResponse):
        return view
    context = {"timeline": view, "agent": agent}
    if fragment:
        # The live tail's read of newly committed rows, rendered like the page's.
        context["through"] = view.page.through
        return render(request, ROWS_TEMPLATE, context)
    opts = model_admin.model._meta
    context.update(
        model_admin.admin_site.each_context(request),
        opts=opts,
        title=f"Timeline of {agent}",
        subtitle=None,
        change_url=reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(agent.pk)]),
        stream_url=reverse(f"admin:{opts.app_label}_{opts.model_name}_timeline_stream", args=[quote(agent.pk)]),
        zone_name=str(view.zone.key),
        now=timezone.now(),
    )
    return render(request, PAGE_TEMPLATE, context)


def agent_timeline_urls(model_admin: admin.ModelAdmin) -> list[URLPattern]:
    """The timeline page (staff only, through the admin site) and its live stream (session-checked itself)."""
    opts = model_admin.model._meta
    name = f"{opts.app_label}_{opts.model_name}_timeline"
    page = model_admin.admin_site.admin_view(
        lambda request, object_id: timeline_page(request, object_id, model_admin=model_admin)
    )
    return [
        path("<path:object_id>/timeline/", page, name=name),
        path("<path:object_id>/timeline/stream/", admin_timeline_stream, name=f"{name}_stream"),
    ]


def parse_operator_time(value: str, zone: zoneinfo.ZoneInfo) -> dt.datetime | None:
    """``value`` as an aware time; a time without an offset is in ``zone``."""
    try:
        parsed = parse_datetime(value.strip()) if len(value) <= 40 else None
    except ValueError:  # well formed but not a date, like 2026-02-30
        return None
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, zone)
    return parsed
