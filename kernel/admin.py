"""Glue between the Django admin and the services.

The admin never saves a model itself: every create, edit, archive, unarchive
and delete calls the same service the API calls, and every one of them is
written to the admin history (LogEntry) with the acting user.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.text import capfirst

from kernel.errors import ChartrError

CONFIRM_FIELD = "confirm"


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    return f"{count} {singular if count == 1 else (plural_form or singular + 's')}"


# --- Forms ----------------------------------------------------------------


class ServiceForm(forms.ModelForm):
    """A ModelForm whose write is a service call made as the last step of validation.

    The admin runs validation and ``save_model`` in one transaction but has no
    way back to the form once ``save_model`` runs, so a refusal raised there
    would be a 500. Calling the service from ``_post_clean`` instead puts a
    service ValidationError or ChartrError on the form, where the operator sees
    it; on success ``self.instance`` is the record the service saved and
    ``ServiceModelAdmin.save_model`` has nothing left to do. The service's own
    ``transaction.atomic()`` is a savepoint inside the admin's, so a refusal
    leaves nothing behind.
    """

    #: ChartrError code -> the form field its message belongs on.
    error_fields: dict[str, str] = {}
    #: The field a ValidationError without field names belongs on (e.g. a bad directory).
    plain_error_field: str | None = None
    #: Set per request by ServiceModelAdmin.get_form.
    request: HttpRequest | None = None

    def call_service(self) -> Any:
        """Make the write; return the saved record. ``self.cleaned_data`` is valid here."""
        raise NotImplementedError

    def changed_values(self, names: Iterable[str]) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in names if name in self.changed_data}

    def _post_clean(self) -> None:
        # Model validation and uniqueness are the service's and the database's job.
        if self._errors:
            return
        try:
            saved = self.call_service()
        except ValidationError as exc:
            self._add_validation_error(exc)
        except ChartrError as exc:
            self.add_error(self._field_or_none(self.error_fields.get(exc.code)), exc.message)
        else:
            if saved is not None:
                self.instance = saved

    def _field_or_none(self, name: str | None) -> str | None:
        return name if name in self.fields else None

    def _add_validation_error(self, exc: ValidationError) -> None:
        if not hasattr(exc, "error_dict"):
            self.add_error(self._field_or_none(self.plain_error_field), exc.messages)
            return
        for name, errors in exc.error_dict.items():
            target = self._field_or_none(name)
            for error in errors:
                for message in error.messages:
                    self.add_error(target, message if target else f"{name}: {message}")


# --- Model admins ---------------------------------------------------------


class ServiceModelAdmin(admin.ModelAdmin):
    """Separate add and change forms, both ServiceForms."""

    add_form: type[ServiceForm] | None = None
    add_fieldsets: Any = None

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None and self.add_form is not None:
            kwargs["form"] = self.add_form
        form = super().get_form(request, obj, change=change, **kwargs)
        # A per-request subclass, so the form can pass the acting user to services.
        return type(form.__name__, (form,), {"request": request})

    def get_fieldsets(self, request, obj=None):
        if obj is None and self.add_fieldsets is not None:
            return self.add_fieldsets
        return super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request, obj=None):
        # The add form takes the identifying fields the change page shows read-only.
        if obj is None and self.add_fieldsets is not None:
            return ()
        return super().get_readonly_fields(request, obj)

    def save_model(self, request, obj, form, change):
        # ServiceForm._post_clean already called the service; saving the model
        # here would bypass it.
        if not isinstance(form, ServiceForm) or obj.pk is None:
            raise RuntimeError("The admin only writes through services (ServiceForm).")

    def save_related(self, request, form, formsets, change):
        pass


@dataclass
class ConfirmationItem:
    label: str
    url: str
    note: str = ""


@dataclass
class Confirmation:
    """What a confirmation page says: built by a flow's preview half, from selectors only."""

    title: str
    confirm_label: str
    items: list[ConfirmationItem]
    summary: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    can_confirm: bool = True


class ConfirmingAdminMixin:
    """Actions and change-page buttons that go through a confirmation page.

    A flow has two halves. The preview half reads (never writes) and returns a
    ``Confirmation``; the perform half runs once the operator confirmed, calls
    the service for each record (``perform_each``) and reports what changed.
    ``confirmation_flow`` picks the half from the request.
    """

    confirmation_template = "admin/chartr/confirm_action.html"

    def confirmation_flow(
        self,
        request: HttpRequest,
        objs: list,
        *,
        action_name: str | None,
        preview: Callable[[list], Confirmation],
        perform: Callable[[HttpRequest, list], None],
    ) -> TemplateResponse | None:
        """The confirmation page, or (once confirmed) the write and None to go back."""
        if self.is_confirmed(request):
            perform(request, objs)
            return None
        return self.render_confirmation(request, objs=objs, action_name=action_name, confirmation=preview(objs))

    def perform_each(
        self,
        request: HttpRequest,
        objs: list,
        *,
        service: Callable[[Any], Any],
        changed: Callable[[Any], bool],
        log_message: Callable[[Any], str],
    ) -> tuple[list, int]:
        """Call ``service`` on each record in a transaction of its own, logging those it changed.

        A refusal (e.g. a record deleted between the list and the confirmation)
        is reported for its record and the others go on. Returns the results
        of the records that changed and how many were left unchanged.
        """
        results, unchanged = [], 0
        for obj in objs:
            try:
                with transaction.atomic():
                    result = service(obj)
                    if changed(result):
                        self.log_change(request, obj, log_message(result))
            except ChartrError as exc:
                self.message_user(request, f"{obj}: {exc.message}", messages.ERROR)
                continue
            if changed(result):
                results.append(result)
            else:
                unchanged += 1
        return results, unchanged

    def records_noun(self, count: int) -> str:
        """``count`` records of this admin's model, e.g. "2 projects"."""
        opts = self.model._meta
        return plural(count, opts.verbose_name, opts.verbose_name_plural)

    def render_confirmation(
        self, request: HttpRequest, *, objs: list, action_name: str | None, confirmation: Confirmation
    ) -> TemplateResponse:
        opts = self.model._meta
        single = action_name is None
        context = {
            **self.admin_site.each_context(request),
            "title": confirmation.title,
            "subtitle": None,
            "opts": opts,
            "app_label": opts.app_label,
            "summary": confirmation.summary,
            "warnings": list(confirmation.warnings),
            "items": confirmation.items,
            "confirm_label": confirmation.confirm_label,
            "confirm_field": CONFIRM_FIELD,
            "can_confirm": confirmation.can_confirm,
            "action_name": action_name,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "selected_pks": [obj.pk for obj in objs],
            "object": objs[0] if single else None,
            "cancel_url": (
                self.change_url(objs[0]) if single else reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
            ),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.confirmation_template, context)

    def change_url(self, obj) -> str:
        opts = obj._meta
        return reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[quote(obj.pk)])

    def is_confirmed(self, request: HttpRequest) -> bool:
        return request.method == "POST" and request.POST.get(CONFIRM_FIELD) == "yes"

    def object_view(
        self, request: HttpRequest, object_id: str, flow: Callable, permission: Callable[[HttpRequest], bool]
    ):
        if not permission(request):
            raise PermissionDenied
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            return self._get_obj_does_not_exist_redirect(request, self.model._meta, object_id)
        response = flow(request, [obj], action_name=None)
        return response or HttpResponseRedirect(self.change_url(obj))

    def object_url(self, suffix: str, flow: Callable, permission: Callable[[HttpRequest], bool]):
        """The URL of a change-page button: ``<object_id>/<suffix>/`` runs ``flow`` on that record."""
        opts = self.model._meta
        view = self.admin_site.admin_view(
            lambda request, object_id: self.object_view(request, object_id, flow, permission)
        )
        return path(f"<path:object_id>/{suffix}/", view, name=f"{opts.app_label}_{opts.model_name}_{suffix}")


def _archive_counts(counts: list) -> str:
    """The workspaces, agents and running agents of archive results or previews, summed."""
    workspaces = sum(c.workspaces for c in counts)
    agents = sum(c.agents for c in counts)
    running = sum(c.running_agents for c in counts)
    return f"{plural(workspaces, 'workspace')} and {plural(agents, 'agent')}, {running} of them running"


def _restore_counts(counts: list) -> str:
    """The workspaces and agents of unarchive results or previews, summed."""
    workspaces = sum(c.workspaces for c in counts)
    agents = sum(c.agents for c in counts)
    return f"{plural(workspaces, 'workspace')} and {plural(agents, 'agent')}"


class ArchivableAdmin(ConfirmingAdminMixin, ServiceModelAdmin):
    """Archive and Unarchive as list actions and change-page buttons; superuser-only hard delete.

    Archived records are read-only here: the change page becomes a view page
    whose only write is Unarchive. The app's admin supplies its services and
    selectors as class attributes (with staticmethod(), so they are not
    bound); this module imports no app.
    """

    #: The keyword the services and selectors take the record by: "project", "workspace" or "agent".
    service_arg: str = ""
    archive_service: Callable[..., Any]
    unarchive_service: Callable[..., Any]
    delete_service: Callable[..., Any]
    #: Selectors: what archive_service would take (workspaces, agents, running_agents) and
    #: what unarchive_service would restore (workspaces, agents, blocked_by).
    archive_preview: Callable[..., Any]
    unarchive_preview: Callable[..., Any]
    #: The label of ``deletion_counts`` counting the records themselves.
    cascade_key: str = ""
    change_form_template = "admin/chartr/archivable_change_form.html"
    actions = ["archive_selected", "unarchive_selected"]

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

    # --- archive ----------------------------------------------------------

    def archive_flow(self, request: HttpRequest, objs: list, *, action_name: str | None):
        return self.confirmation_flow(
            request, objs, action_name=action_name, preview=self.archive_confirmation, perform=self.perform_archive
        )

    def archive_confirmation(self, objs: list) -> Confirmation:
        items, previews = [], []
        for obj in objs:
            if obj.archived_at is not None:
                items.append(ConfirmationItem(str(obj), self.change_url(obj), "already archived; left unchanged"))
                continue
            preview = self._call(self.archive_preview, obj)
            previews.append(preview)
            items.append(ConfirmationItem(str(obj), self.change_url(obj), _archive_counts([preview])))
        noun = self.records_noun(len(previews))
        running = sum(preview.running_agents for preview in previews)
        return Confirmation(
            title=f"Archive {noun}?" if previews else "Nothing to archive",
            summary=[f"Archiving {noun} also archives {_archive_counts(previews)}."] if previews else [],
            warnings=[f"{plural(running, 'agent is', 'agents are')} running; archiving closes them."]
            if running
            else [],
            confirm_label="Yes, archive",
            items=items,
            can_confirm=bool(previews),
        )

    def perform_archive(self, request: HttpRequest, objs: list) -> None:
        results, unchanged = self.perform_each(
            request,
            objs,
            service=lambda obj: self._call(self.archive_service, obj),
            changed=lambda result: result.changed,
            log_message=lambda result: f"Archived; {_archive_counts([result])}.",
        )
        if results:
            self.message_user(
                request, f"Archived {self.records_noun(len(results))}; {_archive_counts(results)}.", messages.SUCCESS
            )
        if unchanged:
            self.message_user(
                request, f"{self.records_noun(unchanged)} already archived; left unchanged.", messages.WARNING
            )

    # --- unarchive --------------------------------------------------------

    def unarchive_flow(self, request: HttpRequest, objs: list, *, action_name: str | None):
        return self.confirmation_flow(
            request, objs, action_name=action_name, preview=self.unarchive_confirmation, perform=self.perform_unarchive
        )

    def unarchive_confirmation(self, objs: list) -> Confirmation:
        items, warnings, previews = [], [], []
        for obj in objs:
            url = self.change_url(obj)
            if obj.archived_at is None:
                items.append(ConfirmationItem(str(obj), url, "not archived; left unchanged"))
                continue
            preview = self._call(self.unarchive_preview, obj)
            if preview.blocked_by:
                note = f"belongs to archived {preview.blocked_by}; unarchive that instead"
                items.append(ConfirmationItem(str(obj), url, note))
                warnings.append(f"{obj} {note}.")
                continue
            previews.append(preview)
            items.append(ConfirmationItem(str(obj), url, f"restores {_restore_counts([preview])}"))
        noun = self.records_noun(len(previews))
        return Confirmation(
            title=f"Unarchive {noun}?" if previews else "Nothing to unarchive",
            summary=(
                [f"Unarchiving {noun} restores {_restore_counts(previews)}: exactly those its archive took."]
                if previews
                else []
            ),
            warnings=warnings,
            confirm_label="Yes, unarchive",
            items=items,
            can_confirm=bool(previews),
        )

    def perform_unarchive(self, request: HttpRequest, objs: list) -> None:
        results, unchanged = self.perform_each(
            request,
            objs,
            service=lambda obj: self._call(self.unarchive_service, obj),
            changed=lambda result: result.changed,
            log_message=lambda result: f"Unarchived; restored {_restore_counts([result])}.",
        )
        if results:
            self.message_user(
                request,
                f"Unarchived {self.records_noun(len(results))}; restored {_restore_counts(results)}.",
                messages.SUCCESS,
            )
        if unchanged:
            self.message_user(
                request, f"{self.records_noun(unchanged)} not archived; left unchanged.", messages.WARNING
            )

    # --- hard delete ------------------------------------------------------

    def deletion_counts(self, objs: list) -> dict[str, int]:
        """What deleting ``objs`` removes, by label ("projects", "timeline rows", ...), in display order."""
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
        # All or nothing: Django's delete_selected action opens no transaction of its own.
        with transaction.atomic():
            for obj in queryset:
                self._call(self.delete_service, obj)


__all__ = [
    "ArchivableAdmin",
    "Confirmation",
    "ConfirmationItem",
    "ConfirmingAdminMixin",
    "ServiceForm",
    "ServiceModelAdmin",
    "plural",
]
