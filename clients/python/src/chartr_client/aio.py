"""The asynchronous client: ``AsyncClient(base_url, token)``, the same calls as ``Client``, awaited;
``follow()`` is an async iterator."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from chartr_client import _calls as calls
from chartr_client._stream import FollowState, SseParser
from chartr_client.client import api_base, client_headers, reconnect_delay, reconnectable, stream_timeout
from chartr_client.errors import ApiError, ConnectionFailed, error_from_response
from chartr_client.models import (
    Agent,
    AppendResult,
    ArchiveResult,
    NewItem,
    Page,
    Project,
    StreamEvent,
    TimelinePage,
    TimelineRow,
    Workspace,
)
from chartr_client.retry import ReconnectPolicy, RetryPolicy

T = TypeVar("T")


class AsyncClient:
    """chartr's API over one ``httpx.AsyncClient``: registry, agents, timeline and the live stream.

    Every call raises a typed :class:`chartr_client.errors.ApiError` for an error answer, and retries
    as ``retry`` says (see chartr_client.retry); ``follow()`` reconnects as ``reconnect`` says.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        reconnect: ReconnectPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self.retry = retry or RetryPolicy()
        self.reconnect = reconnect or ReconnectPolicy()
        self._http = httpx.AsyncClient(
            base_url=api_base(base_url), headers=client_headers(token), timeout=timeout, transport=transport
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def send(self, call: calls.Call[T]) -> T:
        """Send ``call``, retrying as ``self.retry`` says; its parsed answer or a typed error."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.request(
                    call.method,
                    call.path,
                    params=call.params,
                    json=call.json,
                    content=call.content,
                    headers=call.headers,
                )
            except httpx.TransportError as exc:
                delay = self.retry.after_transport_error(exc, repeats_safely=call.repeats_safely, attempt=attempt)
                if delay is None:
                    raise ConnectionFailed(f"{call.method} {call.path}: {exc!r}") from exc
                await asyncio.sleep(delay)
                continue
            if response.is_success:
                return call.parse(response)
            error = error_from_response(response)
            delay = self.retry.after_error(error, attempt=attempt, repeats_safely=call.repeats_safely)
            if delay is None:
                raise error
            await asyncio.sleep(delay)

    # --- projects and workspaces -------------------------------------------------------

    async def list_projects(self, **params: Any) -> Page[Project]:
        """One page; ``params`` are the list's filters, ``limit`` and ``cursor``."""
        return await self.send(calls.list_records("projects", Project, params))

    def iter_projects(self, **filters: Any) -> AsyncIterator[Project]:
        return self._iterate(self.list_projects, filters)

    async def get_project(self, project_id: int) -> Project:
        return await self.send(calls.get_record("projects", project_id, Project))

    async def create_project(
        self,
        directory: str,
        kind: str,
        *,
        display_name: str | None = None,
        git_remote: str | None = None,
        idempotency_key: str | None = None,
    ) -> Project:
        values = {"directory": directory, "kind": kind, "display_name": display_name, "git_remote": git_remote}
        return await self.send(calls.create_record("projects", Project, values, idempotency_key))

    async def update_project(self, project_id: int, changes: Mapping[str, Any]) -> Project:
        return await self.send(calls.update_record("projects", project_id, Project, changes))

    async def archive_project(self, project_id: int) -> ArchiveResult[Project]:
        return await self.send(calls.archive_record("projects", project_id, Project, "project", "archive"))

    async def unarchive_project(self, project_id: int) -> ArchiveResult[Project]:
        return await self.send(calls.archive_record("projects", project_id, Project, "project", "unarchive"))

    async def list_workspaces(self, **params: Any) -> Page[Workspace]:
        return await self.send(calls.list_records("workspaces", Workspace, params))

    def iter_workspaces(self, **filters: Any) -> AsyncIterator[Workspace]:
        return self._iterate(self.list_workspaces, filters)

    async def get_workspace(self, workspace_id: int) -> Workspace:
        return await self.send(calls.get_record("workspaces", workspace_id, Workspace))

    async def create_workspace(
        self,
        project_id: int,
        directory: str,
        kind: str,
        *,
        display_name: str | None = None,
        branch: str | None = None,
        idempotency_key: str | None = None,
    ) -> Workspace:
        values = {
            "project_id": project_id,
            "directory": directory,
            "kind": kind,
            "display_name": display_name,
            "branch": branch,
        }
        return await self.send(calls.create_record("workspaces", Workspace, values, idempotency_key))

    async def update_workspace(self, workspace_id: int, changes: Mapping[str, Any]) -> Workspace:
        return await self.send(calls.update_record("workspaces", workspace_id, Workspace, changes))

    async def archive_workspace(self, workspace_id: int) -> ArchiveResult[Workspace]:
        return await self.send(calls.archive_record("workspaces", workspace_id, Workspace, "workspace", "archive"))

    async def unarchive_workspace(self, workspace_id: int) -> ArchiveResult[Workspace]:
        return await self.send(calls.archive_record("workspaces", workspace_id, Workspace, "workspace", "unarchive"))

    # --- agents ------------------------------------------------------------------------

    async def list_agents(self, **params: Any) -> Page[Agent]:
        return await self.send(calls.list_records("agents", Agent, params))

    def iter_agents(self, **filters: Any) -> AsyncIterator[Agent]:
        return self._iterate(self.list_agents, filters)

    async def get_agent(self, agent_id: str) -> Agent:
        return await self.send(calls.get_agent(agent_id))

    async def create_agent(
        self, workspace_id: int, provider: str, *, idempotency_key: str | None = None, **fields: Any
    ) -> Agent:
        """``fields``: ``agent_id``, ``cwd``, ``title``, ``labels``, ``lifecycle``, ``config``, ..."""
        values = {"workspace_id": workspace_id, "provider": provider, **fields}
        return await self.send(calls.create_record("agents", Agent, values, idempotency_key))

    async def update_agent(self, agent_id: str, changes: Mapping[str, Any], *, if_version: int | None = None) -> Agent:
        """PATCH; with ``if_version`` (an ``Agent.version``) a concurrent change raises ``VersionMismatch``."""
        return await self.send(calls.update_record("agents", agent_id, Agent, changes, if_version))

    async def heartbeat(self, agent_id: str) -> None:
        await self.send(calls.heartbeat(agent_id))

    async def archive_agent(self, agent_id: str) -> ArchiveResult[Agent]:
        return await self.send(calls.archive_record("agents", agent_id, Agent, "agent", "archive"))

    async def unarchive_agent(self, agent_id: str) -> ArchiveResult[Agent]:
        return await self.send(calls.archive_record("agents", agent_id, Agent, "agent", "unarchive"))

    # --- timeline ----------------------------------------------------------------------

    async def read_timeline(self, agent_id: str, **params: Any) -> TimelinePage:
        """``direction`` (tail, before, after), ``seq``, ``limit``, ``epoch``, ``projection``."""
        return await self.send(calls.read_timeline(agent_id, params))

    async def iter_timeline(
        self, agent_id: str, *, after_seq: int = 0, limit: int = 1000
    ) -> AsyncIterator[TimelineRow]:
        """Every committed row after ``after_seq``, in seq order, a page at a time."""
        while True:
            page = await self.read_timeline(agent_id, direction="after", seq=after_seq, limit=limit)
            for row in page.rows:
                assert isinstance(row, TimelineRow)
                after_seq = row.seq
                yield row
            if not page.has_newer or not page.rows:
                return

    async def append(
        self,
        agent_id: str,
        items: Sequence[NewItem | Mapping[str, Any]],
        *,
        expected_head_seq: int | None = None,
    ) -> AppendResult:
        """Commit ``items`` (``NewItem``s, or bare items that get an ``item_id`` here) atomically.
        Retried with the same ``item_id``s, so a retry never stores an item twice."""
        return await self.send(calls.append(agent_id, items, expected_head_seq))

    async def publish_provisional(self, agent_id: str, item: Mapping[str, Any], *, item_id: str | None = None) -> None:
        await self.send(calls.provisional(agent_id, item, item_id))

    def follow(
        self,
        agent_id: str,
        *,
        after_seq: int | None = None,
        epoch: str | None = None,
        read_timeout: float = 60.0,
    ) -> AsyncFollow:
        """The agent's live stream as typed events, reconnecting with ``Last-Event-ID`` (see ``Follow``)."""
        state = FollowState(agent_id, after_seq=after_seq, epoch=epoch)
        return AsyncFollow(self._http, state, self.reconnect, read_timeout)

    # -----------------------------------------------------------------------------------

    @staticmethod
    async def _iterate(list_page: Any, filters: dict[str, Any]) -> AsyncIterator[Any]:
        cursor = None
        while True:
            page = await list_page(**filters, cursor=cursor)
            for result in page.results:
                yield result
            cursor = page.next_cursor
            if cursor is None:
                return


class AsyncFollow(AsyncIterator[StreamEvent]):
    """Iterates ``Committed``, ``Provisional``, ``AgentEvent``, ``Reset`` (and ``UnknownEvent``) events.

    Each committed seq comes exactly once and in order, across reconnects: a broken or ended
    stream is opened again with ``Last-Event-ID`` and ``?epoch=``. An ``AgentEvent`` with
    reason ``snapshot`` opens every connection. After a ``Reset``, drop the rows you hold and
    re-read the tail; the iteration goes on with the new history. It ends after the agent's
    ``deleted`` event; ``aclose()`` ends it earlier.
    """

    def __init__(self, http: httpx.AsyncClient, state: FollowState, policy: ReconnectPolicy, read_timeout: float):
        self.state = state
        self._http = http
        self._policy = policy
        self._timeout = stream_timeout(read_timeout)
        self._closed = False
        self._response: httpx.Response | None = None
        self._events = self._run()

    @property
    def cursor(self) -> int | None:
        return self.state.cursor

    @property
    def epoch(self) -> str | None:
        return self.state.epoch

    async def __anext__(self) -> StreamEvent:
        return await anext(self._events)

    async def aclose(self) -> None:
        """End the iteration; from another task too (the open connection is closed under it)."""
        self._closed = True
        try:
            await self._events.aclose()
        except RuntimeError:  # another task is inside __anext__
            if self._response is not None:
                await self._response.aclose()

    async def __aenter__(self) -> AsyncFollow:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _run(self) -> AsyncGenerator[StreamEvent, None]:
        failures, failing_since = 0, None
        while not self.state.ended and not self._closed:
            error: ApiError | None = None
            cause: Exception | None = None
            try:
                async for event in self._connection():
                    failures, failing_since = 0, None
                    yield event
            except httpx.TransportError as exc:
                cause = exc
            except ApiError as exc:
                if not reconnectable(exc):
                    raise
                error, cause = exc, exc
            if self.state.ended or self._closed:
                return
            failures += 1
            now = time.monotonic()
            failing_since = failing_since if failing_since is not None else now
            if now - failing_since > self._policy.give_up_after:
                if error is not None:
                    raise error
                raise ConnectionFailed(f"no stream for {self.state.path}: {cause!r}") from cause
            await asyncio.sleep(reconnect_delay(self._policy, failures, error))

    async def _connection(self) -> AsyncGenerator[StreamEvent, None]:
        params, headers = self.state.request()
        self.state.connections += 1
        async with self._http.stream(
            "GET", self.state.path, params=params, headers=headers, timeout=self._timeout
        ) as response:
            self._response = response
            if response.status_code != 200:
                await response.aread()
                raise error_from_response(response)
            parser = SseParser()
            async for line in response.aiter_lines():
                raw = parser.feed(line)
                event = self.state.handle(raw) if raw is not None else None
                if event is not None:
                    yield event
                if self.state.ended:
                    return
