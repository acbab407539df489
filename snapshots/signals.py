"""Signals other apps listen to, so registry and snapshots need not import timeline.

``agents_changed`` is sent after the transaction commits, with
``agent_ids`` (a list of agent ids) and ``reason`` (``"created"``,
``"updated"``, ``"archived"`` or ``"unarchived"``). The timeline's live stream
turns it into ``agent`` events for subscribers.

``agents_created`` is sent inside the transaction that inserts agents, right
after the insert, with ``agent_ids``: the timeline gives each its head there
(``timeline.services.create_timeline_heads``), so no agent is ever seen
without one. A receiver's writes roll back with the agents.
"""

from django.dispatch import Signal

agents_changed = Signal()
agents_created = Signal()
