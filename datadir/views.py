"""The admin page for data snapshots: a list, and a "Take snapshot now" button.

Mounted in chartr/urls.py through ``admin.site.admin_view`` (staff login,
CSRF, no caching); the permissions below narrow it further.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from datadir.errors import SnapshotsDisabled, StoreBusy
from datadir.selectors import list_data_snapshots
from datadir.services import take_snapshot
from datadir.store import snapshots_keep, snapshots_root
from kernel.errors import ChartrError

VIEW_PERMISSION = "datadir.view_data_snapshots"
TAKE_PERMISSION = "datadir.take_data_snapshot"


def data_snapshots_view(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    if not request.user.has_perm(VIEW_PERMISSION):
        raise PermissionDenied
    if request.method == "POST":
        return _take(request)
    keep = snapshots_keep()
    context = {
        **admin.site.each_context(request),
        "title": "Data snapshots",
        "snapshots": list_data_snapshots(),
        "keep": keep,
        "disabled": keep == 0,
        "root": snapshots_root(),
        "can_take": request.user.has_perm(TAKE_PERMISSION),
    }
    return TemplateResponse(request, "admin/data_snapshots.html", context)


def _take(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm(TAKE_PERMISSION):
        raise PermissionDenied
    try:
        # Never block a web request on another run's lock.
        result = take_snapshot(wait=False, reason="admin", note=f"taken by {request.user.get_username()}")
    except (SnapshotsDisabled, StoreBusy) as exc:
        messages.warning(request, exc.message)
    except ChartrError as exc:
        messages.error(request, exc.message)
    else:
        removed = f" Removed old snapshots: {', '.join(result.rotated)}." if result.rotated else ""
        messages.success(request, f"Data snapshot {result.name} taken: {result.summary}.{removed}")
    return HttpResponseRedirect(reverse("data-snapshots"))
