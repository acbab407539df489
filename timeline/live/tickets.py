"""POST /api/v1/agents/{agent_id}/timeline/stream-tickets: a stream ticket, for a browser's
``EventSource`` (it cannot send ``Authorization``). The ticket is the stream's one URL
credential (``?ticket=``, tokens/access.py); docs/api.md shows the client's reconnect loop."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from kernel.api.plain import Answer, Operation, json_view
from timeline.api.shapes import StreamTicketMinted, render_timestamp
from timeline.selectors import get_agent_for_timeline
from tokens.access import TICKET_PARAMETER, authorize_as_read
from tokens.models import ApiToken
from tokens.services import mint_stream_ticket


def _mint(*, agent_id: str, caller: ApiToken) -> Answer:
    get_agent_for_timeline(agent_id=agent_id)
    ticket, raw = mint_stream_ticket(token=caller, agent_id=agent_id)
    stream = reverse("timeline-stream", kwargs={"agent_id": agent_id})
    minted = StreamTicketMinted(
        ticket=raw,
        agent_id=agent_id,
        expires_at=render_timestamp(ticket.expires_at),
        expires_in=round((ticket.expires_at - ticket.created_at).total_seconds()),
        stream_url=f"{stream}?{urlencode({TICKET_PARAMETER: raw})}",
    )
    return Answer(minted, status=201)


stream_tickets = json_view(
    Operation(
        "POST",
        _mint,
        operation_id="timeline_stream_ticket",
        summary="Mint a ticket that opens the agent's stream once (for EventSource)",
        description=(
            "For clients that cannot send `Authorization` (a browser's `EventSource`): the ticket goes in "
            "the stream's URL as `?ticket=`. It opens this agent's stream only, read-only (any token may "
            "mint one), once, and only within `CHARTR_STREAM_TICKET_SECONDS` (60 s by default). Each POST "
            "mints another. A reconnect mints a fresh one and resumes with `after_seq` (docs/api.md)."
        ),
        responses={201: StreamTicketMinted},
        tags=("timeline",),
        with_caller=True,
    ),
    authorize=authorize_as_read,
)
