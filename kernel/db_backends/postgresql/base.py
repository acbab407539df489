from django.db.backends.postgresql import base, schema

from kernel.db_backends import CascadingForeignKeysMixin
from kernel.db_backends.fence import FencedTransactionsMixin
from kernel.db_backends.postgresql.fence import PostgreSQLWriteFence
from kernel.db_backends.postgresql.liveness import quiet_and_idle

#: lock_not_available: a lock_timeout (or NOWAIT) ran out while another transaction held the lock.
LOCK_NOT_AVAILABLE = "55P03"

#: The server refusing or losing the session rather than a statement: too_many_connections,
#: configuration_limit_exceeded, admin_shutdown, crash_shutdown, cannot_connect_now, and a
#: standby's read_only_sql_transaction after a failover; plus the whole connection_exception class (08).
UNAVAILABLE_SQLSTATES = frozenset({"53300", "53400", "57P01", "57P02", "57P03", "25006"})


class DatabaseSchemaEditor(CascadingForeignKeysMixin, schema.DatabaseSchemaEditor):
    pass


class DatabaseWrapper(FencedTransactionsMixin, base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor
    write_fence_class = PostgreSQLWriteFence

    def is_lock_wait_timeout(self, error: Exception) -> bool:
        """Whether ``error`` means another transaction held a lock past the configured wait."""
        return getattr(error.__cause__, "sqlstate", None) == LOCK_NOT_AVAILABLE

    def is_unavailable(self, error: Exception) -> bool:
        """Whether ``error`` is the server refusing or losing the connection (its connection limit, a
        restart, a failover), not a statement's fault: worth a retry shortly. libpq's own failures
        (refused, reset, closed) carry no SQLSTATE. ``error`` is an OperationalError or an InterfaceError."""
        state = getattr(error.__cause__, "sqlstate", None)
        return state is None or state.startswith("08") or state in UNAVAILABLE_SQLSTATES

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
