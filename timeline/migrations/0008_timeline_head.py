"""The timeline's bookkeeping gets its own table, one row per agent, filled from the agents' columns.

``snapshots 0011`` then drops those columns from the agent table.
"""

import django.db.models.deletion
from django.db import migrations, models

import snapshots.models

#: The columns copied, the same name on both sides but the epoch.
_COPIED = (
    ("head_seq", "head_seq"),
    ("min_seq", "min_seq"),
    ("timeline_epoch", "epoch"),
    ("committed_rows", "committed_rows"),
    ("committed_bytes", "committed_bytes"),
    ("last_activity_at", "last_activity_at"),
    ("last_user_message_at", "last_user_message_at"),
)


def copy_heads(apps, schema_editor):
    quote = schema_editor.quote_name
    agents = apps.get_model("snapshots", "AgentSnapshot")._meta.db_table
    heads = apps.get_model("timeline", "TimelineHead")._meta.db_table
    targets = ", ".join(quote(target) for _, target in _COPIED)
    sources = ", ".join(quote(source) for source, _ in _COPIED)
    schema_editor.execute(
        f"INSERT INTO {quote(heads)} ({quote('agent_id')}, {targets}) "
        f"SELECT {quote('agent_id')}, {sources} FROM {quote(agents)}"
    )


def copy_heads_back(apps, schema_editor):
    quote = schema_editor.quote_name
    agents = apps.get_model("snapshots", "AgentSnapshot")._meta.db_table
    heads = apps.get_model("timeline", "TimelineHead")._meta.db_table
    for source, target in _COPIED:
        schema_editor.execute(
            f"UPDATE {quote(agents)} SET {quote(source)} = (SELECT h.{quote(target)} FROM {quote(heads)} h "
            f"WHERE h.{quote('agent_id')} = {quote(agents)}.{quote('agent_id')}) "
            f"WHERE {quote('agent_id')} IN (SELECT {quote('agent_id')} FROM {quote(heads)})"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("snapshots", "0010_agent_epoch_128_and_extra"),
        ("timeline", "0007_row_paseo_keys_and_extra"),
    ]

    operations = [
        migrations.CreateModel(
            name="TimelineHead",
            fields=[
                (
                    "agent",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="timeline_head",
                        serialize=False,
                        to="snapshots.agentsnapshot",
                    ),
                ),
                ("head_seq", models.PositiveBigIntegerField(default=0)),
                ("min_seq", models.PositiveBigIntegerField(default=1)),
                ("epoch", models.CharField(default=snapshots.models.new_timeline_epoch, max_length=128)),
                ("committed_rows", models.PositiveBigIntegerField(default=0)),
                ("committed_bytes", models.PositiveBigIntegerField(default=0)),
                ("last_activity_at", models.DateTimeField(blank=True, null=True)),
                ("last_user_message_at", models.DateTimeField(blank=True, null=True)),
                ("last_appended_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={
                "verbose_name": "timeline head",
                "db_table": "timeline_head",
                "indexes": [models.Index(fields=["-last_activity_at"], name="timeline_head_activity_idx")],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("min_seq__gte", 1), ("min_seq__lte", models.F("head_seq") + 1)),
                        name="timeline_head_retained_range_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("committed_bytes__gte", 0), ("committed_rows__gte", 0)),
                        name="timeline_head_counters_not_negative",
                    ),
                ],
            },
        ),
        migrations.RunPython(copy_heads, copy_heads_back),
    ]
