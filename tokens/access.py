"""Who may call /api/: the one implementation of the bearer token, its permission and its throttle,
and of the stream ticket (``?ticket=``, the one credential a URL may carry).

DRF's classes (tokens/authentication.py, permissions.py, throttling.py), the timeline's plain
views (kernel/api/plain.py) and the live stream (timeline/live/views.py) all call these. A
refusal is a ``kernel.api.errors`` error, answered with the API's envelope wherever it is raised.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel.api.errors import Invalid, NotAuthenticated, PermissionDenied, Throttled
from tokens.cache import token_cache
from tokens.models import ApiToken, StreamTicket
from tokens.services import check_stream_ticket, hash_token, record_api_token_use
from tokens.throttling import throttle_wait

KEYWORD = "Bearer"
#: The methods a read-only token may use.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_ONLY_MESSAGE = "This token is read-only."
NO_CREDENTIALS_MESSAGE = "Authentication credentials were not provided."


def authorization_header(request) -> str | bytes:
    """The ``Authorization`` header, read from ``META`` where the server put it (``request.headers``
    builds a dict of every header on first use, to look up this one)."""
    return request.META.get("HTTP_AUTHORIZATION", "")


def bearer_token(request, *, fresh: bool = False) -> ApiToken | None:
    """The active token the request carries, or None when it sends no ``Authorization`` at all
    (``fresh``: read from the database, not the token cache).

    A malformed header, an unknown or a revoked token is ``NotAuthenticated`` (401)."""
    header = authorization_header(request)
    if not header:
        return None
    try:
        text = header.decode("ascii") if isinstance(header, bytes) else header.encode("latin-1").decode("ascii")
    except (UnicodeDecodeError, UnicodeEncodeError):
        raise NotAuthenticated("The Authorization header is malformed.") from None
    keyword, _, raw = text.partition(" ")
    raw = raw.strip()
    if keyword.lower() != KEYWORD.lower() or not raw or " " in raw:
        raise NotAuthenticated(f"Use 'Authorization: {KEYWORD} <token>'.")
    # Keyed by the hash: the raw token is never kept in memory past this request.
    token = token_cache.active_token(hash_token(raw), fresh=fresh)
    if token is None:
        raise NotAuthenticated("The token is unknown or has been revoked.")
    record_api_token_use(token=token)
    return token


def token_may(token: ApiToken | None, method: str) -> bool:
    """Any valid token may read; only a read-write token may write."""
    if not isinstance(token, ApiToken):
        return False
    return method in SAFE_METHODS or not token.read_only


def authorize(request, *, as_read: bool = False, fresh: bool = False) -> ApiToken:
    """The request's token, checked as DRF checks a view's: authentication (401), permission for
    the method (403; none with ``as_read``, for a POST that grants reading only), then the token's
    rate (429). ``fresh``: the token is read from the database, not the per-process cache."""
    token = bearer_token(request, fresh=fresh)
    if token is None:
        raise NotAuthenticated(NO_CREDENTIALS_MESSAGE)
    if not as_read and not token_may(token, request.method):
        raise PermissionDenied(READ_ONLY_MESSAGE)
    wait = throttle_wait(token)
    if wait is not None:
        raise Throttled(wait)
    return token


def authorize_as_read(request) -> ApiToken:
    """``authorize`` for a POST that only grants reading (minting a stream ticket): any token may."""
    return authorize(request, as_read=True)


#: The stream's one URL credential; a token in a URL (``?token=``) is never read.
TICKET_PARAMETER = "ticket"


def stream_ticket(request) -> str | None:
    """The raw ``?ticket=`` the request carries, or None without one (empty is none, as for any
    query parameter). Given twice is a 400."""
    given = request.GET.getlist(TICKET_PARAMETER)
    if len(given) > 1:
        raise Invalid({TICKET_PARAMETER: ["Give this parameter once."]})
    return given[0] if given and given[0] else None


#: The refusal of a ticket sent with ``Authorization``; tests/process/schemathesis_hooks.py names it
#: (OpenAPI's security alternatives cannot say "one, not both").
TICKET_AND_HEADER_MESSAGE = "Send a ticket or an Authorization header, not both."


@dataclass(frozen=True)
class StreamCaller:
    """Who opens a stream: the token, and the ticket it came with (not spent yet), if any."""

    token: ApiToken
    ticket: StreamTicket | None = None


def check_stream_caller(request, agent_id: str) -> StreamCaller:
    """The stream's caller: ``?ticket=`` for ``agent_id`` (checked, not spent: the stream spends it
    with ``spend_stream_ticket`` once its slot is taken), else the bearer token as ``authorize``
    checks it, read fresh from the database. Either way opening the stream counts against the
    token's rate (429), checked before anything is spent. Both at once is a 400: which one speaks
    for the request would be a guess. Blocking (ORM)."""
    raw = stream_ticket(request)
    if raw is None:
        return StreamCaller(authorize(request, fresh=True))
    if authorization_header(request):
        raise Invalid({TICKET_PARAMETER: [TICKET_AND_HEADER_MESSAGE]})
    ticket = check_stream_ticket(raw=raw, agent_id=agent_id)
    record_api_token_use(token=ticket.token)
    wait = throttle_wait(ticket.token)
    if wait is not None:
        raise Throttled(wait)
    return StreamCaller(ticket.token, ticket)
