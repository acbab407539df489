from django.db.backends.postgresql import base, schema

from chartr.db_backends import CascadingForeignKeysMixin

#: lock_not_available: a lock_timeout (or NOWAIT) ran out while another transaction held the lock.
LOCK_NOT_AVAILABLE = "55P03"


class DatabaseSchemaEditor(CascadingForeignKeysMixin, schema.DatabaseSchemaEditor):
    pass


class DatabaseWrapper(base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor

    def is_lock_wait_timeout(self, error: Exception) -> bool:
        """Whether ``error`` means another transaction held a lock past the configured wait."""
        return getattr(error.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE
