from django.db.backends.postgresql import base, schema

from chartr.db_backends import CascadingForeignKeysMixin
from chartr.db_backends.fence import FencedTransactionsMixin
from chartr.db_backends.postgresql.fence import PostgreSQLWriteFence
from chartr.db_backends.postgresql.liveness import quiet_and_idle

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

    def close_if_health_check_failed(self):
        # Django's check is a SELECT 1 per request; a quiet idle socket answers it without one.
        if (
            self.connection is not None
            and self.health_check_enabled
            and not self.health_check_done
            and quiet_and_idle(self.connection)
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()

    def set_autocommit(self, autocommit, force_begin_transaction_with_broken_autocommit=False):
        begin = super().set_autocommit
        if autocommit:
            begin(True, force_begin_transaction_with_broken_autocommit)
            return
        # Django begins every atomic block by turning autocommit off: the fence's
        # query is then the transaction's first statement.
        self.begin_fenced(
            begin=lambda: begin(False, force_begin_transaction_with_broken_autocommit),
            abandon=lambda: self.abandon_transaction(begin),
        )

    def abandon_transaction(self, set_autocommit) -> None:
        """Roll back the transaction the fence refused and turn autocommit back on."""
        self.rollback()
        set_autocommit(True)
