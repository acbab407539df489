"""The admin pages for data snapshots: a list with a "Take snapshot now" button,
and each snapshot's restore preview and confirmation.

Mounted in chartr/urls.py through ``admin.site.admin_view`` (staff login,
CSRF, no caching); the permissions below narrow it further. Restoring
replaces everything, users and permissions included, so only superusers may.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import BACKEND_SESSION_KEY, get_user_model, login, logout
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from datadir.errors import SnapshotNotFound, SnapshotsDisabled, StoreBusy
from datadir.selectors import list_data_snapshots, restore_preview
from datadir.services import restore_snapshot, take_snapshot
from datadir.store import snapshots_keep, snapshots_root
from kernel.errors import ChartrError

VIEW_PERMISSION = "datadir.view_data_snapshots"
TAKE_PERMISSION = "datadir.take_data_snapshot"
#: The backend a re-login names when the session named none (the one the admin's login form uses).
DEFAULT_LOGIN_BACKEND = "django.contrib.auth.backends.ModelBackend"


@require_http_methods(["GET", "HEAD", "POST"])
def data_snapshots_view(request: HttpRequest) -> HttpResponse:
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
        "can_restore": request.user.is_superuser and keep > 0,
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


@require_http_methods(["GET", "HEAD", "POST"])
def restore_view(request: HttpRequest, name: str) -> HttpResponse:
    """GET: what the snapshot holds against now, and what the restore will do. POST (confirmed): restore it."""
    if not request.user.is_superuser:
        raise PermissionDenied
    try:
        preview = restore_preview(name)
    except SnapshotNotFound as exc:
        messages.error(request, exc.message)
        return HttpResponseRedirect(reverse("data-snapshots"))
    if request.method == "POST" and request.POST.get("confirm") == "yes" and not preview.problem:
        return _restore(request, name)
    context = {
        **admin.site.each_context(request),
        "title": f"Restore data snapshot {name}",
        "preview": preview,
        "keep": snapshots_keep(),
    }
    return TemplateResponse(request, "admin/datadir/restore.html", context)


def _restore(request: HttpRequest, name: str) -> HttpResponse:
    # The session and the user live in the database the restore replaces: note who ran it first.
    operator_pk, username = request.user.pk, request.user.get_username()
    backend = request.session.get(BACKEND_SESSION_KEY) or DEFAULT_LOGIN_BACKEND
    try:
        result = restore_snapshot(name=name, wait=False)
    except ChartrError as exc:
        messages.error(request, exc.message)
        return HttpResponseRedirect(reverse("data-restore", args=[name]))
    done = (
        f"Restored data snapshot {result.restored}: {result.files_restored} files restored, "
        f"{result.files_removed} removed, a new timeline epoch for {result.agents_with_new_epoch} agents. "
        f"The state before is data snapshot {result.undo_snapshot}: restore it to undo this restore."
    )
    operator = (
        get_user_model()
        ._default_manager.filter(pk=operator_pk, username=username, is_active=True, is_superuser=True)
        .first()
    )
    if operator is None:
        # The snapshot does not hold this operator as an active superuser: no session can stand for them.
        logout(request)
        messages.warning(
            request,
            f"{done} The snapshot has no active superuser {username!r}, so you were logged out; "
            f"log in as a user it holds.",
        )
        return HttpResponseRedirect(reverse("admin:login"))
    # The old session's row went with the database it was in: start a new one in the restored database.
    request.session.flush()
    login(request, operator, backend=backend)
    messages.success(request, f"{done} You are still logged in as {username} (as the snapshot holds that user).")
    return HttpResponseRedirect(reverse("data-snapshots"))
