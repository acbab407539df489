from django.db.backends.postgresql import base, schema

from chartr.db_backends import CascadingForeignKeysMixin
from chartr.db_backends.fence import FencedTransactionsMixin
from chartr.db_backends.postgresql.fence import PostgreSQLWriteFence

#: lock_not_available: a lock_timeout (or NOWAIT) ran out while another transaction held the lock.
LOCK_NOT_AVAILABLE = "55P03"


class DatabaseSchemaEditor(CascadingForeignKeysMixin, schema.DatabaseSchemaEditor):
    pass


class DatabaseWrapper(FencedTransactionsMixin, base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor
    write_fence_class = PostgreSQLWriteFence

    def is_lock_wait_timeout(self, error: Exception) -> bool:
        """Whether ``error`` means another transaction held a lock past the configured wait."""
        return getattr(error.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE

    def _set_autocommit(self, autocommit):
        if autocommit:
            super()._set_autocommit(autocommit)
            return
        # Django begins every atomic block by turning autocommit off: the fence's
        # query is then the transaction's first statement.
        self.begin_fenced(begin=lambda: super(DatabaseWrapper, self)._set_autocommit(False), abandon=self._abandon)

    def _abandon(self) -> None:
        with self.wrap_database_errors:
            self.connection.rollback()
            self.connection.autocommit = True
