"""Indexes for the admin's timeline page: jump to a time, filter by item type, search the text.

The text search index differs by engine (an FTS5 table and its delete trigger
on SQLite, an expression GIN index on PostgreSQL); each engine's class in
timeline/search/ builds it, filling it with the rows already stored.
"""

from django.db import migrations, models


def create_search_index(apps, schema_editor):
    from timeline.search import timeline_search

    timeline_search(schema_editor.connection).create_index(schema_editor)


def drop_search_index(apps, schema_editor):
    from timeline.search import timeline_search

    timeline_search(schema_editor.connection).drop_index(schema_editor)


class Migration(migrations.Migration):
    dependencies = [
        ("snapshots", "0001_initial"),
        ("timeline", "0004_row_turn_id"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="timelinerow",
            index=models.Index(fields=["agent", "committed_at", "seq"], name="timeline_agent_time_idx"),
        ),
        migrations.AddIndex(
            model_name="timelinerow",
            index=models.Index(fields=["agent", "item_type", "seq"], name="timeline_agent_type_idx"),
        ),
        migrations.RunPython(create_search_index, drop_search_index, elidable=False),
    ]
