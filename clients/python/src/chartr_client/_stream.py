"""The live stream's wire format and a follower's bookkeeping, shared by the sync and async ``follow()``.

``SseParser`` turns lines into events as the SSE specification says (``data:`` lines joined,
comments and ``retry:`` skipped). ``FollowState`` holds where the follower is: the last
``id:`` seen (sent back as ``Last-Event-ID`` on reconnect), the epoch (sent as ``?epoch=``, so a
history replaced while the follower was away comes back as ``reset``), and the last committed seq
handed out, so no row is ever handed out twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from chartr_client._calls import segment
from chartr_client.models import (
    AgentEvent,
    Committed,
    Provisional,
    Reset,
    StreamEvent,
    TimelineRow,
    UnknownEvent,
    decode,
)


@dataclass(frozen=True)
class RawEvent:
    event: str
    data: str
    id: str | None


class SseParser:
    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, line: str) -> RawEvent | None:
        """The event a blank line completes, else None."""
        if line == "":
            if not self._data and not self._event:
                self._id = None
                return None
            event = RawEvent(self._event or "message", "\n".join(self._data), self._id)
            self._event, self._data, self._id = "", [], None
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        return None


class FollowState:
    def __init__(self, agent_id: str, *, after_seq: int | None, epoch: str | None):
        self.path = f"/agents/{segment(agent_id)}/timeline/stream"
        self.after_seq = after_seq
        #: The last ``id:`` the stream sent (a seq): where a reconnect resumes.
        self.cursor: int | None = None
        self.epoch = epoch
        #: The last committed seq handed out; rows at or below it are not handed out again.
        self.last_seq: int | None = after_seq
        #: Connections opened so far (the first one included).
        self.connections = 0
        self.ended = False

    def request(self) -> tuple[dict[str, str], dict[str, str]]:
        """``(params, headers)`` of the next connection."""
        params: dict[str, str] = {}
        headers = {"Accept": "text/event-stream"}
        if self.cursor is not None:
            headers["Last-Event-ID"] = str(self.cursor)
        elif self.after_seq is not None:
            params["after_seq"] = str(self.after_seq)
        if self.epoch is not None:
            params["epoch"] = self.epoch
        return params, headers

    def handle(self, raw: RawEvent) -> StreamEvent | None:
        """The typed event, or None for a row already handed out."""
        if raw.id is not None and raw.id.isdigit():
            self.cursor = int(raw.id)
        data = json.loads(raw.data) if raw.data else None
        if raw.event == "committed" and isinstance(data, dict):
            row = decode(TimelineRow, data)
            if self.last_seq is not None and row.seq <= self.last_seq:
                return None
            self.last_seq = row.seq
            return Committed(row)
        if raw.event == "provisional" and isinstance(data, dict):
            return Provisional(item=data.get("item") or {}, item_id=data.get("item_id"))
        if raw.event == "agent" and isinstance(data, dict):
            return self._agent(decode(AgentEvent, data))
        if raw.event == "reset" and isinstance(data, dict):
            reset = decode(Reset, data)
            self.epoch = reset.epoch
            # The stream goes on from its id: the new head, or min_seq - 1 after a gap.
            self.last_seq = self.cursor if raw.id is not None else reset.head_seq
            return reset
        return UnknownEvent(raw.event, data, raw.id)

    def _agent(self, event: AgentEvent) -> AgentEvent:
        if event.deleted or event.reason == "deleted":
            self.ended = True
        elif event.reason == "snapshot":
            if event.epoch is not None:
                self.epoch = event.epoch
            if self.last_seq is None:
                self.last_seq = self.cursor
        return event
