from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from timeline import serializers
from timeline.selectors import read_timeline
from timeline.services import NewTimelineItem, append_timeline_items


class AgentTimelineView(APIView):
    @extend_schema(
        operation_id="timeline_read",
        tags=["timeline"],
        parameters=[serializers.ReadQuerySerializer],
        responses={200: serializers.TimelinePageSerializer},
        summary="Read a window of the agent's committed timeline",
    )
    def get(self, request: Request, agent_id: str) -> Response:
        query = serializers.ReadQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        page = read_timeline(agent_id=agent_id, **query.validated_data)
        return Response(serializers.TimelinePageSerializer(page).data)

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
    def post(self, request: Request, agent_id: str) -> Response:
        body = serializers.AppendRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = append_timeline_items(
            agent_id=agent_id,
            items=[NewTimelineItem(item=i["item"], item_id=i.get("item_id")) for i in body.validated_data["items"]],
            expected_head_seq=body.validated_data.get("expected_head_seq"),
        )
        payload = serializers.AppendResponseSerializer(
            {"rows": result.rows, "head_seq": result.head_seq, "epoch": result.epoch}
        ).data
        return Response(payload, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)
