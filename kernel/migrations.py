"""Migration helpers: whether the database is migrated, asked through Django's documented commands
(``migrate --check``, ``showmigrations --plan``); and for migrations that move a model between apps
without moving its table, the move of its content type."""

from __future__ import annotations

import io

from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS
from django.db.migrations.exceptions import InconsistentMigrationHistory


def is_migrated(database: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether every migration is applied, as ``manage.py migrate --check`` answers it (the plan
    ``migrate`` would run is empty). A history missing a migration that a recorded one depends on
    is not migrated either. Raises ``DatabaseError`` when the database cannot be read."""
    try:
        call_command("migrate", check=True, database=database, verbosity=0, stdout=io.StringIO())
    except SystemExit as exit_:  # --check says "not migrated" by exiting 1
        if exit_.code != 1:
            raise
        return False
    except InconsistentMigrationHistory:
        return False
    return True


def unapplied_migrations(database: str = DEFAULT_DB_ALIAS) -> int:
    """How many migrations ``manage.py showmigrations --plan`` marks as not applied (``[ ]``)."""
    shown = io.StringIO()
    call_command("showmigrations", "--plan", database=database, no_color=True, stdout=shown)
    return sum(line.startswith("[ ]") for line in shown.getvalue().splitlines())


def not_migrated(database: str = DEFAULT_DB_ALIAS) -> str | None:
    """``"N migration(s) not applied"`` when the database is not migrated, else None."""
    if is_migrated(database):
        return None
    return f"{unapplied_migrations(database)} migration(s) not applied"


def move_content_type(*, model: str, from_app: str, to_app: str):
    """A RunPython pair that relabels a model's content type, so its permissions,
    group grants and admin log entries follow the model instead of being orphaned."""

    def forwards(apps, schema_editor):
        _relabel(apps, model=model, old=from_app, new=to_app)

    def backwards(apps, schema_editor):
        _relabel(apps, model=model, old=to_app, new=from_app)

    return forwards, backwards


def _relabel(apps, *, model: str, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    if content_type.objects.filter(app_label=new, model=model).exists():
        return
    content_type.objects.filter(app_label=old, model=model).update(app_label=new)
