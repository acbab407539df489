"""Admin forms and model admins whose every write is a service call."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest

from kernel.errors import ChartrError

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
    #: The field a ValidationError without field names belongs on (e.g. a bad path).
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
    """Separate add and change forms, both ServiceForms; the add page shows ``add_form``'s ``Meta.fields``."""

    add_form: type[ServiceForm] | None = None

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None and self.add_form is not None:
            kwargs["form"] = self.add_form
        form = super().get_form(request, obj, change=change, **kwargs)
        # A per-request subclass, so the form can pass the acting user to services.
        return type(form.__name__, (form,), {"request": request})

    def get_fieldsets(self, request, obj=None):
        if obj is None and self.add_form is not None:
            return [(None, {"fields": self.add_form.Meta.fields})]
        return super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request, obj=None):
        # The add form takes the identifying fields the change page shows read-only.
        if obj is None and self.add_form is not None:
            return ()
        return super().get_readonly_fields(request, obj)

    def save_model(self, request, obj, form, change):
        # ServiceForm._post_clean already called the service; saving the model
        # here would bypass it.
        if not isinstance(form, ServiceForm) or obj.pk is None:
            raise RuntimeError("The admin only writes through services (ServiceForm).")

    def save_related(self, request, form, formsets, change):
        pass
