"""The messages the live hub fans out, their wire form, and chunking for PostgreSQL ``NOTIFY``.

Every message on the wire carries the sending process's ``origin``, so a
process can ignore the echo of its own messages.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("chartr.live")

#: PostgreSQL refuses NOTIFY payloads of 8000 bytes or more.
PG_NOTIFY_LIMIT = 7999


@dataclass(frozen=True)
class Committed:
    """Rows up to ``head_seq`` are committed for ``agent_id`` in ``epoch``."""

    agent_id: str
    head_seq: int
    epoch: str = ""


@dataclass(frozen=True)
class Updated:
    """The agent's committed row ``seq`` was updated, taking update number ``update_seq``, in ``epoch``."""

    agent_id: str
    update_seq: int
    seq: int
    epoch: str = ""


@dataclass(frozen=True)
class AgentsChanged:
    """The agent snapshots of ``agent_ids`` changed (created, updated, archived, ...)."""

    agent_ids: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Provisional:
    agent_id: str
    item: dict
    item_id: str | None = None


@dataclass(frozen=True)
class Resync:
    """Not a transport message: tells one subscriber to re-read the database
    (its buffer overflowed, or the transport reconnected and may have missed news)."""

    agent_id: str = ""


@dataclass(frozen=True)
class Closing:
    """Not a transport message: this process is shutting down, the stream ends
    (its client reconnects, through the load balancer, to another instance)."""

    agent_id: str = ""


Message = Committed | AgentsChanged | Provisional | Updated


def encode_message(message: Message, origin: str) -> str:
    """A compact ASCII JSON form (ASCII so that byte and character lengths agree when chunking)."""
    if isinstance(message, Committed):
        return _encode_committed(message, origin)
    if isinstance(message, AgentsChanged):
        body: dict[str, Any] = {"k": "a", "a": list(message.agent_ids), "r": message.reason}
    elif isinstance(message, Provisional):
        body = {"k": "p", "a": message.agent_id, "i": message.item, "d": message.item_id}
    elif isinstance(message, Updated):
        body = {"k": "u", "a": message.agent_id, "u": message.update_seq, "s": message.seq, "e": message.epoch}
    else:  # pragma: no cover - programming error
        raise TypeError(f"Cannot send {message!r}")
    body["o"] = origin
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True)


def _encode_committed(message: Committed, origin: str) -> str:
    """``json.dumps`` of ``{"k": "c", "a": ..., "s": ..., "e": ..., "o": ...}`` as above, written
    directly: one goes with every append on PostgreSQL, and building and walking the dict cost
    more than the text."""
    return (
        f'{{"k":"c","a":{_ascii_string(message.agent_id)},"s":{int(message.head_seq)},'
        f'"e":{_ascii_string(message.epoch)},"o":{_ascii_string(origin)}}}'
    )


#: What ``json.dumps(..., ensure_ascii=True)`` writes a string as.
_ascii_string = json.encoder.encode_basestring_ascii


def decode_message(payload: str | bytes) -> tuple[str, Message]:
    """``(origin, message)``; raises ValueError on anything malformed."""
    try:
        body = json.loads(payload)
        kind, origin = body["k"], str(body["o"])
        if kind == "c":
            return origin, Committed(agent_id=str(body["a"]), head_seq=int(body["s"]), epoch=str(body["e"]))
        if kind == "a":
            return origin, AgentsChanged(agent_ids=tuple(str(a) for a in body["a"]), reason=str(body["r"]))
        if kind == "u":
            return origin, Updated(
                agent_id=str(body["a"]), update_seq=int(body["u"]), seq=int(body["s"]), epoch=str(body["e"])
            )
        if kind == "p":
            if not isinstance(body["i"], dict):
                raise ValueError("provisional item is not an object")
            return origin, Provisional(agent_id=str(body["a"]), item=body["i"], item_id=body["d"])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"malformed live message: {exc}") from exc
    raise ValueError(f"unknown live message kind {kind!r}")


def split_payload(payload: str, message_id: str, *, limit: int = PG_NOTIFY_LIMIT) -> list[str]:
    """``payload`` as one or more NOTIFY payloads of at most ``limit`` bytes.

    A whole message is sent as is (it starts with ``{``); chunks are
    ``#<message id>|<index>|<count>|<text>``.
    """
    if len(payload) <= limit:
        return [payload]
    header_room = len(f"#{message_id}|99999|99999|")
    step = limit - header_room
    parts = [payload[i : i + step] for i in range(0, len(payload), step)]
    return [f"#{message_id}|{index}|{len(parts)}|{part}" for index, part in enumerate(parts)]


class ChunkAssembler:
    """Puts chunked payloads back together; a partial message older than ``max_age`` is dropped."""

    def __init__(self, *, max_age: float = 30.0):
        self.max_age = max_age
        self._partial: dict[str, tuple[float, list[str | None]]] = {}

    def feed(self, payload: str) -> str | None:
        if not payload.startswith("#"):
            return payload
        try:
            message_id, index, count, text = payload[1:].split("|", 3)
            index, count = int(index), int(count)
        except ValueError:
            logger.warning("Dropping a malformed live chunk")
            return None
        now = time.monotonic()
        for stale in [k for k, (t, _) in self._partial.items() if now - t > self.max_age]:
            del self._partial[stale]
        started, parts = self._partial.setdefault(message_id, (now, [None] * count))
        if len(parts) != count or not 0 <= index < count:
            self._partial.pop(message_id, None)
            return None
        parts[index] = text
        if any(part is None for part in parts):
            return None
        del self._partial[message_id]
        return "".join(parts)  # type: ignore[arg-type]
