"""The newest item and the newest assistant message of a timeline (Paseo's ``getLastItem``
and ``getLastAssistantMessage``): each a bounded index read after the agent's head.

- ``last_item``: the head, then the newest row (the (agent, seq) index, one row): two queries.
- ``last_assistant_message``: the head, then the newest ``assistant_message`` rows through the
  (agent, item_type, seq) index, newest first, in batches of ``BATCH`` until the message is whole
  (the usual message takes one batch: two queries). See docs/timeline.md for which chunks join.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import msgspec
from django.conf import settings
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Trim

from kernel.errors import NotFound
from timeline.errors import TooManyRows
from timeline.models import TimelineRow
from timeline.reads.page_sql import page_sql

BATCH = 200
#: The most rows ``user_message_texts`` answers (one message id names one message; a few retries at most).
USER_MESSAGE_MATCHES = 100


@dataclass(frozen=True)
class LastItem:
    seq: int | None
    #: the stored JSON text, as the database holds it
    item: msgspec.Raw | None


@dataclass(frozen=True)
class LastMessage:
    text: str | None
    seq_start: int | None
    seq_end: int | None


def _require_agent(agent_id: str) -> None:
    if page_sql().agent(agent_id) is None:
        raise NotFound(f"Agent {agent_id} does not exist.")


def last_item(*, agent_id: str) -> LastItem:
    _require_agent(agent_id)
    rows = page_sql().rows(agent_id, "tail", None, 1, decode_items=False)
    if not rows:
        return LastItem(seq=None, item=None)
    return LastItem(seq=rows[0]["seq"], item=msgspec.Raw(rows[0]["item"]))


def user_message_texts(*, agent_id: str, message_id: str) -> list[str]:
    """The texts of the agent's ``user_message`` rows whose ``messageId``, trimmed, is ``message_id``
    trimmed (Paseo's ``hasCommittedUserMessage`` compares one of them with its text), oldest first.

    One statement through the (agent, item_type, seq) index, whatever the history's length; an id
    that is blank once trimmed matches nothing, as in Paseo.
    """
    _require_agent(agent_id)
    wanted = message_id.strip()
    if not wanted:
        return []
    rows = (
        TimelineRow.objects.filter(agent_id=agent_id, item_type="user_message")
        .annotate(message_id=Trim(KeyTextTransform("messageId", "item")))
        .filter(message_id=wanted)
        .order_by("seq")
        .values_list("item", flat=True)[:USER_MESSAGE_MATCHES]
    )
    return [item["text"] for item in rows if isinstance(item.get("text"), str)]


def _newest_chunks(agent_id: str) -> Iterator[tuple[int, dict, str | None]]:
    """The agent's assistant_message rows, newest first: (seq, item, turn_id), read a batch at a time,
    at most CHARTR_TIMELINE_READ_ALL_MAX_ROWS of them (past that: ``too_many_rows``)."""
    bound = settings.CHARTR_TIMELINE_READ_ALL_MAX_ROWS
    rows = TimelineRow.objects.filter(agent_id=agent_id, item_type="assistant_message").order_by("-seq")
    below, walked = None, 0
    while True:
        batch = rows if below is None else rows.filter(seq__lt=below)
        found = list(batch.values_list("seq", "item", "turn_id")[:BATCH])
        for seq, item, turn_id in found:
            walked += 1
            if walked > bound:
                raise TooManyRows.for_window(bound)
            yield seq, item, turn_id or None
        if len(found) < BATCH:
            return
        below = found[-1][0]


def _message_id(item: dict) -> str | None:
    found = item.get("messageId") if isinstance(item, dict) else None
    return found if isinstance(found, str) and found else None


def last_assistant_message(*, agent_id: str) -> LastMessage:
    """The newest assistant message, its chunks joined in seq order (docs/timeline.md)."""
    _require_agent(agent_id)
    chunks = _gather(_newest_chunks(agent_id))
    if not chunks:
        return LastMessage(text=None, seq_start=None, seq_end=None)
    return LastMessage(text="".join(text for _, text in chunks), seq_start=chunks[0][0], seq_end=chunks[-1][0])


def _gather(newest_first: Iterator[tuple[int, dict, str | None]]) -> list[tuple[int, str]]:
    """The (seq, text) chunks of the newest message, ascending, as the projection folds them.

    Within the newest chunk's turn: a chunk naming a ``messageId`` takes the older chunks naming it
    (others between them are passed over) up to a chunk naming another. A chunk naming none takes
    the unnamed chunks right before it (seq by seq); if that run reaches a named chunk, the run
    continues that message only when its chunks lie one right after another (nothing between them)."""
    run: list[tuple[int, str]] = []
    named: list[tuple[int, str]] = []
    message_id = turn = None
    unbroken = True
    for seq, item, turn_id in newest_first:
        text, chunk_id = _text(item), _message_id(item)
        if not run:
            run, turn, message_id = [(seq, text)], turn_id, chunk_id
            continue
        if turn_id != turn:
            break
        if message_id is None:  # the newest chunk is unnamed: its run, seq by seq
            if seq != run[-1][0] - 1:
                break
            if chunk_id is None:
                run.append((seq, text))
            else:
                message_id, named = chunk_id, [(seq, text)]
            continue
        if chunk_id == message_id:
            target = named if named else run
            unbroken = unbroken and seq == target[-1][0] - 1
            target.append((seq, text))
        elif chunk_id is None:
            unbroken = False
        else:
            break
    if named and unbroken:
        run = run + named
    return run[::-1]


def _text(item: dict) -> str:
    text = item.get("text") if isinstance(item, dict) else None
    return text if isinstance(text, str) else ""
