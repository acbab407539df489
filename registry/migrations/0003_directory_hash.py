"""Directories are unique through a sha256 of the path, not an index on the path itself.

PostgreSQL's btree refuses an index row over about 2,700 bytes, so a directory
of ~3,000 incompressible characters (within MAX_DIRECTORY_LENGTH, 4,096) was a
500 there while SQLite stored it. The unique index moves to ``directory_hash``
(64 hex characters), filled here for existing rows before the constraint is
added. A plain column and index: no expression index on a function only
chartr's connections define, so any SQLite tool can still open the file.
"""

import hashlib

import django.db.models.functions.text
import django.db.models.lookups
from django.db import migrations, models

import registry.models

BATCH = 500


def fill_directory_hashes(apps, schema_editor):
    for name in ("Project", "Workspace"):
        model = apps.get_model("registry", name)
        rows = model.objects.using(schema_editor.connection.alias).only("pk", "directory").order_by("pk")
        batch = []
        for row in rows.iterator(chunk_size=BATCH):
            # The rule of registry.directories.directory_hash, frozen here as migrations must be.
            row.directory_hash = hashlib.sha256(row.directory.encode("utf-8")).hexdigest()
            batch.append(row)
            if len(batch) == BATCH:
                model.objects.bulk_update(batch, ["directory_hash"])
                batch = []
        model.objects.bulk_update(batch, ["directory_hash"])


def hash_constraints(prefix: str) -> list:
    return [
        migrations.AddConstraint(
            model_name=prefix,
            constraint=models.UniqueConstraint(fields=("directory_hash",), name=f"{prefix}_directory_hash_unique"),
        ),
        migrations.AddConstraint(
            model_name=prefix,
            constraint=models.CheckConstraint(
                condition=django.db.models.lookups.Exact(django.db.models.functions.text.Length("directory_hash"), 64),
                name=f"{prefix}_directory_hash_length",
            ),
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0002_paseo_fields"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="directory_hash",
            field=registry.models.DirectoryHashField(blank=True, editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name="workspace",
            name="directory_hash",
            field=registry.models.DirectoryHashField(blank=True, editable=False, max_length=64),
        ),
        migrations.RunPython(fill_directory_hashes, migrations.RunPython.noop, elidable=False),
        migrations.AlterField(
            model_name="project",
            name="directory",
            field=models.CharField(max_length=4096),
        ),
        migrations.AlterField(
            model_name="workspace",
            name="directory",
            field=models.CharField(max_length=4096),
        ),
        *hash_constraints("project"),
        *hash_constraints("workspace"),
    ]
