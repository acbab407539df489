"""The tokens' own refusals: a stream ticket that opens nothing (the token refusals are in ``kernel.api.errors``)."""

from __future__ import annotations

from kernel.api.errors import NotAuthenticated, PermissionDenied


class StreamTicketInvalid(NotAuthenticated):
    """The stream ticket is unknown, expired, already used, or its token was revoked: mint a new one."""

    code = "stream_ticket_invalid"


class StreamTicketOtherAgent(PermissionDenied):
    """The stream ticket opens another agent's stream."""

    code = "stream_ticket_other_agent"
