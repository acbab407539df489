from django.db.backends.sqlite3 import base, schema

from chartr.db_backends import CascadingForeignKeysMixin
from chartr.db_backends.sqlite3.filesystems import network_filesystem_of


class DatabaseSchemaEditor(CascadingForeignKeysMixin, schema.DatabaseSchemaEditor):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor

    def is_lock_wait_timeout(self, error: Exception) -> bool:
        """Whether ``error`` means another writer held the database past the busy timeout."""
        message = str(error)
        return "database is locked" in message or "database table is locked" in message

    def storage_problem(self) -> str | None:
        """Why this database cannot be served safely, or None: SQLite's locks do not hold across machines."""
        if network_filesystem_of(self.settings_dict["NAME"]):
            return "sqlite_on_network_filesystem"
        return None
