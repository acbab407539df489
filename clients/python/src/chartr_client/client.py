"""The synchronous client: ``Client(base_url, token)``. ``AsyncClient`` (chartr_client.aio) has the same methods."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from chartr_client import _calls as calls
from chartr_client._stream import FollowState, SseParser
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

__version__ = "0.1.0"
#: Statuses after which follow() reconnects (a 503 from chartr, a 502/504 from a proxy in front of it).
RECONNECT_STATUSES = frozenset({502, 503, 504})


def client_headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "User-Agent": f"chartr-client/{__version__}",
    }


def api_base(base_url: str) -> str:
    return base_url.rstrip("/") + "/api/v1"


def stream_timeout(read_timeout: float) -> httpx.Timeout:
    """A stream sends a keep-alive every 15 s by default: silence longer than ``read_timeout``
    means the connection is dead, and follow() reconnects."""
    return httpx.Timeout(10.0, read=read_timeout)


def reconnectable(error: ApiError) -> bool:
    """Whether a stream refused with ``error`` may come back (a draining or busy server, a proxy's 502/504)."""
    return error.status_code in RECONNECT_STATUSES and error.code != "asgi_required"


def reconnect_delay(policy: ReconnectPolicy, failures: int, error: ApiError | None) -> float:
    return policy.delay(failures, error.retry_after if error is not None else None)


class Client:
    """chartr's API over one ``httpx.Client``: registry, agents, timeline and the live stream.

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
        transport: httpx.BaseTransport | None = None,
    ):
        self.retry = retry or RetryPolicy()
        self.reconnect = reconnect or ReconnectPolicy()
        self._http = httpx.Client(
            base_url=api_base(base_url), headers=client_headers(token), timeout=timeout, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, call: calls.Call[T]) -> T:
        """Send ``call``, retrying as ``self.retry`` says; its parsed answer or a typed error."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(
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
                time.sleep(delay)
                continue
            if response.is_success:
                return call.parse(response)
            error = error_from_response(response)
            delay = self.retry.after_error(error, attempt=attempt, repeats_safely=call.repeats_safely)
            if delay is None:
                raise error
            time.sleep(delay)

    # --- projects and workspaces -------------------------------------------------------

    def list_projects(self, **params: Any) -> Page[Project]:
        """One page; ``params`` are the list's filters, ``limit`` and ``cursor``."""
        return self.send(calls.list_records("projects", Project, params))

    def iter_projects(self, **filters: Any) -> Iterator[Project]:
        return self._iterate(self.list_projects, filters)

    def get_project(self, project_id: int) -> Project:
        return self.send(calls.get_record("projects", project_id, Project))

    def create_project(
        self,
        directory: str,
        kind: str,
        *,
        display_name: str | None = None,
        git_remote: str | None = None,
        idempotency_key: str | None = None,
    ) -> Project:
        values = {"directory": directory, "kind": kind, "display_name": display_name, "git_remote": git_remote}
        return self.send(calls.create_record("projects", Project, values, idempotency_key))

    def update_project(self, project_id: int, changes: Mapping[str, Any]) -> Project:
        return self.send(calls.update_record("projects", project_id, Project, changes))

    def archive_project(self, project_id: int) -> ArchiveResult[Project]:
        return self.send(calls.archive_record("projects", project_id, Project, "project", "archive"))

    def unarchive_project(self, project_id: int) -> ArchiveResult[Project]:
        return self.send(calls.archive_record("projects", project_id, Project, "project", "unarchive"))

    def list_workspaces(self, **params: Any) -> Page[Workspace]:
        return self.send(calls.list_records("workspaces", Workspace, params))

    def iter_workspaces(self, **filters: Any) -> Iterator[Workspace]:
        return self._iterate(self.list_workspaces, filters)

    def get_workspace(self, workspace_id: int) -> Workspace:
        return self.send(calls.get_record("workspaces", workspace_id, Workspace))

    def create_workspace(
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
        return self.send(calls.create_record("workspaces", Workspace, values, idempotency_key))

    def update_workspace(self, workspace_id: int, changes: Mapping[str, Any]) -> Workspace:
        return self.send(calls.update_record("workspaces", workspace_id, Workspace, changes))

    def archive_workspace(self, workspace_id: int) -> ArchiveResult[Workspace]:
        return self.send(calls.archive_record("workspaces", workspace_id, Workspace, "workspace", "archive"))

    def unarchive_workspace(self, workspace_id: int) -> ArchiveResult[Workspace]:
        return self.send(calls.archive_record("workspaces", workspace_id, Workspace, "workspace", "unarchive"))

    # --- agents ------------------------------------------------------------------------

    def list_agents(self, **params: Any) -> Page[Agent]:
        return self.send(calls.list_records("agents", Agent, params))

    def iter_agents(self, **filters: Any) -> Iterator[Agent]:
        return self._iterate(self.list_agents, filters)

    def get_agent(self, agent_id: str) -> Agent:
        return self.send(calls.get_agent(agent_id))

    def create_agent(
        self, workspace_id: int, provider: str, *, idempotency_key: str | None = None, **fields: Any
    ) -> Agent:
        """``fields``: ``agent_id``, ``cwd``, ``title``, ``labels``, ``lifecycle``, ``config``, ..."""
        values = {"workspace_id": workspace_id, "provider": provider, **fields}
        return self.send(calls.create_record("agents", Agent, values, idempotency_key))

    def update_agent(self, agent_id: str, changes: Mapping[str, Any], *, if_version: int | None = None) -> Agent:
        """PATCH; with ``if_version`` (an ``Agent.version``) a concurrent change raises ``VersionMismatch``."""
        return self.send(calls.update_record("agents", agent_id, Agent, changes, if_version))

    def heartbeat(self, agent_id: str) -> None:
        self.send(calls.heartbeat(agent_id))

    def archive_agent(self, agent_id: str) -> ArchiveResult[Agent]:
        return self.send(calls.archive_record("agents", agent_id, Agent, "agent", "archive"))

    def unarchive_agent(self, agent_id: str) -> ArchiveResult[Agent]:
        return self.send(calls.archive_record("agents", agent_id, Agent, "agent", "unarchive"))

    # --- timeline ----------------------------------------------------------------------

    def read_timeline(self, agent_id: str, **params: Any) -> TimelinePage:
        """``direction`` (tail, before, after), ``seq``, ``limit``, ``epoch``, ``projection``."""
        return self.send(calls.read_timeline(agent_id, params))

    def iter_timeline(self, agent_id: str, *, after_seq: int = 0, limit: int = 1000) -> Iterator[TimelineRow]:
        """Every committed row after ``after_seq``, in seq order, a page at a time."""
        while True:
            page = self.read_timeline(agent_id, direction="after", seq=after_seq, limit=limit)
            for row in page.rows:
                assert isinstance(row, TimelineRow)
                after_seq = row.seq
                yield row
            if not page.has_newer or not page.rows:
                return

    def append(
        self,
        agent_id: str,
        items: Sequence[NewItem | Mapping[str, Any]],
        *,
        expected_head_seq: int | None = None,
    ) -> AppendResult:
        """Commit ``items`` (``NewItem``s, or bare items that get an ``item_id`` here) atomically.
        Retried with the same ``item_id``s, so a retry never stores an item twice."""
        return self.send(calls.append(agent_id, items, expected_head_seq))

    def publish_provisional(self, agent_id: str, item: Mapping[str, Any], *, item_id: str | None = None) -> None:
        self.send(calls.provisional(agent_id, item, item_id))

    def follow(
        self,
        agent_id: str,
        *,
        after_seq: int | None = None,
        epoch: str | None = None,
        read_timeout: float = 60.0,
    ) -> Follow:
        """The agent's live stream as typed events, reconnecting with ``Last-Event-ID`` (see ``Follow``)."""
        state = FollowState(agent_id, after_seq=after_seq, epoch=epoch)
        return Follow(self._http, state, self.reconnect, read_timeout)

    # -----------------------------------------------------------------------------------

    @staticmethod
    def _iterate(list_page: Any, filters: dict[str, Any]) -> Iterator[Any]:
        cursor = None
        while True:
            page = list_page(**filters, cursor=cursor)
            yield from page.results
            cursor = page.next_cursor
            if cursor is None:
                return


class Follow(Iterator[StreamEvent]):
    """Iterates ``Committed``, ``Provisional``, ``AgentEvent``, ``Reset`` (and ``UnknownEvent``) events.

    Each committed seq comes exactly once and in order, across reconnects: a broken or ended
    stream is opened again with ``Last-Event-ID`` and ``?epoch=``. An ``AgentEvent`` with
    reason ``snapshot`` opens every connection. After a ``Reset``, drop the rows you hold and
    re-read the tail; the iteration goes on with the new history. It ends after the agent's
    ``deleted`` event; ``close()`` ends it earlier.
    """

    def __init__(self, http: httpx.Client, state: FollowState, policy: ReconnectPolicy, read_timeout: float):
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

    def __next__(self) -> StreamEvent:
        return next(self._events)

    def close(self) -> None:
        """End the iteration; from another thread too (the open connection is closed under it)."""
        self._closed = True
        try:
            self._events.close()
        except ValueError:  # another thread is inside __next__
            if self._response is not None:
                self._response.close()

    def __enter__(self) -> Follow:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _run(self) -> Generator[StreamEvent, None, None]:
        failures, failing_since = 0, None
        while not self.state.ended and not self._closed:
            error: ApiError | None = None
            cause: Exception | None = None
            try:
                for event in self._connection():
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
            time.sleep(reconnect_delay(self._policy, failures, error))

    def _connection(self) -> Generator[StreamEvent, None, None]:
        params, headers = self.state.request()
        self.state.connections += 1
        with self._http.stream(
            "GET", self.state.path, params=params, headers=headers, timeout=self._timeout
        ) as response:
            self._response = response
            if response.status_code != 200:
                response.read()
                raise error_from_response(response)
            parser = SseParser()
            for line in response.iter_lines():
                raw = parser.feed(line)
                event = self.state.handle(raw) if raw is not None else None
                if event is not None:
                    yield event
                if self.state.ended:
                    return
