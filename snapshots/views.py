"""/api/v1/agents. Thin: validate, call the service, serialize.

An agent's ETag is its version (``"7"``). PATCH with ``If-Match: "7"`` changes
the agent only if it is still at version 7, and answers 412
``version_mismatch`` otherwise; without If-Match the change is unconditional.
Tags compare as strings: ``"0010"`` names no version, so it never matches.
Every other action refuses If-Match with 412 ``precondition_failed`` (ApiViewSet).
"""

from __future__ import annotations

import re

from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from kernel.api.idempotency import IDEMPOTENCY_KEY_HEADER, create_once
from kernel.api.schema import documents_errors
from kernel.api.views import ApiViewSet, validated
from kernel.errors import VersionMismatch
from registry.models import Workspace
from snapshots import services
from snapshots.filters import AgentFilter
from snapshots.models import AgentSnapshot
from snapshots.selectors import TIMELINE_HEAD, agent_for_api, agents_for_api
from snapshots.serializers import (
    AgentArchiveSerializer,
    AgentCreateSerializer,
    AgentRegisterSerializer,
    AgentSerializer,
    AgentUnarchiveSerializer,
    AgentUpdateSerializer,
)

#: ``*`` or one entity tag (the HTTP server strips spaces around it); the schema publishes the same pattern.
IF_MATCH_PATTERN = r'^(?:\*|(W/)?"([0-9]{1,20})")$'
IF_MATCH_RE = re.compile(IF_MATCH_PATTERN)

ETAG_HEADER = OpenApiParameter(
    "ETag",
    str,
    OpenApiParameter.HEADER,
    response=[200, 201],
    description='The agent\'s version as an entity tag, e.g. `"7"`. Send it back in `If-Match`.',
)
IF_MATCH_HEADER = OpenApiParameter(
    "If-Match",
    {"type": "string", "pattern": IF_MATCH_PATTERN},
    OpenApiParameter.HEADER,
    required=False,
    description='The ETag of the version this change is based on, e.g. `"7"`, or `*`. '
    "A stale version (tags compare as strings) gets 412 `version_mismatch`; a malformed value gets 400 `invalid`.",
)


def etag(agent: AgentSnapshot) -> str:
    return f'"{agent.version}"'


def if_match_tag(request) -> str | None:
    """The entity tag's digits in ``If-Match``; None without the header or for ``*``."""
    header = request.headers.get("If-Match")
    if header is None:
        return None
    match = IF_MATCH_RE.fullmatch(header.strip(" \t"))
    if match is None:
        raise serializers.ValidationError({"If-Match": ['Expected one entity tag such as "7", or *.']})
    weak, digits = match.groups()
    return None if digits is None else (weak or "") + digits


def expected_version(tag: str | None, agent: AgentSnapshot) -> int | None:
    """The version ``tag`` names. Tags compare as strings, so one no ETag can
    equal (``"0010"``: ETags have no leading zeros) is a mismatch at once. If-Match
    compares strongly (RFC 9110, 13.1.1): a weak tag (``W/"7"``) never matches."""
    if tag is None:
        return None
    if tag.startswith("W/") or tag != str(int(tag)):
        raise VersionMismatch(
            f'Agent {agent.agent_id} is at version {agent.version}; If-Match "{tag}" names no version.',
            extra={"version": agent.version},
        )
    return int(tag)


def agent_response(agent: AgentSnapshot, *, status_code: int = status.HTTP_200_OK, **headers) -> Response:
    return Response(AgentSerializer(agent).data, status=status_code, headers={"ETag": etag(agent), **headers})


@extend_schema(tags=["agents"])
class AgentViewSet(ApiViewSet):
    serializer_class = AgentSerializer
    filterset_class = AgentFilter
    # The URL's name for an agent: DRF's metadata (OPTIONS) looks the object up for a PUT.
    lookup_field = "agent_id"
    #: ``?ordering=``; the first is the default. agent_id breaks ties, so each key is unique.
    keyset_orderings = {
        "created_at": ("created_at", "agent_id"),
        "-created_at": ("-created_at", "-agent_id"),
        "updated_at": ("updated_at", "agent_id"),
        "-updated_at": ("-updated_at", "-agent_id"),
        "last_activity_at": (f"{TIMELINE_HEAD}__last_activity_at", "agent_id"),
        "-last_activity_at": (f"-{TIMELINE_HEAD}__last_activity_at", "-agent_id"),
    }
    actions_without_body = ApiViewSet.actions_without_body | {"heartbeat"}
    if_match_actions = frozenset({"partial_update"})

    def get_queryset(self):
        return agents_for_api()

    @extend_schema(summary="List agents", responses=AgentSerializer(many=True))
    def list(self, request):
        return self.list_page(request)

    @extend_schema(
        summary="Create an agent in a workspace",
        request=AgentCreateSerializer,
        responses={201: AgentSerializer},
        parameters=[IDEMPOTENCY_KEY_HEADER, ETAG_HEADER],
    )
    @documents_errors(422)
    def create(self, request):
        return create_once(request, lambda: self.create_new(request))

    def create_new(self, request):
        data = validated(AgentCreateSerializer, request.data)
        workspace = Workspace.objects.filter(pk=data.pop("workspace_id")).first()
        if workspace is None:
            raise serializers.ValidationError({"workspace_id": ["No workspace has this id."]})
        agent = services.create_agent(workspace=workspace, **data)
        return agent_response(
            agent_for_api(agent_id=agent.agent_id),
            status_code=status.HTTP_201_CREATED,
            Location=reverse("agent-detail", kwargs={"agent_id": agent.agent_id}),
        )

    @extend_schema(
        summary="Register an agent its daemon owns (created on first use)",
        description="Creates the agent where chartr places its `cwd` (the deepest workspace at or above it, else a "
        "new `checkout` workspace in a `directory` project there) and answers 201; an agent that exists is "
        "answered as it is with 200 and nothing changes, so a daemon may register before every first write.",
        request=AgentRegisterSerializer,
        responses={200: AgentSerializer, 201: AgentSerializer},
        parameters=[ETAG_HEADER],
    )
    def register(self, request, agent_id):
        data = validated(AgentRegisterSerializer, request.data)
        agent, created = services.register_agent(agent_id=agent_id, **data)
        return agent_response(
            agent_for_api(agent_id=agent.agent_id),
            status_code=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    @extend_schema(summary="Get an agent", responses=AgentSerializer, parameters=[ETAG_HEADER])
    def retrieve(self, request, agent_id):
        return agent_response(agent_for_api(agent_id=agent_id))

    @extend_schema(
        summary="Change an agent snapshot",
        request=AgentUpdateSerializer,
        responses=AgentSerializer,
        parameters=[IF_MATCH_HEADER, ETAG_HEADER],
    )
    def partial_update(self, request, agent_id):
        tag = if_match_tag(request)
        changes = validated(AgentUpdateSerializer, request.data, partial=True)
        agent = agent_for_api(agent_id=agent_id)
        agent = services.update_agent(agent=agent, expected_version=expected_version(tag, agent), **changes)
        return agent_response(agent_for_api(agent_id=agent.agent_id))

    @extend_schema(
        summary="Record that an agent's daemon is alive",
        description="Clears `stale` without touching the agent's version (ETag) or its timeline. "
        "Appends and updates count as signs of life too.",
        request=None,
        responses={204: None},
    )
    def heartbeat(self, request, agent_id):
        services.record_heartbeat(agent_id=agent_for_api(agent_id=agent_id).agent_id)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Archive an agent",
        description="Its lifecycle becomes `closed`. Idempotent: archiving an archived agent reports 0 agents.",
        request=None,
        responses=AgentArchiveSerializer,
    )
    def archive(self, request, agent_id):
        result = services.archive_agent(agent=agent_for_api(agent_id=agent_id))
        return _agent_and_counts(agent_id, archived={"agents": result.agents})

    @extend_schema(
        summary="Unarchive an agent",
        description="Refused with 409 `archived` while its workspace is archived; unarchive the workspace instead.",
        request=None,
        responses=AgentUnarchiveSerializer,
    )
    def unarchive(self, request, agent_id):
        result = services.unarchive_agent(agent=agent_for_api(agent_id=agent_id))
        return _agent_and_counts(agent_id, restored={"agents": result.agents})


def _agent_and_counts(agent_id: str, **counts) -> Response:
    """An archive's or unarchive's answer: the agent as it is now, with its ETag, and what it took or restored."""
    agent = agent_for_api(agent_id=agent_id)
    return Response({"agent": AgentSerializer(agent).data, **counts}, headers={"ETag": etag(agent)})
