"""/api/v1/projects and /api/v1/workspaces. Thin: validate, call the service, serialize."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from kernel.api.idempotency import IDEMPOTENCY_KEY_HEADER, create_once
from kernel.api.schema import documents_errors
from kernel.api.views import ApiViewSet, row_id, validated
from kernel.errors import NotFound
from registry import services
from registry.filters import ProjectFilter, WorkspaceFilter
from registry.models import Project, Workspace
from registry.selectors import projects_for_api, workspaces_for_api
from registry.serializers import (
    ProjectArchiveSerializer,
    ProjectCreateSerializer,
    ProjectSerializer,
    ProjectUnarchiveSerializer,
    ProjectUpdateSerializer,
    WorkspaceArchiveSerializer,
    WorkspaceCreateSerializer,
    WorkspaceSerializer,
    WorkspaceUnarchiveSerializer,
    WorkspaceUpdateSerializer,
)


def _get(queryset, raw_id, noun: str):
    record = queryset.filter(pk=row_id(raw_id, noun)).first()
    if record is None:
        raise NotFound(f"{noun} {raw_id} does not exist.")
    return record


def get_project(raw_id) -> Project:
    return _get(projects_for_api(), raw_id, "Project")


def get_workspace(raw_id) -> Workspace:
    return _get(workspaces_for_api(), raw_id, "Workspace")


@extend_schema(tags=["projects"])
class ProjectViewSet(ApiViewSet):
    serializer_class = ProjectSerializer
    filterset_class = ProjectFilter
    keyset_ordering = ("id",)

    def get_queryset(self):
        return projects_for_api()

    @extend_schema(summary="List projects", responses=ProjectSerializer(many=True))
    def list(self, request):
        return self.list_page(request)

    @extend_schema(
        summary="Create a project",
        request=ProjectCreateSerializer,
        responses={201: ProjectSerializer},
        parameters=[IDEMPOTENCY_KEY_HEADER],
    )
    @documents_errors(422)
    def create(self, request):
        return create_once(request, lambda: self.create_new(request))

    def create_new(self, request):
        project = services.create_project(**validated(ProjectCreateSerializer, request.data))
        return Response(
            ProjectSerializer(get_project(project.pk)).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": reverse("project-detail", kwargs={"id": project.pk})},
        )

    @extend_schema(summary="Get a project", responses=ProjectSerializer)
    def retrieve(self, request, id):
        return Response(ProjectSerializer(get_project(id)).data)

    @extend_schema(
        summary="Change a project's display name or git remote",
        request=ProjectUpdateSerializer,
        responses=ProjectSerializer,
    )
    def partial_update(self, request, id):
        changes = validated(ProjectUpdateSerializer, request.data, partial=True)
        project = services.update_project(project=get_project(id), **changes)
        return Response(ProjectSerializer(get_project(project.pk)).data)

    @extend_schema(
        summary="Archive a project with its live workspaces and their agents",
        description="Idempotent: archiving an archived project changes nothing and reports zero counts.",
        request=None,
        responses=ProjectArchiveSerializer,
    )
    def archive(self, request, id):
        result = services.archive_project(project=get_project(id))
        return Response(ProjectArchiveSerializer({"project": get_project(id), "archived": result}).data)

    @extend_schema(
        summary="Unarchive a project and exactly what its archive took",
        description="Idempotent: unarchiving a live project changes nothing and reports zero counts.",
        request=None,
        responses=ProjectUnarchiveSerializer,
    )
    def unarchive(self, request, id):
        result = services.unarchive_project(project=get_project(id))
        return Response(ProjectUnarchiveSerializer({"project": get_project(id), "restored": result}).data)


@extend_schema(tags=["workspaces"])
class WorkspaceViewSet(ApiViewSet):
    serializer_class = WorkspaceSerializer
    filterset_class = WorkspaceFilter
    keyset_ordering = ("id",)

    def get_queryset(self):
        return workspaces_for_api()

    @extend_schema(summary="List workspaces", responses=WorkspaceSerializer(many=True))
    def list(self, request):
        return self.list_page(request)

    @extend_schema(
        summary="Create a workspace in a project",
        request=WorkspaceCreateSerializer,
        responses={201: WorkspaceSerializer},
        parameters=[IDEMPOTENCY_KEY_HEADER],
    )
    @documents_errors(422)
    def create(self, request):
        return create_once(request, lambda: self.create_new(request))

    def create_new(self, request):
        data = validated(WorkspaceCreateSerializer, request.data)
        project = Project.objects.filter(pk=data.pop("project_id")).first()
        if project is None:
            raise serializers.ValidationError({"project_id": ["No project has this id."]})
        workspace = services.create_workspace(project=project, **data)
        return Response(
            WorkspaceSerializer(get_workspace(workspace.pk)).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": reverse("workspace-detail", kwargs={"id": workspace.pk})},
        )

    @extend_schema(summary="Get a workspace", responses=WorkspaceSerializer)
    def retrieve(self, request, id):
        return Response(WorkspaceSerializer(get_workspace(id)).data)

    @extend_schema(
        summary="Change a workspace's display name or branch",
        request=WorkspaceUpdateSerializer,
        responses=WorkspaceSerializer,
    )
    def partial_update(self, request, id):
        changes = validated(WorkspaceUpdateSerializer, request.data, partial=True)
        workspace = services.update_workspace(workspace=get_workspace(id), **changes)
        return Response(WorkspaceSerializer(get_workspace(workspace.pk)).data)

    @extend_schema(
        summary="Archive a workspace and its live agents",
        description="Idempotent: archiving an archived workspace changes nothing and reports zero agents.",
        request=None,
        responses=WorkspaceArchiveSerializer,
    )
    def archive(self, request, id):
        result = services.archive_workspace(workspace=get_workspace(id))
        return Response(WorkspaceArchiveSerializer({"workspace": get_workspace(id), "archived": result}).data)

    @extend_schema(
        summary="Unarchive a workspace and exactly the agents its archive took",
        description="Refused with 409 `archived` while its project is archived; unarchive the project instead.",
        request=None,
        responses=WorkspaceUnarchiveSerializer,
    )
    def unarchive(self, request, id):
        result = services.unarchive_workspace(workspace=get_workspace(id))
        return Response(WorkspaceUnarchiveSerializer({"workspace": get_workspace(id), "restored": result}).data)
