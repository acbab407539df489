"""Confirmation pages: a read-only preview, then the write on an explicit "yes"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from kernel.errors import ChartrError

CONFIRM_FIELD = "confirm"


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    return f"{count} {singular if count == 1 else (plural_form or singular + 's')}"


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
        if request.method == "POST" and request.POST.get(CONFIRM_FIELD) == "yes":
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
        """``count`` records of this admin's model, e.g. "2 folders"."""
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

    def object_view(
        self, request: HttpRequest, object_id: str, flow: Callable, permission: Callable[[HttpRequest], bool]
    ):
        if not permission(request):
            raise PermissionDenied
        obj = self.get_object(request, unquote(object_id))
        if obj is None:  # as Django's own change view answers it
            name, key = self.model._meta.verbose_name, unquote(object_id)
            self.message_user(
                request, f"{name} with ID “{key}” doesn’t exist. Perhaps it was deleted?", messages.WARNING
            )
            return HttpResponseRedirect(reverse("admin:index", current_app=self.admin_site.name))
        response = flow(request, [obj], action_name=None)
        return response or HttpResponseRedirect(self.change_url(obj))

    def object_url(self, suffix: str, flow: Callable, permission: Callable[[HttpRequest], bool]):
        """The URL of a change-page button: ``<object_id>/<suffix>/`` runs ``flow`` on that record."""
        opts = self.model._meta
        view = self.admin_site.admin_view(
            lambda request, object_id: self.object_view(request, object_id, flow, permission)
        )
        return path(f"<path:object_id>/{suffix}/", view, name=f"{opts.app_label}_{opts.model_name}_{suffix}")
