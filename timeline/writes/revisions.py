"""Updating a committed row in place (Paseo's ``updateCommittedRow``): ``update_row``.

The row keeps its seq; its item, commit time and Paseo keys change. What it held
before is kept as a ``TimelineRowRevision``, so nothing is lost. Each update takes
the agent's next update number (``TimelineHead.update_seq``) and stamps it on the
row (``TimelineRow.update_seq``), which is how a reconnecting stream finds the
updates it missed (docs/timeline.md, "Updates"). Updating a row to what it
already holds changes nothing: no revision, no update number, no event.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, JSONField, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from timeline.errors import RowNotFound
from timeline.items import check_item_size, item_bytes, new_item_problems, same_item
from timeline.models import TimelineHead, TimelineRow, TimelineRowRevision, has_revert_token
from timeline.search import timeline_search
from timeline.signals import timeline_updated
from timeline.writes.head import lock_agent

#: The largest seq a row can have (a signed 64-bit column).
MAX_SEQ = 2**63 - 1
#: "The row has no revert token" (SQL NULL), apart from a JSON null token.
NO_TOKEN: Any = object()
#: The fields an update writes, and that a revision keeps, besides the item.
COPIED_FIELDS = ("committed_at", "item_type", "item", "turn_id", "provider_message_id", "provider_timeline_item_id")


@dataclass(frozen=True)
class RowContent:
    """What a row holds besides its seq and item id: the content an update sets."""

    item: dict
    #: None keeps the row's commit time.
    committed_at: dt.datetime | None = None
    turn_id: str | None = None
    provider_message_id: str | None = None
    provider_timeline_item_id: str | None = None
    #: ``NO_TOKEN`` for no token; anything else is the token (a JSON null included).
    revert_token: Any = NO_TOKEN


@dataclass(frozen=True)
class RowUpdate:
    row: TimelineRow
    #: False when the row already held this content (nothing was written).
    changed: bool
    #: The agent's update count after the call.
    update_seq: int
    epoch: str


def update_row(*, agent_id: str, seq: int, content: RowContent) -> RowUpdate:
    """Give the agent's committed row ``seq`` the content ``content``, keeping what it held as a revision.

    404 ``not_found`` for an unknown agent, 404 ``row_not_found`` for a seq the agent does
    not hold, 409 ``archived`` for an archived agent. The same content again is a no-op
    (``changed`` False), so a retried update never stores a second revision. Under the
    agent's timeline head lock, as an append, so updates and appends of one agent are
    ordered; ``timeline_updated`` is sent once the transaction commits.
    """
    _check_content(content)
    with transaction.atomic():
        agent = lock_agent(agent_id, allow_archived=False)
        # A seq no row can have (0, or past a bigint) is looked up nowhere.
        row = (
            TimelineRow.objects.select_for_update()
            .annotate(has_revert_token=has_revert_token())
            .filter(agent_id=agent_id, seq=seq)
            .first()
            if 1 <= seq <= MAX_SEQ
            else None
        )
        if row is None:
            raise RowNotFound(
                f"Agent {agent_id} holds no row {seq}.",
                extra={"seq": seq, "min_seq": agent.min_seq, "head_seq": agent.head_seq},
            )
        head = TimelineHead.objects.filter(pk=agent_id).values_list("update_seq", flat=True).get()
        if holds(row, content):
            return RowUpdate(row=row, changed=False, update_seq=head, epoch=agent.timeline_epoch)
        update_seq = head + 1
        size_change = item_bytes(content.item) - item_bytes(row.item)
        _keep_revision(row)
        _apply(row, content, update_seq=update_seq)
        # Never below 0, even on counters that drifted (``timeline.writes.counters`` repairs them).
        committed_bytes = Greatest(F("committed_bytes") + size_change, Value(0))
        TimelineHead.objects.filter(pk=agent_id).update(update_seq=update_seq, committed_bytes=committed_bytes)
        timeline_search(agent.connection).reindex_row(row.pk)
        epoch = agent.timeline_epoch
        transaction.on_commit(
            lambda: timeline_updated.send(
                sender=TimelineRow, agent_id=agent_id, seq=seq, update_seq=update_seq, epoch=epoch
            )
        )
    return RowUpdate(row=row, changed=True, update_seq=update_seq, epoch=epoch)


def _check_content(content: RowContent) -> None:
    errors = new_item_problems(content.item, None)
    if content.committed_at is not None and timezone.is_naive(content.committed_at):
        errors["committed_at"] = ["A time with its offset (Z or +HH:MM)."]
    if errors:
        raise ValidationError(errors, code="invalid")
    check_item_size(content.item)


def holds(row: TimelineRow, content: RowContent) -> bool:
    """Whether ``row`` (read with ``has_revert_token``) already holds ``content`` (items and tokens
    compared as JSON, on both databases alike)."""
    committed_at = content.committed_at or row.committed_at
    token_same = (
        not row.has_revert_token
        if content.revert_token is NO_TOKEN
        else row.has_revert_token and same_item(row.revert_token, content.revert_token)
    )
    return (
        same_item(row.item, content.item)
        and committed_at == row.committed_at
        and row.turn_id == content.turn_id
        and row.provider_message_id == content.provider_message_id
        and row.provider_timeline_item_id == content.provider_timeline_item_id
        and token_same
    )


def _keep_revision(row: TimelineRow) -> None:
    kept = {"revision": row.current_revision, "update_seq": row.update_seq, "replaced_at": timezone.now()}
    revision_of(row, row=row, agent_id=row.agent_id, **kept).save(force_insert=True)


def revision_of(source: Any, **values: Any) -> TimelineRowRevision:
    """An earlier version holding ``source``'s content (a row read with ``has_revert_token``, or a carried
    revision); ``values`` set its other fields."""
    token = stored_revert_token(source.revert_token if source.has_revert_token else NO_TOKEN)
    content = {name: getattr(source, name) for name in COPIED_FIELDS}
    return TimelineRowRevision(revert_token=token, extra=source.extra, **content, **values)


def stored_revert_token(token: Any) -> Any:
    """What to save for ``token``: SQL NULL for none, JSON null for a null token."""
    if token is NO_TOKEN:
        return None
    return Value(None, JSONField()) if token is None else token


def _apply(row: TimelineRow, content: RowContent, *, update_seq: int) -> None:
    row.item = content.item
    row.item_type = content.item["type"]
    if content.committed_at is not None:
        row.committed_at = content.committed_at
    row.turn_id = content.turn_id
    row.provider_message_id = content.provider_message_id
    row.provider_timeline_item_id = content.provider_timeline_item_id
    row.revert_token = stored_revert_token(content.revert_token)
    row.revision = row.current_revision + 1
    row.update_seq = update_seq
    row.save(update_fields=[*COPIED_FIELDS, "revert_token", "revision", "update_seq"])
    row.has_revert_token = content.revert_token is not NO_TOKEN
    row.revert_token = None if content.revert_token is NO_TOKEN else content.revert_token
