"""Filter building blocks shared by the apps' FilterSets.

Every filter validates its value into the right type first, so a bad value is
a 400 naming the parameter and never reaches the database as-is.
"""

from __future__ import annotations

import django_filters
from django import forms
from drf_spectacular.utils import extend_schema_field

from kernel.api.serializers import INT64_MAX


class DigitsIntegerField(forms.IntegerField):
    """ASCII digits only: Python's ``int()`` would also read ``1_0`` as 10."""

    def to_python(self, value):
        if value not in self.empty_values and not (isinstance(value, str) and value.isascii() and value.isdigit()):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": INT64_MAX})
class IdFilter(django_filters.Filter):
    field_class = DigitsIntegerField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", INT64_MAX)
        super().__init__(*args, **kwargs)


BOOLEAN_CHOICES = [("true", "true"), ("false", "false")]


@extend_schema_field({"type": "string", "enum": ["true", "false"]})
class StrictBooleanFilter(django_filters.ChoiceFilter):
    """``true`` or ``false`` and nothing else (django-filter's own ignores what it does not understand)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("choices", BOOLEAN_CHOICES)
        super().__init__(*args, **kwargs)

    def filter(self, qs, value):
        if value in (None, ""):
            return qs
        return super().filter(qs, value == "true")


ARCHIVED_CHOICES = [("false", "false"), ("true", "true"), ("all", "all")]


class ArchivedFilterSet(django_filters.FilterSet):
    """``archived=false|true|all``; without the parameter only live rows are listed."""

    archived = django_filters.ChoiceFilter(
        choices=ARCHIVED_CHOICES,
        method="filter_archived",
        help_text="`false` (the default): live rows only; `true`: archived only; `all`: both.",
    )

    def __init__(self, data=None, *args, **kwargs):
        if data is not None and not data.get("archived"):
            data = data.copy()
            data["archived"] = "false"
        super().__init__(data, *args, **kwargs)

    def filter_archived(self, queryset, name, value):
        if value == "true":
            return queryset.filter(archived_at__isnull=False)
        if value == "all":
            return queryset
        return queryset.filter(archived_at__isnull=True)
