"""ImportRun, taken over from the chartr app: its table ``chartr_importrun`` stays as it is."""

from django.db import migrations, models

from kernel.migrations import move_content_type


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("chartr", "0002_hand_over_models"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ImportRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("source_path", models.CharField(max_length=4096)),
                        ("backup_path", models.CharField(blank=True, default="", max_length=4096)),
                        ("started_at", models.DateTimeField()),
                        ("finished_at", models.DateTimeField()),
                        ("counts", models.JSONField(default=dict)),
                        ("skipped", models.JSONField(blank=True, default=list)),
                        ("warnings", models.JSONField(blank=True, default=list)),
                    ],
                    options={
                        "verbose_name": "legacy import",
                        "db_table": "chartr_importrun",
                        "ordering": ["-started_at"],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(*move_content_type(model="importrun", from_app="chartr", to_app="legacy")),
    ]
