"""Archive and unarchive in the admin: the live/archived list filter, the flows and their wording."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.actions import delete_selected
from django.db import transaction
from django.http import HttpRequest
from django.template.defaultfilters import date as format_date
from django.utils.html import format_html
from django.utils.text import capfirst

from kernel.admin.confirm import Confirmation, ConfirmationItem, ConfirmingAdminMixin, plural
from kernel.admin.forms import ServiceModelAdmin
from kernel.data_snapshots import take_data_snapshot
from kernel.errors import ChartrError

# --- Lists ----------------------------------------------------------------


class ArchivedListFilter(admin.SimpleListFilter):
    """Live records by default: an operator asks for the archived ones (or all) on purpose."""

    title = "archived"
    parameter_name = "archived"
    LIVE, ARCHIVED, ALL = "no", "yes", "all"

    def lookups(self, request, model_admin):
        return [(self.LIVE, "Live"), (self.ARCHIVED, "Archived"), (self.ALL, "All")]

    def choices(self, changelist):
        # Django's own "All" entry means "no parameter", which here is "Live".
        current = self.value() or self.LIVE
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request, queryset):
        value = self.value() or self.LIVE
        if value == self.LIVE:
            return queryset.filter(archived_at__isnull=True)
        if value == self.ARCHIVED:
            return queryset.filter(archived_at__isnull=False)
        return queryset


def _states(counts: list, attribute: str) -> dict[str, int]:
    """The ``attribute`` (state: how many) of every result or preview in ``counts``, summed, in their order."""
    totals: dict[str, int] = {}
    for count in counts:
        for state, n in getattr(count, attribute).items():
            totals[state] = totals.get(state, 0) + n
    return totals


def _listing(parts: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _cascade_parts(counts: list, kinds: tuple[str, ...]) -> str:
    """The ``kinds`` of records an archive (or unarchive) takes along, summed over ``counts``.

    "2 folders and 3 jobs", or "" when it takes nothing else. The records
    themselves are never counted again.
    """
    totals = {kind: sum(getattr(c, kind) for c in counts) for kind in kinds}
    named = [plural(n, kind[:-1]) for kind, n in totals.items() if n]
    return " and ".join(named)


def _sentence(head: str, tail: str) -> str:
    """The head, then what else it did when there was anything: "Archived 2 folders; also archived ..."."""
    return f"{head}; {tail}." if tail else f"{head}."


class ArchivableAdmin(ConfirmingAdminMixin, ServiceModelAdmin):
    """Archive and Unarchive as list actions and change-page buttons; superuser-only hard delete.

    Archived records are read-only here: the change page becomes a view page
    whose only write is Unarchive. The app's admin supplies its services and
    selectors as class attributes (with staticmethod(), so they are not
    bound); this module imports no app.
    """

    #: The keyword the services and selectors take the record by.
    service_arg: str = ""
    archive_service: Callable[..., Any]
    unarchive_service: Callable[..., Any]
    delete_service: Callable[..., Any]
    #: Selectors: what archive_service would take and what unarchive_service would restore
    #: (the counts named below, and ``blocked_by``: an archived parent that forbids the unarchive).
    archive_preview: Callable[..., Any]
    unarchive_preview: Callable[..., Any]
    #: The label of ``deletion_counts`` counting the records themselves.
    cascade_key: str = ""
    #: The counts (plural nouns) of what an archive takes along, as the results and previews name
    #: them, in the order the sentences name them.
    archive_takes_along: tuple[str, ...] = ()
    #: The count whose records an archive takes out of their state (closes) and its unarchive puts
    #: back: results and previews count them by state as ``closed_<count>`` and ``reopened_<count>``.
    state_kind: str
    change_form_template = "admin/chartr/archivable_change_form.html"
    actions = ["archive_selected", "unarchive_selected"]

    # --- lists ----------------------------------------------------------

    def get_list_display(self, request):
        """The archived column only where archived rows may be listed: the default, live-only list has no use for it."""
        shown = list(super().get_list_display(request))
        live_only = (
            request.GET.get(ArchivedListFilter.parameter_name, ArchivedListFilter.LIVE) == ArchivedListFilter.LIVE
        )
        return [name for name in shown if name != "archived_state"] if live_only else shown

    @admin.display(description="archived", ordering="archived_at")
    def archived_state(self, obj):
        """A muted "archived <date>" label on archived rows; live rows stay blank."""
        if obj.archived_at is None:
            return ""
        return format_html('<span class="archived-label">archived {}</span>', format_date(obj.archived_at, "Y-m-d"))

    # --- permissions ----------------------------------------------------

    def has_change_permission(self, request, obj=None):
        if obj is not None and obj.archived_at is not None:
            return False
        return super().has_change_permission(request, obj)

    def can_archive(self, request: HttpRequest) -> bool:
        """Archive and unarchive need the model's change permission (archived records included)."""
        return super().has_change_permission(request)

    def has_delete_permission(self, request, obj=None):
        return bool(request.user.is_superuser) and super().has_delete_permission(request, obj)

    # --- urls and change page --------------------------------------------

    def get_urls(self):
        return [
            self.object_url("archive", self.archive_flow, self.can_archive),
            self.object_url("unarchive", self.unarchive_flow, self.can_archive),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra_context = {**(extra_context or {}), "can_archive": self.can_archive(request)}
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.action(permissions=["change"], description="Archive selected %(verbose_name_plural)s")
    def archive_selected(self, request, queryset):
        return self.archive_flow(request, list(queryset), action_name="archive_selected")

    @admin.action(permissions=["change"], description="Unarchive selected %(verbose_name_plural)s")
    def unarchive_selected(self, request, queryset):
        return self.unarchive_flow(request, list(queryset), action_name="unarchive_selected")

    def _call(self, function: Callable, obj, **kwargs):
        return function(**{self.service_arg: obj}, **kwargs)

    # --- wording ----------------------------------------------------------

    def _takes_along(self, verb: str, counts: list) -> str:
        """What one record (or several) takes along and which states it changes:
        "also archives its 2 jobs; closes 1 running", or "" for nothing."""
        parts = _cascade_parts(counts, self.archive_takes_along)
        owner = "its " if len(counts) == 1 else ""
        text = f"also {verb} {owner}{parts}" if parts else ""
        change = self._state_change(verb, counts)
        return f"{text}; {change}" if text and change else text or change

    def _state_change(self, verb: str, counts: list) -> str:
        """ "closes 2 running and 1 idle" (an archive) or "reopens 2 as running and 1 as idle" (an unarchive)."""
        archive = verb.startswith("archive")
        states = _states(counts, f"{'closed' if archive else 'reopened'}_{self.state_kind}")
        if not states:
            return ""
        change = {"archives": "closes", "archived": "closed", "restores": "reopens", "restored": "reopened"}[verb]
        return f"{change} " + _listing([f"{n} {'' if archive else 'as '}{state}" for state, n in states.items()])

    def _state_sentence(self, verb: str, counts: list) -> list[str]:
        """The summary's line on states: "It closes 2 running and 1 idle agent; unarchiving reopens each
        as it was." (or what an unarchive reopens), or none."""
        change = self._state_change(verb, counts)
        if not change:
            return []
        if verb == "archives":
            total = sum(_states(counts, f"closed_{self.state_kind}").values())
            noun = self.state_kind[:-1] if total == 1 else self.state_kind
            return [f"It {change} {noun}; unarchiving reopens each as it was."]
        return [f"It {change}, as the archive found them."]

    def _cascade_sentence(self, gerund: str, verb: str, targets: list, counts: list) -> str:
        """The summary line: "Archiving folder “X” also archives its 2 jobs.", or "... nothing else."."""
        opts = self.model._meta
        subject = f"{opts.verbose_name} “{targets[0]}”" if len(targets) == 1 else self.records_noun(len(targets))
        parts = _cascade_parts(counts, self.archive_takes_along)
        if not parts:
            return f"{gerund} {subject} {verb} nothing else."
        owner = "its" if len(targets) == 1 else "their"
        return f"{gerund} {subject} also {verb} {owner} {parts}."

    # --- archive and unarchive ------------------------------------------------

    def archive_flow(self, request: HttpRequest, objs: list, *, action_name: str | None):
        return self.confirmation_flow(
            request,
            objs,
            action_name=action_name,
            preview=lambda objs: self._confirmation(objs, archive=True),
            perform=lambda request, objs: self._perform(
                request, objs, self.archive_service, done="Archived", taken="archived", left="already archived"
            ),
        )

    def unarchive_flow(self, request: HttpRequest, objs: list, *, action_name: str | None):
        return self.confirmation_flow(
            request,
            objs,
            action_name=action_name,
            preview=lambda objs: self._confirmation(objs, archive=False),
            perform=lambda request, objs: self._perform(
                request, objs, self.unarchive_service, done="Unarchived", taken="restored", left="not archived"
            ),
        )

    def _confirmation(self, objs: list, *, archive: bool) -> Confirmation:
        """Each record with what archiving (or unarchiving) it takes along, or why it is left as it is."""
        action, gerund, verb = (
            ("archive", "Archiving", "archives") if archive else ("unarchive", "Unarchiving", "restores")
        )
        items, warnings, previews, targets = [], [], [], []
        for obj in objs:
            url = self.change_url(obj)
            if (obj.archived_at is None) != archive:
                items.append(
                    ConfirmationItem(str(obj), url, f"{'already' if archive else 'not'} archived; left unchanged")
                )
                continue
            preview = self._call(self.archive_preview if archive else self.unarchive_preview, obj)
            if getattr(preview, "blocked_by", ""):
                note = f"belongs to archived {preview.blocked_by}; unarchive that instead"
                items.append(ConfirmationItem(str(obj), url, note))
                warnings.append(f"{obj} {note}.")
                continue
            previews.append(preview)
            targets.append(obj)
            items.append(ConfirmationItem(str(obj), url, self._takes_along(verb, [preview]) or f"{verb} nothing else"))
        kind = self.state_kind
        running = _states(previews, f"closed_{kind}").get("running", 0) if archive else 0
        if running:
            it = "it" if running == 1 else "them"
            warnings.append(f"{plural(running, f'{kind[:-1]} is', f'{kind} are')} running; archiving closes {it}.")
        return Confirmation(
            title=f"{action.capitalize()} {self.records_noun(len(previews))}?" if previews else f"Nothing to {action}",
            summary=([self._cascade_sentence(gerund, verb, targets, previews)] if previews else [])
            + self._state_sentence(verb, previews),
            warnings=warnings,
            confirm_label=f"Yes, {action}",
            items=items,
            can_confirm=bool(previews),
        )

    def _perform(self, request: HttpRequest, objs: list, service, *, done: str, taken: str, left: str) -> None:
        results, unchanged = self.perform_each(
            request,
            objs,
            service=lambda obj: self._call(service, obj),
            changed=lambda result: result.changed,
            log_message=lambda result: _sentence(done, self._takes_along(taken, [result])),
        )
        if results:
            summary = _sentence(f"{done} {self.records_noun(len(results))}", self._takes_along(taken, results))
            self.message_user(request, summary, messages.SUCCESS)
        if unchanged:
            self.message_user(request, f"{self.records_noun(unchanged)} {left}; left unchanged.", messages.WARNING)

    # --- hard delete ------------------------------------------------------

    def deletion_counts(self, objs: list) -> dict[str, int]:
        """What deleting ``objs`` removes, by label ("folders", "job logs", ...), in display order."""
        raise NotImplementedError

    def get_deleted_objects(self, objs, request):
        """The cascade as counts: a delete confirmation must not list every timeline row."""
        objs = list(objs)
        counts = self.deletion_counts(objs)
        opts = self.model._meta
        described = [f"{capfirst(opts.verbose_name)}: {obj}" for obj in objs]
        going_with = [plural(n, name[:-1], name) for name, n in counts.items() if n and name != self.cascade_key]
        if going_with:
            described.append([f"and with them: {', '.join(going_with)}"])
        model_count = {name: n for name, n in counts.items() if n}
        return described, model_count, set(), []

    def delete_model(self, request, obj):
        self._call(self.delete_service, obj)

    def delete_queryset(self, request, queryset):
        # A bulk delete is one restore away from undone: a data snapshot first. Raising
        # here (data snapshots disabled) stops delete_selected before it reports success.
        snapshot = take_data_snapshot(reason="pre-delete", note=f"before {request.user.get_username()} deleted records")
        # All or nothing: Django's delete_selected action opens no transaction of its own.
        with transaction.atomic():
            for obj in queryset:
                self._call(self.delete_service, obj)
        self.message_user(
            request, f"Data snapshot {snapshot} was taken first: `manage.py restore --from {snapshot}` undoes this."
        )

    def get_actions(self, request):
        actions = super().get_actions(request)
        if "delete_selected" in actions:
            _, name, description = actions["delete_selected"]
            actions["delete_selected"] = (_delete_selected_or_explain, name, description)
        return actions


def _delete_selected_or_explain(modeladmin, request, queryset):
    """Django's delete_selected, with a refused delete (no data snapshot possible) shown as a message, not a 500."""
    try:
        return delete_selected(modeladmin, request, queryset)
    except ChartrError as exc:
        modeladmin.message_user(request, exc.message, messages.ERROR)
        return None
