"""Each API call as data (method, path, query, body, headers, whether it repeats safely, how to read
its answer), built once: the sync and the async client send the same ``Call``. Item ids and
idempotency keys are chosen here, when the call is built, so every retry sends the same ones."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from chartr_client.models import (
    Agent,
    AppendResult,
    ArchiveResult,
    NewItem,
    Page,
    Project,
    TimelinePage,
    Workspace,
    decode,
    decode_append,
    decode_page,
)

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: dict[str, str] = field(default_factory=dict)
    json: Any = None
    #: A body already encoded (with its ``Content-Type`` in ``headers``), instead of ``json``.
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: Whether sending it again after a broken connection can do nothing twice (see retry.py).
    repeats_safely: bool = False


def new_key() -> str:
    return uuid.uuid4().hex


def query(values: Mapping[str, Any]) -> dict[str, str]:
    """Query parameters: None left out, booleans as ``true``/``false``."""
    out = {}
    for key, value in values.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def body(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def segment(value: str | int) -> str:
    return quote(str(value), safe="")


def _json(response: httpx.Response) -> Any:
    return response.json()


def record(cls: type[T]) -> Callable[[httpx.Response], T]:
    return lambda response: decode(cls, _json(response))


def page(cls: type[T]) -> Callable[[httpx.Response], Page[T]]:
    def parse(response: httpx.Response) -> Page[T]:
        data = _json(response)
        return Page([decode(cls, row) for row in data["results"]], data.get("next_cursor"))

    return parse


def archive_result(cls: type[T], key: str) -> Callable[[httpx.Response], ArchiveResult[T]]:
    def parse(response: httpx.Response) -> ArchiveResult[T]:
        data = _json(response)
        counts = next(value for name, value in data.items() if name != key)
        return ArchiveResult(decode(cls, data[key]), dict(counts))

    return parse


def nothing(response: httpx.Response) -> None:
    return None


# --- registry and agents ---------------------------------------------------------

KINDS: dict[str, tuple[str, type]] = {"project": ("projects", Project), "workspace": ("workspaces", Workspace)}


def list_records(collection: str, cls: type[T], params: Mapping[str, Any]) -> Call[Page[T]]:
    return Call("GET", f"/{collection}", page(cls), params=query(params), repeats_safely=True)


def get_record(collection: str, key: str | int, cls: type[T]) -> Call[T]:
    return Call("GET", f"/{collection}/{segment(key)}", record(cls), repeats_safely=True)


def create_record(collection: str, cls: type[T], values: Mapping[str, Any], idempotency_key: str | None) -> Call[T]:
    """A create with an ``Idempotency-Key`` (a new UUID unless given): its retries create nothing twice."""
    headers = {"Idempotency-Key": idempotency_key or new_key()}
    return Call("POST", f"/{collection}", record(cls), json=body(values), headers=headers, repeats_safely=True)


def update_record(
    collection: str, key: str | int, cls: type[T], changes: Mapping[str, Any], if_version: int | None = None
) -> Call[T]:
    headers = {"If-Match": f'"{if_version}"'} if if_version is not None else {}
    return Call("PATCH", f"/{collection}/{segment(key)}", record(cls), json=dict(changes), headers=headers)


def archive_record(collection: str, key: str | int, cls: type[T], name: str, action: str) -> Call[ArchiveResult[T]]:
    return Call("POST", f"/{collection}/{segment(key)}/{action}", archive_result(cls, name), repeats_safely=True)


def heartbeat(agent_id: str) -> Call[None]:
    return Call("POST", f"/agents/{segment(agent_id)}/heartbeat", nothing, repeats_safely=True)


def get_agent(agent_id: str) -> Call[Agent]:
    return get_record("agents", agent_id, Agent)


# --- timeline ----------------------------------------------------------------------


def timeline_path(agent_id: str) -> str:
    return f"/agents/{segment(agent_id)}/timeline"


def read_timeline(agent_id: str, params: Mapping[str, Any]) -> Call[TimelinePage]:
    return Call(
        "GET", timeline_path(agent_id), lambda r: decode_page(_json(r)), params=query(params), repeats_safely=True
    )


def new_items(items: Sequence[NewItem | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each item with its ``item_id``: the one given, or a new UUID (so the append repeats safely)."""
    out = []
    for entry in items:
        if isinstance(entry, NewItem):
            out.append({"item": entry.item, "item_id": entry.item_id or new_key()})
        else:
            out.append({"item": dict(entry), "item_id": new_key()})
    return out


def append(
    agent_id: str, items: Sequence[NewItem | Mapping[str, Any]], expected_head_seq: int | None
) -> Call[AppendResult]:
    payload = body({"items": new_items(items), "expected_head_seq": expected_head_seq})
    return Call(
        "POST",
        timeline_path(agent_id),
        lambda r: decode_append(_json(r), created=r.status_code == 201),
        json=payload,
        repeats_safely=True,
    )


def provisional(agent_id: str, item: Mapping[str, Any], item_id: str | None) -> Call[None]:
    return Call(
        "POST",
        f"{timeline_path(agent_id)}/provisional",
        nothing,
        json=body({"item": dict(item), "item_id": item_id}),
        repeats_safely=True,
    )
