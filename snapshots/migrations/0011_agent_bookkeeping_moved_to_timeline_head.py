"""The timeline's bookkeeping left the agent table: ``timeline 0008`` copied it into ``timeline_head``."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("snapshots", "0010_agent_epoch_128_and_extra"),
        ("timeline", "0008_timeline_head"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="agentsnapshot", name="agent_retained_range_valid"),
        migrations.RemoveIndex(model_name="agentsnapshot", name="agent_last_activity_idx"),
        migrations.RemoveField(model_name="agentsnapshot", name="head_seq"),
        migrations.RemoveField(model_name="agentsnapshot", name="min_seq"),
        migrations.RemoveField(model_name="agentsnapshot", name="timeline_epoch"),
        migrations.RemoveField(model_name="agentsnapshot", name="committed_rows"),
        migrations.RemoveField(model_name="agentsnapshot", name="committed_bytes"),
        migrations.RemoveField(model_name="agentsnapshot", name="last_activity_at"),
        migrations.RemoveField(model_name="agentsnapshot", name="last_user_message_at"),
    ]
