"""Drop the timeline row's single-column ``agent_id`` index; search indexing in batches.

The (agent, seq) unique index serves every lookup the foreign key's own index
served (the cascade of an agent's delete, pruning, the admin's lists), so that
index (and PostgreSQL's ``varchar_pattern_ops`` twin for ``LIKE``, which no
query uses) only cost every append a page. ``AlterField`` would remake the
whole table on SQLite (dropping the search index's delete trigger with it), so
the indexes are dropped by name, as the introspection finds them.

Going back, the indexes are built again, and on SQLite the search backlog
(timeline/search/sqlite.py) is indexed, so code that indexes every row as it
is appended finds every row indexed.
"""

from django.db import migrations, models


def _agent_field(apps):
    model = apps.get_model("timeline", "TimelineRow")
    return model, model._meta.get_field("agent")


def drop_agent_indexes(apps, schema_editor):
    model, field = _agent_field(apps)
    for name in schema_editor._constraint_names(model, [field.column], index=True, unique=False, primary_key=False):
        schema_editor.execute(schema_editor._delete_index_sql(model, name))


def create_agent_indexes(apps, schema_editor):
    model, field = _agent_field(apps)
    schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))
    like_index_sql = getattr(schema_editor, "_create_like_index_sql", None)  # PostgreSQL's editor only
    if like_index_sql is not None and (statement := like_index_sql(model, field)) is not None:
        schema_editor.execute(statement)


def index_search_backlog(apps, schema_editor):
    from timeline.search import timeline_search

    timeline_search(schema_editor.connection).index_backlog()


class Migration(migrations.Migration):
    dependencies = [
        ("snapshots", "0001_initial"),
        ("timeline", "0005_timeline_page_indexes_and_text_search"),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, index_search_backlog, elidable=False),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="timelinerow",
                    name="agent",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="timeline_rows",
                        to="snapshots.agentsnapshot",
                    ),
                ),
            ],
            database_operations=[migrations.RunPython(drop_agent_indexes, create_agent_indexes, elidable=False)],
        ),
    ]
