"""The raw baseline: the database work chartr's append service and read selector do, sent straight
through ``sqlite3`` or ``psycopg`` with no framework in between."""

from __future__ import annotations

import json
from collections.abc import Iterable

from bench.common import Environment, new_item

ROW_COLUMNS = "seq, committed_at, item_type, item, item_id"


class RawStore:
    """The same statements chartr's service and selector run, with no framework in between."""

    def __init__(self, environment: Environment):
        from django.db import connection

        self.backend = environment.backend
        # Django's own adapter gives the stored datetime form (text on
        # SQLite, timestamptz on PostgreSQL), so raw rows read back the same.
        self._adapt_datetime = connection.ops.adapt_datetimefield_value
        if self.backend == "sqlite":
            import sqlite3

            self.conn = sqlite3.connect(str(environment.sqlite_path), isolation_level=None, timeout=20)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self._lock_suffix = ""
            self._begin = "BEGIN IMMEDIATE"
        else:
            import psycopg

            from kernel.postgres import connection_keywords

            # libpq's keywords for Django's database: DATABASE_URL may carry psycopg's own
            # options (``prepare_threshold``), which libpq refuses in a conninfo.
            self.conn = psycopg.connect(**connection_keywords(connection.settings_dict), autocommit=True)
            self._lock_suffix = " FOR UPDATE"
            self._begin = "BEGIN"

    def _sql(self, sql: str) -> str:
        return sql.replace("%s", "?") if self.backend == "sqlite" else sql

    def execute(self, sql: str, params: tuple = ()):
        return self.conn.execute(self._sql(sql), params)

    def executemany(self, sql: str, rows: Iterable[tuple]) -> None:
        if self.backend == "sqlite":
            self.conn.executemany(self._sql(sql), rows)
        else:
            with self.conn.cursor() as cursor:
                cursor.executemany(sql, list(rows))

    def now(self):
        from django.utils import timezone

        return self._adapt_datetime(timezone.now())

    def encode_item(self, item: dict):
        if self.backend == "sqlite":
            return json.dumps(item)
        from psycopg.types.json import Jsonb

        return Jsonb(item)

    def decode_item(self, value):
        return json.loads(value) if isinstance(value, str) else value

    def append(self, agent_id: str, items: list[dict]) -> None:
        """BEGIN; lock + read head; insert head+1..; move head; COMMIT."""
        self.execute(self._begin)
        try:
            (head,) = self.execute(
                f"SELECT head_seq FROM timeline_head WHERE agent_id = %s{self._lock_suffix}", (agent_id,)
            ).fetchone()
            now = self.now()
            rows = [
                (agent_id, head + i + 1, now, item["type"], self.encode_item(item), None)
                for i, item in enumerate(items)
            ]
            sql = (
                "INSERT INTO timeline_timelinerow (agent_id, seq, committed_at, item_type, item, item_id) "
                "VALUES (%s, %s, %s, %s, %s, %s)"
            )
            if len(rows) == 1:
                self.execute(sql, rows[0])
            else:
                self.executemany(sql, rows)
            self.execute("UPDATE timeline_head SET head_seq = %s WHERE agent_id = %s", (head + len(items), agent_id))
            self.execute("COMMIT")
        except BaseException:
            self.execute("ROLLBACK")
            raise

    def read(self, agent_id: str, direction: str, seq: int | None, limit: int) -> list[tuple]:
        """The selector's two statements: the agent's head and epoch, then one index range."""
        self.execute(
            "SELECT a.agent_id, h.head_seq, h.epoch, a.archived_at FROM snapshots_agentsnapshot a "
            "JOIN timeline_head h ON h.agent_id = a.agent_id WHERE a.agent_id = %s",
            (agent_id,),
        ).fetchone()
        base = f"SELECT {ROW_COLUMNS} FROM timeline_timelinerow WHERE agent_id = %s"
        if direction == "tail":
            rows = self.execute(f"{base} ORDER BY seq DESC LIMIT %s", (agent_id, limit)).fetchall()[::-1]
        elif direction == "before":
            rows = self.execute(f"{base} AND seq < %s ORDER BY seq DESC LIMIT %s", (agent_id, seq, limit)).fetchall()[
                ::-1
            ]
        else:
            rows = self.execute(f"{base} AND seq > %s ORDER BY seq LIMIT %s", (agent_id, seq, limit)).fetchall()
        return [(s, at, t, self.decode_item(item), iid) for s, at, t, item, iid in rows]

    def seed(self, agent_id: str, count: int) -> None:
        """Fill an empty timeline with seqs 1..count and set head_seq to match, in one transaction."""
        now = self.now()
        self.execute(self._begin)
        if self.backend == "sqlite":
            self.executemany(
                "INSERT INTO timeline_timelinerow (agent_id, seq, committed_at, item_type, item, item_id) "
                "VALUES (%s, %s, %s, %s, %s, NULL)",
                ((agent_id, n, now, "assistant_message", json.dumps(new_item(n))) for n in range(1, count + 1)),
            )
        else:
            with (
                self.conn.cursor() as cursor,
                cursor.copy(
                    "COPY timeline_timelinerow (agent_id, seq, committed_at, item_type, item) FROM STDIN"
                ) as copy,
            ):
                for n in range(1, count + 1):
                    copy.write_row((agent_id, n, now, "assistant_message", json.dumps(new_item(n))))
        self.execute("UPDATE timeline_head SET head_seq = %s WHERE agent_id = %s", (count, agent_id))
        self.execute("COMMIT")
        if self.backend == "postgresql":
            self.execute("ANALYZE timeline_timelinerow")

    def head(self, agent_id: str) -> int:
        return self.execute("SELECT head_seq FROM timeline_head WHERE agent_id = %s", (agent_id,)).fetchone()[0]

    def close(self) -> None:
        self.conn.close()
