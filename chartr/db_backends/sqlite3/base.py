from functools import cached_property

from django.db.backends.sqlite3 import base, schema

from chartr.db_backends import CascadingForeignKeysMixin
from chartr.db_backends.fence import FencedTransactionsMixin
from chartr.db_backends.sqlite3.fence import SQLiteWriteFence
from chartr.db_backends.sqlite3.filesystems import network_filesystem_of


class DatabaseSchemaEditor(CascadingForeignKeysMixin, schema.DatabaseSchemaEditor):
    pass


class DatabaseWrapper(FencedTransactionsMixin, base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor
    write_fence_class = SQLiteWriteFence

    def is_lock_wait_timeout(self, error: Exception) -> bool:
        """Whether ``error`` means another writer held the database past the busy timeout."""
        message = str(error)
        return "database is locked" in message or "database table is locked" in message

    def _start_transaction_under_autocommit(self):
        # Django begins every atomic block here on SQLite (BEGIN IMMEDIATE): the fence is asked under the write lock.
        self.begin_fenced(begin=self._begin, abandon=self._abandon_transaction)

    def _begin(self) -> None:
        """Django's ``BEGIN``, sent on the driver's connection unless queries are being
        recorded: its cursor wrapper cost as much CPU as the statement (every write pays it)."""
        if self.queries_logged or self.execute_wrappers:
            super()._start_transaction_under_autocommit()
            return
        with self.wrap_database_errors:
            self.connection.execute(self._begin_sql)

    @cached_property
    def _begin_sql(self) -> str:
        return "BEGIN" if self.transaction_mode is None else f"BEGIN {self.transaction_mode}"

    def _abandon_transaction(self) -> None:
        with self.wrap_database_errors:
            self.connection.execute("ROLLBACK")

    def storage_problem(self) -> str | None:
        """Why this database cannot be served safely, or None: SQLite's locks do not hold across machines."""
        if network_filesystem_of(self.settings_dict["NAME"]):
            return "sqlite_on_network_filesystem"
        return None
