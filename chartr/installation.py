"""Whether this installation is ready for a command: its database exists and is migrated.

``manage.py`` asks before every command but those that set an installation up
or need no database (``SETS_UP_OR_NEEDS_NO_DATABASE``). The answer is one line
naming the database, the data dir and the variable it came from, and how to
migrate; nothing is written, no data dir or secret key is created (settings
write nothing; ``manage.py migrate`` does).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection

from chartr import paths
from kernel.engines import for_engine
from kernel.migrations import is_migrated, unapplied_migrations

SETS_UP_OR_NEEDS_NO_DATABASE = frozenset(
    {"migrate", "migrate_safely", "prepare_server", "help", "version", "check", "makemigrations", "squashmigrations",
     "optimizemigration", "collectstatic", "findstatic", "diffsettings", "test", "spectacular", "startapp",
     "startproject", "makemessages", "compilemessages", "sendtestemail"}
)  # fmt: skip
MIGRATE = "run `manage.py migrate` to create and migrate it"


def _data_dir() -> str:
    origin = paths.data_dir_origin()
    unset = {"CHARTR_DATA_DIR": "", "XDG_DATA_HOME": "; CHARTR_DATA_DIR is unset"}.get(
        origin, "; CHARTR_DATA_DIR and XDG_DATA_HOME are unset"
    )
    return f"the data dir {settings.DATA_DIR} (from {origin}{unset})"


def _sqlite_database() -> str:
    path = Path(connection.settings_dict["NAME"])
    return f"{path} in {_data_dir()}" if path.parent == settings.DATA_DIR else f"{path} (from DATABASE_URL)"


def _postgres_database() -> str:
    db = connection.settings_dict
    return f"{db['NAME']} on {db['HOST'] or 'localhost'}:{db['PORT'] or 5432} (from DATABASE_URL)"


def _sqlite_file_problem() -> str | None:
    """Before connecting, which would create the file: no data dir, or no database file in it."""
    path = Path(connection.settings_dict["NAME"])
    if path.is_file():
        return None
    if path.parent == settings.DATA_DIR and not settings.DATA_DIR.is_dir():
        return f"{_data_dir()} does not exist, so there is no database: {MIGRATE}, or point CHARTR_DATA_DIR at the data dir of an existing installation."
    return f"there is no database at {_sqlite_database()}: {MIGRATE}."


def problem(argv: list[str]) -> str | None:
    """Why ``manage.py`` with ``argv`` cannot run here, in one line; None when it can (or only prints help)."""
    command = argv[1] if len(argv) > 1 else "help"
    if command.startswith("-") or command in SETS_UP_OR_NEEDS_NO_DATABASE or {"-h", "--help"} & set(argv):
        return None
    database = for_engine(connection, {"sqlite": _sqlite_database, "postgresql": _postgres_database})()
    before_connecting = for_engine(connection, {"sqlite": _sqlite_file_problem}, default=lambda: None)()
    if before_connecting:
        return f"chartr: {before_connecting}"
    try:
        # ``manage.py migrate --check``; the count only once it is known to be needed.
        pending = 0 if is_migrated(connection.alias) else unapplied_migrations(connection.alias)
    except DatabaseError as error:
        reason = "; ".join(line.strip() for line in str(error).strip().splitlines() if line.strip())
        return f"chartr: cannot open the database {database}: {reason.rstrip('.')} (create it or correct DATABASE_URL, then run `manage.py migrate`)."
    finally:
        connection.close()
    if pending:
        return (
            f"chartr: the database {database} is not migrated ({pending} migrations to apply): run `manage.py migrate`."
        )
    return None
