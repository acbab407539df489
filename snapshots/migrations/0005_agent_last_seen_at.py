from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import Coalesce, Greatest


def seen_when_last_changed(apps, schema_editor):
    """Existing agents were last heard from when they last changed or appended, whichever is later."""
    AgentSnapshot = apps.get_model("snapshots", "AgentSnapshot")
    AgentSnapshot.objects.update(
        last_seen_at=Greatest(F("updated_at"), Coalesce(F("last_activity_at"), F("updated_at")))
    )


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0001_initial"),
        ("snapshots", "0004_agent_verbose_name"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsnapshot",
            name="last_seen_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(seen_when_last_changed, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="agentsnapshot",
            index=models.Index(
                condition=models.Q(("archived_at__isnull", True), ("lifecycle__in", ("running", "initializing"))),
                fields=["last_seen_at"],
                name="agent_active_seen_idx",
            ),
        ),
    ]
