from __future__ import annotations

import django_filters
from django import forms
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Q
from drf_spectacular.utils import extend_schema_field

from kernel.api.filters import ArchivedFilterSet, IdFilter
from registry.directories import DIRECTORY_PATTERN, MAX_DIRECTORY_LENGTH, normalize_directory
from registry.models import Project, ProjectKind, Workspace, WorkspaceKind


class DirectoryFormField(forms.CharField):
    def clean(self, value):
        value = super().clean(value)
        if value in (None, ""):
            return value
        try:
            return normalize_directory(value)
        except DjangoValidationError as exc:
            raise forms.ValidationError(exc.messages) from None


@extend_schema_field({"type": "string", "pattern": DIRECTORY_PATTERN, "maxLength": MAX_DIRECTORY_LENGTH})
class DirectoryFilter(django_filters.CharFilter):
    """Exact match after the same normalization as on create. A path that cannot be normalized is a 400."""

    field_class = DirectoryFormField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("strip", False)
        kwargs.setdefault("field_name", "directory")
        kwargs.setdefault(
            "help_text",
            "Exact directory, normalized as on create (so `/a//b/` finds `/a/b`). "
            "Returns at most one row and never creates one. A relative path or one with '.'/'..' is a 400.",
        )
        super().__init__(*args, **kwargs)

    def filter(self, qs, value):
        if value in (None, ""):
            return qs
        return qs.at_directory(value)


class ProjectFilter(ArchivedFilterSet):
    kind = django_filters.ChoiceFilter(choices=ProjectKind.choices)
    directory = DirectoryFilter()
    search = django_filters.CharFilter(
        method="filter_search",
        max_length=1024,
        help_text="Case-insensitive substring of the directory or the display name.",
    )

    class Meta:
        model = Project
        fields = ["archived", "kind", "directory", "search"]

    def filter_search(self, queryset, name, value):
        return queryset.filter(Q(directory__icontains=value) | Q(display_name__icontains=value))


class WorkspaceFilter(ArchivedFilterSet):
    project_id = IdFilter(field_name="project_id")
    kind = django_filters.ChoiceFilter(choices=WorkspaceKind.choices)
    directory = DirectoryFilter()

    class Meta:
        model = Workspace
        fields = ["project_id", "kind", "archived", "directory"]
