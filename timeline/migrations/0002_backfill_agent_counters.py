"""Fill the agents' new growth counters from the rows they already have."""

import json

from django.db import migrations
from django.db.models import Count


def item_bytes(item) -> int:
    # A copy of timeline.items.item_bytes: a migration keeps working when the app's code moves on.
    return len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def backfill(apps, schema_editor):
    AgentSnapshot = apps.get_model("snapshots", "AgentSnapshot")
    TimelineRow = apps.get_model("timeline", "TimelineRow")
    rows = dict(TimelineRow.objects.order_by().values("agent_id").annotate(n=Count("pk")).values_list("agent_id", "n"))
    for agent_id, count in rows.items():
        size = sum(
            item_bytes(item)
            for item in TimelineRow.objects.filter(agent_id=agent_id).values_list("item", flat=True).iterator(2000)
        )
        AgentSnapshot.objects.filter(pk=agent_id).update(committed_rows=count, committed_bytes=size)


class Migration(migrations.Migration):
    dependencies = [
        ("snapshots", "0006_agent_committed_counters"),
        ("timeline", "0001_initial"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
