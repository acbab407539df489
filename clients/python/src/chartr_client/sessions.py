"""The session-store seam: the embedder chooses where an agent loop's session lives.

A loop calls ``append_entry`` as things happen, ``load_entries`` to resume a session, and
``latest_session`` for ``--resume`` without an id. ``NoopSessionStore`` keeps nothing;
``ChartrSessionStore`` keeps sessions in chartr:

- **a session is an agent** in the store's workspace, whose ``agent_id`` is the session id and
  whose ``provider`` is the store's (so embedders sharing a workspace do not resume each other's
  sessions). The first ``append_entry`` of a new id creates the agent; an id that is an agent of
  another workspace or provider is refused (``SessionNotOwned``), checked once per id and store;
- **an entry is one timeline row**: its item is the entry (a JSON object with a string ``type``,
  the timeline's rule, e.g. ``{"type": "user_message", "text": "hi"}``), and ``entry_id`` is the
  row's ``item_id`` (a new UUID unless given: pass a stable one and a repeated ``append_entry``,
  even from another process, stores nothing twice). ``load_entries`` returns the items in seq order;
- **the latest session** is the store's agent with the newest timeline activity (the agent list's
  ``ordering=-last_activity_at``), archived ones left out.

Each store has a sync and an async form (``AsyncSessionStore``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from chartr_client.aio import AsyncClient
from chartr_client.client import Client
from chartr_client.errors import ChartrError, ConflictError, NotFound
from chartr_client.models import Agent, NewItem

Entry = dict[str, Any]

__all__ = [
    "AsyncChartrSessionStore",
    "AsyncNoopSessionStore",
    "AsyncSessionStore",
    "ChartrSessionStore",
    "NoopSessionStore",
    "SessionNotOwned",
    "SessionStore",
]


@runtime_checkable
class SessionStore(Protocol):
    def append_entry(self, session_id: str, entry: Mapping[str, Any], *, entry_id: str | None = None) -> None: ...

    def load_entries(self, session_id: str) -> list[Entry]: ...

    def latest_session(self) -> str | None: ...


@runtime_checkable
class AsyncSessionStore(Protocol):
    async def append_entry(self, session_id: str, entry: Mapping[str, Any], *, entry_id: str | None = None) -> None: ...

    async def load_entries(self, session_id: str) -> list[Entry]: ...

    async def latest_session(self) -> str | None: ...


class SessionNotOwned(ChartrError):
    """The session id is an agent of another workspace or provider: this store will not write to it."""


class NoopSessionStore:
    """Keeps nothing: every session starts empty and there is never one to resume."""

    def append_entry(self, session_id: str, entry: Mapping[str, Any], *, entry_id: str | None = None) -> None:
        return None

    def load_entries(self, session_id: str) -> list[Entry]:
        return []

    def latest_session(self) -> str | None:
        return None


class AsyncNoopSessionStore:
    async def append_entry(self, session_id: str, entry: Mapping[str, Any], *, entry_id: str | None = None) -> None:
        return None

    async def load_entries(self, session_id: str) -> list[Entry]:
        return []

    async def latest_session(self) -> str | None:
        return None


class _Owner:
    def __init__(self, workspace_id: int, provider: str, cwd: str | None):
        self.workspace_id = workspace_id
        self.provider = provider
        self.cwd = cwd
        #: Session ids checked to be this store's agents.
        self.owned: set[str] = set()

    def check(self, agent: Agent) -> None:
        if agent.workspace_id != self.workspace_id or agent.provider != self.provider:
            raise SessionNotOwned(
                f"session {agent.agent_id!r} is an agent of workspace {agent.workspace_id} "
                f"({agent.provider}), not of this store's workspace {self.workspace_id} ({self.provider})"
            )
        self.owned.add(agent.agent_id)

    def create_fields(self, session_id: str) -> dict[str, Any]:
        fields: dict[str, Any] = {"agent_id": session_id}
        if self.cwd is not None:
            fields["cwd"] = self.cwd
        return fields

    def latest_query(self) -> dict[str, Any]:
        return {
            "workspace_id": self.workspace_id,
            "provider": self.provider,
            "archived": False,
            "ordering": "-last_activity_at",
            "limit": 1,
        }


class ChartrSessionStore:
    """Sessions as chartr agents of ``workspace_id`` with ``provider``; entries as their timeline rows."""

    def __init__(self, client: Client, *, workspace_id: int, provider: str = "chartr-client", cwd: str | None = None):
        self.client = client
        self._owner = _Owner(workspace_id, provider, cwd)

    def append_entry(self, session_id: str, entry: Mapping[str, Any], *, entry_id: str | None = None) -> None:
        self._own(session_id, create=True)
        self.client.append(session_id, [NewItem(dict(entry), entry_id)])

    def _own(self, session_id: str, *, create: bool) -> bool:
        """Whether the session exists and is this store's (created when ``create``); checked once per id."""
        owner = self._owner
        if session_id in owner.owned:
            return True
        try:
            agent = self.client.get_agent(session_id)
        except NotFound:
            if not create:
                return False
            try:
                agent = self.client.create_agent(owner.workspace_id, owner.provider, **owner.create_fields(session_id))
            except ConflictError as exc:
                if exc.code != "conflict":
                    raise
                agent = self.client.get_agent(session_id)  # created meanwhile, by another writer
        owner.check(agent)
        return True

    def load_entries(self, session_id: str) -> list[Entry]:
        if not self._own(session_id, create=False):
            return []
        return [row.item for row in self.client.iter_timeline(session_id)]

    def latest_session(self) -> str | None:
        page = self.client.list_agents(**self._owner.latest_query())
        return page.results[0].agent_id if page.results else None


class AsyncChartrSessionStore:
    """``ChartrSessionStore`` over an ``AsyncClient``."""

    def __init__(
        self, client: AsyncClient, *, workspace_id: int, provider: str = "chartr-client", cwd: str | None = None
    ):
        self.client = client
        self._owner = _Owner(workspace_id, provider, cwd)

    async def append_entry(self, session_id: str, entry: Mapping[str, Any], *, entry_id: str | None = None) -> None:
        await self._own(session_id, create=True)
        await self.client.append(session_id, [NewItem(dict(entry), entry_id)])

    async def _own(self, session_id: str, *, create: bool) -> bool:
        owner = self._owner
        if session_id in owner.owned:
            return True
        try:
            agent = await self.client.get_agent(session_id)
        except NotFound:
            if not create:
                return False
            try:
                agent = await self.client.create_agent(
                    owner.workspace_id, owner.provider, **owner.create_fields(session_id)
                )
            except ConflictError as exc:
                if exc.code != "conflict":
                    raise
                agent = await self.client.get_agent(session_id)
        owner.check(agent)
        return True

    async def load_entries(self, session_id: str) -> list[Entry]:
        if not await self._own(session_id, create=False):
            return []
        return [row.item async for row in self.client.iter_timeline(session_id)]

    async def latest_session(self) -> str | None:
        page = await self.client.list_agents(**self._owner.latest_query())
        return page.results[0].agent_id if page.results else None
