"""ApiToken, taken over from the chartr app: its table ``chartr_apitoken`` stays as it is."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from kernel.migrations import move_content_type


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("contenttypes", "0002_remove_content_type_name"),
        ("chartr", "0002_hand_over_models"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=128)),
                        ("prefix", models.CharField(db_index=True, max_length=16)),
                        ("token_hash", models.CharField(editable=False, max_length=64, unique=True)),
                        ("read_only", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "API token",
                        "db_table": "chartr_apitoken",
                        "ordering": ["-created_at"],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(("token_hash__regex", "^[0-9a-f]{64}$")),
                                name="api_token_hash_is_sha256",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(*move_content_type(model="apitoken", from_app="chartr", to_app="tokens")),
    ]
