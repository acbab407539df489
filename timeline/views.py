from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request

from kernel.api.lean import LeanApiView
from timeline import api_json, serializers
from timeline.selectors import read_timeline
from timeline.services import append_timeline_items


# DRF still authenticates, checks the token's permission and throttle, negotiates,
# parses the body and turns every error into the envelope (``LeanApiView`` takes a
# shortcut to DRF's own negotiation and parser choice for a plain request); the serializers below
# document the operations and refuse what ``timeline.api_json`` does not read
# directly, and ``timeline.api_json`` writes the answers. (No docstring:
# drf-spectacular would publish it as the operations' description.)
class AgentTimelineView(LeanApiView):
    @extend_schema(
        operation_id="timeline_read",
        tags=["timeline"],
        parameters=[serializers.ReadQuerySerializer],
        responses={200: serializers.TimelinePageSerializer},
        summary="Read a window of the agent's committed timeline",
    )
    def get(self, request: Request, agent_id: str) -> HttpResponse:
        arguments = api_json.read_arguments(request.query_params)
        page = read_timeline(agent_id=agent_id, items_as_json=True, **arguments)
        return api_json.json_response(api_json.page_document(page))

    @extend_schema(
        operation_id="timeline_append",
        tags=["timeline"],
        request=serializers.AppendRequestSerializer,
        responses={
            201: serializers.AppendResponseSerializer,
            200: serializers.AppendResponseSerializer,
        },
        summary="Append items to the agent's committed timeline",
        description=(
            "Items commit atomically with contiguous seqs. 201 when anything new was stored; 200 when every "
            "item's item_id was already committed with the same item (an idempotent retry). 409 item_conflict "
            "(with the stored `item_id` and `seq`) when an item_id is committed with a different item; "
            "409 seq_conflict when expected_head_seq is stale; 409 archived for an archived agent."
        ),
    )
    def post(self, request: Request, agent_id: str) -> HttpResponse:
        items, expected_head_seq = api_json.append_arguments(request.data)
        result = append_timeline_items(agent_id=agent_id, items=items, expected_head_seq=expected_head_seq)
        return api_json.json_response(
            api_json.append_document(result),
            status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK,
        )
