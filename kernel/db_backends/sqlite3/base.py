import sqlite3
from functools import cached_property

from django.db.backends.sqlite3 import base, schema

from kernel.db_backends import CascadingForeignKeysMixin
from kernel.db_backends.fence import FencedTransactionsMixin
from kernel.db_backends.sqlite3.fence import SQLiteWriteFence
from kernel.db_backends.sqlite3.filesystems import network_filesystem_of
from kernel.db_backends.sqlite3.writer_turns import WriterTurns, writer_turns_for

#: sqlite3's own default busy timeout, when OPTIONS name none.
DEFAULT_BUSY_TIMEOUT = 5.0


class DatabaseSchemaEditor(CascadingForeignKeysMixin, schema.DatabaseSchemaEditor):
    pass


class DatabaseWrapper(FencedTransactionsMixin, base.DatabaseWrapper):
    SchemaEditorClass = DatabaseSchemaEditor
    write_fence_class = SQLiteWriteFence
    #: The writer turns whose turn this connection holds (writer_turns.py), kept so the
    #: turn goes back where it came from even if the database's name changed meanwhile.
    held_writer_turn: WriterTurns | None = None

    def is_lock_wait_timeout(self, error: Exception) -> bool:
        """Whether ``error`` means another writer held the database past the busy timeout."""
        message = str(error)
        return "database is locked" in message or "database table is locked" in message

    def is_unavailable(self, error: Exception) -> bool:
        """Whether ``error`` is the database file refusing to open (its directory gone or not
        writable, say), not a statement's fault."""
        return "unable to open database file" in str(error)

    def _start_transaction_under_autocommit(self):
        # Django begins every atomic block here on SQLite (BEGIN IMMEDIATE): the fence is asked under the write lock.
        self.begin_fenced(begin=self._begin_in_turn, abandon=self._abandon_transaction)

    def _begin_in_turn(self) -> None:
        """BEGIN once the writers of this process ahead of this one are done (writer_turns.py)."""
        self._take_writer_turn()
        try:
            self._begin()
        finally:
            self._end_writer_turn_if_idle()

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
        try:
            with self.wrap_database_errors:
                self.connection.execute("ROLLBACK")
        finally:
            self._end_writer_turn_if_idle()

    # Every way a transaction ends passes through one of these three.
    def _commit(self):
        try:
            return super()._commit()
        finally:
            self._end_writer_turn_if_idle()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            self._end_writer_turn_if_idle()

    def _close(self):
        try:
            return super()._close()
        finally:
            self._end_writer_turn()

    @property
    def writer_turns(self) -> WriterTurns:
        return writer_turns_for(str(self.settings_dict["NAME"]))

    def _take_writer_turn(self) -> None:
        if self.held_writer_turn is not None:
            return
        turns = self.writer_turns
        timeout = self.settings_dict.get("OPTIONS", {}).get("timeout", DEFAULT_BUSY_TIMEOUT)
        if not turns.take(timeout=timeout):
            # What SQLite's busy handler says after the same wait.
            with self.wrap_database_errors:
                raise sqlite3.OperationalError("database is locked")
        self.held_writer_turn = turns

    def _end_writer_turn_if_idle(self) -> None:
        """Give the turn back unless the connection is still in a transaction."""
        if self.held_writer_turn is None:
            return
        try:
            in_transaction = self.connection is not None and self.connection.in_transaction
        except sqlite3.Error:  # closed: no transaction left
            in_transaction = False
        if not in_transaction:
            self._end_writer_turn()

    def _end_writer_turn(self) -> None:
        turns, self.held_writer_turn = self.held_writer_turn, None
        if turns is not None:
            turns.give_back()

    def storage_problem(self) -> str | None:
        """Why this database cannot be served safely, or None: SQLite's locks do not hold across machines."""
        if network_filesystem_of(self.settings_dict["NAME"]):
            return "sqlite_on_network_filesystem"
        return None
