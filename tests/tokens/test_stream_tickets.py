"""Stream tickets (tokens/services.py, tokens/access.py): minted by a token, stored hashed, one agent,
one stream, once, within CHARTR_STREAM_TICKET_SECONDS."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, transaction
from django.test import RequestFactory
from django.utils import timezone

from kernel.api.errors import Invalid, NotAuthenticated
from tokens.access import check_stream_caller
from tokens.errors import StreamTicketInvalid, StreamTicketOtherAgent
from tokens.models import StreamTicket
from tokens.services import (
    STREAM_TICKET_PREFIX,
    check_stream_ticket,
    create_api_token,
    hash_token,
    mint_stream_ticket,
    revoke_api_token,
    spend_stream_ticket,
)

pytestmark = pytest.mark.django_db


def redeem_stream_ticket(*, raw: str, agent_id: str):
    """What the stream does with a ticket (timeline/live/views.py): check it, then spend it."""
    ticket = check_stream_ticket(raw=raw, agent_id=agent_id)
    spend_stream_ticket(ticket=ticket)
    return ticket.token


def authorize_stream(request, agent_id: str):
    """The stream's caller as the stream takes it: its ticket, if any, spent."""
    caller = check_stream_caller(request, agent_id)
    if caller.ticket is not None:
        spend_stream_ticket(ticket=caller.ticket)
    return caller.token


@pytest.fixture
def token():
    return create_api_token(name="t", read_only=True)[0]


def test_a_ticket_is_stored_hashed_and_lives_the_configured_time(token, settings):
    settings.CHARTR_STREAM_TICKET_SECONDS = 17
    ticket, raw = mint_stream_ticket(token=token, agent_id="a1")
    assert raw.startswith(STREAM_TICKET_PREFIX) and len(raw) >= len(STREAM_TICKET_PREFIX) + 43
    stored = StreamTicket.objects.get()
    assert stored.ticket_hash == hash_token(raw) and raw not in str(StreamTicket.objects.values().get())
    assert stored.expires_at - stored.created_at == dt.timedelta(seconds=17)
    assert stored.agent_id == "a1" and stored.used_at is None and stored.token_id == token.pk


def test_a_ticket_opens_one_stream_once(token):
    _, raw = mint_stream_ticket(token=token, agent_id="a1")
    assert redeem_stream_ticket(raw=raw, agent_id="a1") == token
    assert StreamTicket.objects.get().used_at is not None
    with pytest.raises(StreamTicketInvalid) as refused:
        redeem_stream_ticket(raw=raw, agent_id="a1")
    assert refused.value.status == 401 and refused.value.code == "stream_ticket_invalid"


def test_minting_again_mints_another_ticket_each_good_once(token):
    raws = [mint_stream_ticket(token=token, agent_id="a1")[1] for _ in range(2)]
    assert raws[0] != raws[1] and StreamTicket.objects.count() == 2
    for raw in raws:
        assert redeem_stream_ticket(raw=raw, agent_id="a1") == token
    for raw in raws:
        with pytest.raises(StreamTicketInvalid):
            redeem_stream_ticket(raw=raw, agent_id="a1")


def test_another_agents_ticket_is_refused_and_stays_unspent(token):
    _, raw = mint_stream_ticket(token=token, agent_id="a1")
    with pytest.raises(StreamTicketOtherAgent) as refused:
        redeem_stream_ticket(raw=raw, agent_id="a2")
    assert refused.value.status == 403 and refused.value.code == "stream_ticket_other_agent"
    assert redeem_stream_ticket(raw=raw, agent_id="a1") == token


def _age(seconds: float) -> None:
    """Move every ticket ``seconds`` into the past."""
    for ticket in StreamTicket.objects.all():
        ticket.created_at -= dt.timedelta(seconds=seconds)
        ticket.expires_at -= dt.timedelta(seconds=seconds)
        ticket.save()


def test_an_expired_ticket_opens_nothing_and_the_next_mint_deletes_it(token):
    _, old = mint_stream_ticket(token=token, agent_id="a1")
    _age(61)
    with pytest.raises(StreamTicketInvalid):
        redeem_stream_ticket(raw=old, agent_id="a1")
    _, new = mint_stream_ticket(token=token, agent_id="a1")
    assert list(StreamTicket.objects.values_list("ticket_hash", flat=True)) == [hash_token(new)]


def test_unknown_tickets_and_revoked_tokens_open_nothing(token):
    for raw in ("", "nope", STREAM_TICKET_PREFIX + "x" * 43, "\x00" * 10_000):
        with pytest.raises(StreamTicketInvalid):
            redeem_stream_ticket(raw=raw, agent_id="a1")
    _, raw = mint_stream_ticket(token=token, agent_id="a1")
    revoke_api_token(token=token)
    with pytest.raises(StreamTicketInvalid):
        redeem_stream_ticket(raw=raw, agent_id="a1")
    assert StreamTicket.objects.get().used_at is None


def test_deleting_the_token_deletes_its_tickets(token):
    mint_stream_ticket(token=token, agent_id="a1")
    token.delete()
    assert not StreamTicket.objects.exists()


def test_the_database_refuses_a_ticket_that_expires_before_it_is_made(token):
    now = timezone.now()
    for fields in ({"expires_at": now}, {"agent_id": ""}, {"used_at": now - dt.timedelta(seconds=1)}):
        values = {"token": token, "ticket_hash": "0" * 64, "agent_id": "a1", "created_at": now}
        values["expires_at"] = now + dt.timedelta(seconds=60)
        values.update(fields)
        with pytest.raises(IntegrityError), transaction.atomic():
            StreamTicket.objects.create(**values)


def _stream_request(query: str = "", **headers):
    return RequestFactory().get(f"/api/v1/agents/a1/timeline/stream{query}", headers=headers)


def test_the_stream_takes_a_ticket_or_a_token_never_a_token_in_the_url(token):
    _, ticket = mint_stream_ticket(token=token, agent_id="a1")
    assert authorize_stream(_stream_request(f"?ticket={ticket}"), "a1") == token
    _, raw = create_api_token(name="t2")
    assert authorize_stream(_stream_request(authorization=f"Bearer {raw}"), "a1").name == "t2"
    with pytest.raises(NotAuthenticated) as refused:
        authorize_stream(_stream_request(f"?token={raw}"), "a1")
    assert refused.value.code == "not_authenticated"


def test_a_ticket_with_a_header_or_twice_is_a_400_and_spends_nothing(token):
    _, ticket = mint_stream_ticket(token=token, agent_id="a1")
    _, raw = create_api_token(name="t2")
    for request, problem in (
        (_stream_request(f"?ticket={ticket}", authorization=f"Bearer {raw}"), "not both"),
        (_stream_request(f"?ticket={ticket}&ticket={ticket}"), "once"),
    ):
        with pytest.raises(Invalid) as refused:
            authorize_stream(request, "a1")
        assert list(refused.value.fields) == ["ticket"] and problem in refused.value.fields["ticket"][0]
    assert StreamTicket.objects.get().used_at is None


def test_an_empty_ticket_is_no_ticket(token):
    _, raw = create_api_token(name="t2")
    assert authorize_stream(_stream_request("?ticket=", authorization=f"Bearer {raw}"), "a1").name == "t2"
    with pytest.raises(NotAuthenticated) as refused:
        authorize_stream(_stream_request("?ticket="), "a1")
    assert refused.value.code == "not_authenticated"


def test_the_fuzz_run_excuses_exactly_the_ticket_and_header_refusal():
    from tests.process.schemathesis_hooks import UNSTATABLE_REFUSALS
    from tokens.access import TICKET_AND_HEADER_MESSAGE

    assert UNSTATABLE_REFUSALS["ticket"] == TICKET_AND_HEADER_MESSAGE
