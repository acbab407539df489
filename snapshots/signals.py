"""Signals other apps listen to, so registry and snapshots need not import timeline.

``agents_changed`` is sent after the transaction commits, with
``agent_ids`` (a list of agent ids) and ``reason`` (``"created"``,
``"updated"``, ``"archived"`` or ``"unarchived"``). The timeline's live stream
turns it into ``agent`` events for subscribers.
"""

from django.dispatch import Signal

agents_changed = Signal()
