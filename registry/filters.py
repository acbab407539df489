from __future__ import annotations

import django_filters
from django.db.models import Q

from kernel.api.filters import ArchivedFilterSet, DirectoryFilter, IdFilter
from registry.models import Project, ProjectKind, Workspace, WorkspaceKind


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
