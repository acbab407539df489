# The row updates (Paseo's updateCommittedRow): rows get a revision, heads count updates, earlier versions are kept.
# Depends on 0008 until storewrites' 0009_timeline_head_backfilling reaches main.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("snapshots", "0013_agent_id_valid_without_regexp"),
        ("timeline", "0009_timeline_head_backfilling"),
    ]

    operations = [
        migrations.CreateModel(
            name="TimelineRowRevision",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("revision", models.PositiveIntegerField()),
                ("update_seq", models.PositiveBigIntegerField(blank=True, null=True)),
                ("replaced_at", models.DateTimeField()),
                ("committed_at", models.DateTimeField()),
                ("item_type", models.CharField(max_length=64)),
                ("item", models.JSONField()),
                ("turn_id", models.CharField(blank=True, max_length=256, null=True)),
                ("provider_message_id", models.CharField(blank=True, max_length=256, null=True)),
                ("provider_timeline_item_id", models.CharField(blank=True, max_length=256, null=True)),
                ("revert_token", models.JSONField(blank=True, null=True)),
                (
                    "extra",
                    models.JSONField(
                        blank=True,
                        help_text="Keys the record came with that chartr does not model (from an import), as they were. Read-only.",
                        null=True,
                    ),
                ),
            ],
            options={
                "verbose_name": "earlier version of a row",
                "db_table": "timeline_row_revision",
                "ordering": ["row", "revision"],
            },
        ),
        migrations.AddField(
            model_name="timelinehead",
            name="update_seq",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="timelinerow",
            name="revision",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="timelinerow",
            name="update_seq",
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="timelinerow",
            index=models.Index(
                condition=models.Q(("update_seq__isnull", False)),
                fields=["agent", "update_seq"],
                name="timeline_agent_update_idx",
            ),
        ),
        migrations.AddField(
            model_name="timelinerowrevision",
            name="agent",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="timeline_row_revisions",
                to="snapshots.agentsnapshot",
            ),
        ),
        migrations.AddField(
            model_name="timelinerowrevision",
            name="row",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="revisions",
                to="timeline.timelinerow",
            ),
        ),
        migrations.AddIndex(
            model_name="timelinerowrevision",
            index=models.Index(
                condition=models.Q(("update_seq__isnull", False)),
                fields=["agent", "update_seq"],
                name="timeline_revision_update_idx",
            ),
        ),
        migrations.AddConstraint(
            model_name="timelinerowrevision",
            constraint=models.UniqueConstraint(fields=("row", "revision"), name="timeline_revision_unique"),
        ),
        migrations.AddConstraint(
            model_name="timelinerowrevision",
            constraint=models.CheckConstraint(
                condition=models.Q(("revision__gte", 1)), name="timeline_revision_positive"
            ),
        ),
    ]
