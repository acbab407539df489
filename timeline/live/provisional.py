"""Provisional (streaming) updates: fanned out to the agent's current subscribers, never stored."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

from kernel.errors import ArchivedConflict
from timeline.items import check_item_size, new_item_problems
from timeline.live.hub import get_hub
from timeline.live.messages import Provisional
from timeline.selectors import get_agent_for_timeline


def publish_provisional(*, agent_id: str, item: Any, item_id: str | None = None) -> Provisional:
    """Validate ``item`` like a committed item and send it to the agent's subscribers, in
    this process and (through the live transport) in the others.

    Nothing is written: there is no seq, and a subscriber that connects later
    never sees it. The item_id, when given, lets clients match the provisional
    item with the committed row that eventually replaces it.
    """
    errors = new_item_problems(item, item_id)
    if errors:
        raise ValidationError(errors, code="invalid")
    check_item_size(item)
    agent = get_agent_for_timeline(agent_id=agent_id)
    if agent.is_archived:
        raise ArchivedConflict(f"Agent {agent.agent_id} is archived; its timeline is closed.")
    message = Provisional(agent_id=agent.pk, item=item, item_id=item_id)
    get_hub().publish(message)
    return message
