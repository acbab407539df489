"""PostgreSQL ``LISTEN``/``NOTIFY``: the default on PostgreSQL without Redis.

``NOTIFY`` is sent on Django's own connection; each process keeps one
``LISTEN`` connection of its own. A payload is limited to 8000 bytes, so a larger message (a big
provisional item, an archive cascade over thousands of agents) is split into
chunks sent in one transaction; PostgreSQL delivers a transaction's
notifications together and in order, and the listener reassembles them.
Nothing is stored.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import psycopg
from django.conf import settings
from django.db import connections, transaction
from psycopg import sql

from kernel.postgres import connection_keywords
from kernel.write_fence import outside_write_fence
from timeline.live.messages import PG_NOTIFY_LIMIT, ChunkAssembler, Message, encode_message, split_payload
from timeline.live.transports.base import ListeningTransport, PayloadReceiver
from timeline.writes.append_sql import PostgreSQLStatement


def postgres_connect_kwargs() -> dict:
    """psycopg keyword arguments for a connection of our own to Django's default database."""
    return {"connect_timeout": 5, **connection_keywords(settings.DATABASES["default"])}


#: Sent with every append: built once, parameters bound on the server.
_NOTIFY = PostgreSQLStatement("SELECT pg_notify(%s, %s)")


class PostgresTransport(ListeningTransport):
    name = "postgres"
    lost_message = "Live LISTEN connection lost; reconnecting; streams fall back to the database poll meanwhile"
    unreachable_reason = "live_listen_unreachable"

    def __init__(self, *, channel_name: str, origin: str):
        super().__init__(channel_name=channel_name, origin=origin)
        self._message_ids = itertools.count(1)

    #: An append's NOTIFY goes with its own transaction: PostgreSQL delivers it at
    #: the commit (never after a rollback), which saves the three round trips of
    #: a transaction of its own after the commit.
    sends_with_transaction = True

    def publish(self, message: Message) -> None:
        # One transaction, so that PostgreSQL delivers all the chunks together. It
        # stores nothing, so a restore's write fence need not hold it back.
        with outside_write_fence(), transaction.atomic():
            self._notify(message)

    def publish_in_transaction(self, message: Message) -> None:
        self._notify(message)

    def notify_arguments(self, message: Message) -> tuple[str, str] | None:
        payload = encode_message(message, self.origin)
        return (self.channel_name, payload) if len(payload) <= PG_NOTIFY_LIMIT else None

    def _notify(self, message: Message) -> None:
        payload = encode_message(message, self.origin)
        chunks = split_payload(payload, f"{self.origin}.{next(self._message_ids)}")
        connection = connections["default"]
        for chunk in chunks:
            _NOTIFY.execute([self.channel_name, chunk], connection=connection)

    async def listen_once(self, receive: PayloadReceiver, subscribed: Callable[[], None]) -> None:
        assembler = ChunkAssembler()
        async with await psycopg.AsyncConnection.connect(**postgres_connect_kwargs(), autocommit=True) as conn:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel_name)))
            subscribed()
            async for notify in conn.notifies():
                payload = assembler.feed(notify.payload)
                if payload is not None:
                    receive(payload)
