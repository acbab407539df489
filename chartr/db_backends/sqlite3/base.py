from django.db.backends.sqlite3 import base, schema

from chartr.db_backends import CascadingForeignKeysMixin


class DatabaseSchemaEditor(CascadingForeignKeysMixin, schema.DatabaseSchemaEditor):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor

    def is_lock_wait_timeout(self, error: Exception) -> bool:
        """Whether ``error`` means another writer held the database past the busy timeout."""
        message = str(error)
        return "database is locked" in message or "database table is locked" in message
