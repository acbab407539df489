"""The Claude Agent SDK's ``SessionStore`` over chartr: Claude Code transcripts mirrored into agents' timelines.

``ChartrSessionStore(base_url=..., token=..., namespace=None)`` implements every method of the
SDK's protocol (``claude_agent_sdk.types.SessionStore``): ``append``, ``load``,
``list_sessions``, ``list_session_summaries``, ``delete`` and ``list_subkeys``; pass it as
``ClaudeAgentOptions(session_store=...)``, or to ``import_session_to_store``. Needs the
``claude`` extra (``pip install 'chartr-client[claude]'``) for the SDK's ``fold_session_summary``.

- ``namespace`` scopes everything the store sees (a tenant); None is the server's ``default``, the
  one ``manage.py import_claude_code`` writes to.
- Entries come back deep-equal, in append order; a repeated ``uuid`` under the same key is ignored
  by the server; entries without one are appended as they come.
- ``append`` sends batches under ``max_body_bytes`` (the server's ``CHARTR_MAX_BODY_BYTES``); a
  single line larger than the server's ``CHARTR_MAX_ITEM_BYTES`` is refused (413).
- For a main transcript, ``append`` folds the entries the server stored into the session's summary
  sidecar (the SDK's ``fold_session_summary``) and writes it back with compare-and-swap: a writer
  that lost the race reads the winner's summary, folds again and retries. Once the store has
  written a session's summary it sends the next fold along with the entries, and the server
  writes both in one transaction when that version still holds: one request per append.
- ``list_sessions``, ``list_subkeys``, ``list_session_summaries`` and ``delete`` are one request
  each; ``load`` reads the entries a page (5,000) at a time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from claude_agent_sdk import fold_session_summary

from chartr_client import _calls as calls
from chartr_client.aio import AsyncClient
from chartr_client.errors import NotFound, VersionMismatch

__all__ = ["ChartrSessionStore"]

BASE = "claude-code"
#: The server's default ``CHARTR_MAX_BODY_BYTES`` (1 MiB) less room for the envelope.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024 - 1024
#: Entries per request (the server takes at most 1,000).
MAX_ENTRIES_PER_REQUEST = 1000
#: Compare-and-swap attempts of a summary write before giving up.
SUMMARY_ATTEMPTS = 8
JSON_HEADERS = {"Content-Type": "application/json"}


def _json(response: httpx.Response) -> Any:
    return response.json()


def _encode(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class ChartrSessionStore:
    """The SDK's ``SessionStore`` on a chartr server (see the module's docstring)."""

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        namespace: str | None = None,
        *,
        client: AsyncClient | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ):
        if client is None:
            if base_url is None or token is None:
                raise TypeError("ChartrSessionStore needs base_url and token, or client.")
            client = AsyncClient(base_url, token)
            self._owns_client = True
        else:
            self._owns_client = False
        self.client = client
        self.namespace = namespace
        self.max_body_bytes = max_body_bytes
        #: (project_key, session_id) -> the summary this store last wrote (SDK shape plus version).
        self._summaries: dict[tuple[str, str], dict[str, Any]] = {}

    async def aclose(self) -> None:
        if self._owns_client:
            await self.client.aclose()

    async def __aenter__(self) -> ChartrSessionStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- the protocol ------------------------------------------------------------------

    async def append(self, key: Mapping[str, Any], entries: list[dict[str, Any]]) -> None:
        if not entries:
            return
        params = self._key(key)
        main = not key.get("subpath")
        batches = list(self._batches(entries))
        stored: list[dict[str, Any]] = []
        answer: dict[str, Any] = {}
        for batch, body in batches:
            if main and len(batches) == 1:
                body = self._with_summary(key, batch, body)
            answer = await self.client.send(
                calls.Call(
                    "POST",
                    f"{BASE}/session/entries",
                    _json,
                    params=params,
                    content=body,
                    headers=JSON_HEADERS,
                    # Only a batch whose every entry has a uuid stores nothing twice when sent again.
                    repeats_safely=all("uuid" in entry for entry in batch),
                )
            )
            ignored = set(answer["ignored"])
            stored.extend(entry for index, entry in enumerate(batch) if index not in ignored)
        if not (main and stored):
            return
        if answer.get("summary_written"):
            self._remember(key, answer["summary"])
        else:
            await self._fold_summary(key, params, stored, answer)

    def _with_summary(self, key: Mapping[str, Any], batch: list[dict[str, Any]], body: bytes) -> bytes:
        """``body`` with the fold of ``batch`` into the summary this store wrote last for the key, so
        the server writes both in one transaction (it does only when the version still holds and no
        entry is ignored); ``body`` itself when there is none or the summary would not fit."""
        known = self._summaries.get((key["project_key"], key["session_id"]))
        if known is None:
            return body
        folded = fold_session_summary(known, _sdk_key(key), batch)
        tail = b',"summary":' + _encode(folded["data"]) + b',"summary_version":' + str(known["version"]).encode()
        if len(body) + len(tail) > self.max_body_bytes:
            return body
        return body[:-1] + tail + b"}"

    def _remember(self, key: Mapping[str, Any], summary: Mapping[str, Any] | None) -> None:
        if summary is not None:
            self._summaries[(key["project_key"], key["session_id"])] = {
                **_summary_entry(summary),
                "version": summary["version"],
            }

    async def load(self, key: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        params = self._key(key)
        entries: list[dict[str, Any]] = []
        after = 0
        while True:
            try:
                page = await self.client.send(
                    calls.Call(
                        "GET",
                        f"{BASE}/session/entries",
                        _json,
                        params={**params, "after": str(after)},
                        repeats_safely=True,
                    )
                )
            except NotFound:
                return None
            entries.extend(page["entries"])
            if not page["more"]:
                return entries
            after = page["after"]

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        answer = await self._get("sessions", {"project_key": project_key})
        return [{"session_id": s["session_id"], "mtime": s["mtime"]} for s in answer["sessions"]]

    async def list_session_summaries(self, project_key: str) -> list[dict[str, Any]]:
        answer = await self._get("summaries", {"project_key": project_key})
        return [_summary_entry(summary) for summary in answer["summaries"]]

    async def delete(self, key: Mapping[str, Any]) -> None:
        await self.client.send(
            calls.Call("DELETE", f"{BASE}/session", _json, params=self._key(key), repeats_safely=True)
        )

    async def list_subkeys(self, key: Mapping[str, Any]) -> list[str]:
        answer = await self._get(
            "session/subkeys", {"project_key": key["project_key"], "session_id": key["session_id"]}
        )
        return list(answer["subkeys"])

    # --- helpers -----------------------------------------------------------------------

    def _scope(self, params: dict[str, str]) -> dict[str, str]:
        if self.namespace is not None:
            params["namespace"] = self.namespace
        return params

    def _key(self, key: Mapping[str, Any]) -> dict[str, str]:
        params = {"project_key": key["project_key"], "session_id": key["session_id"]}
        if key.get("subpath"):
            params["subpath"] = key["subpath"]
        return self._scope(params)

    async def _get(self, path: str, params: dict[str, str]) -> Any:
        return await self.client.send(
            calls.Call("GET", f"{BASE}/{path}", _json, params=self._scope(params), repeats_safely=True)
        )

    def _batches(self, entries: Sequence[dict[str, Any]]):
        """``(entries, body)`` pairs, each body ``{"entries": [...]}`` under ``max_body_bytes``."""
        head, tail = b'{"entries":[', b"]}"
        batch: list[dict[str, Any]] = []
        encoded: list[bytes] = []
        size = len(head) + len(tail)
        for entry in entries:
            text = _encode(entry)
            grows = len(text) + (1 if encoded else 0)
            if encoded and (size + grows > self.max_body_bytes or len(batch) == MAX_ENTRIES_PER_REQUEST):
                yield batch, head + b",".join(encoded) + tail
                batch, encoded, size = [], [], len(head) + len(tail)
                grows = len(text)
            batch.append(entry)
            encoded.append(text)
            size += grows
        yield batch, head + b",".join(encoded) + tail

    async def _fold_summary(
        self, key: Mapping[str, Any], params: dict[str, str], stored: list[dict[str, Any]], answer: dict[str, Any]
    ) -> None:
        """Fold ``stored`` into the summary the append answered with; on a lost race, into the winner's."""
        current = answer.get("summary")
        version = answer.get("summary_version", 0)
        for _attempt in range(SUMMARY_ATTEMPTS):
            folded = fold_session_summary(None if current is None else _summary_entry(current), _sdk_key(key), stored)
            try:
                written = await self.client.send(
                    calls.Call(
                        "PUT",
                        f"{BASE}/session/summary",
                        _json,
                        params={k: v for k, v in params.items() if k != "subpath"},
                        content=_encode({"data": folded["data"], "expected_version": version}),
                        headers=JSON_HEADERS,
                    )
                )
                self._remember(key, written)
                return
            except VersionMismatch:
                current = await self._summary(params)
                version = 0 if current is None else current["version"]
        self._summaries.pop((key["project_key"], key["session_id"]), None)
        raise RuntimeError(f"The summary of session {key['session_id']!r} kept changing; gave up folding.")

    async def _summary(self, params: dict[str, str]) -> dict[str, Any] | None:
        try:
            return await self.client.send(
                calls.Call("GET", f"{BASE}/session/summary", _json, params=params, repeats_safely=True)
            )
        except NotFound:
            return None


def _sdk_key(key: Mapping[str, Any]) -> dict[str, str]:
    return {"project_key": key["project_key"], "session_id": key["session_id"]}


def _summary_entry(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The SDK's ``SessionSummaryEntry`` from the server's summary (which adds ``version``)."""
    return {"session_id": summary["session_id"], "mtime": summary["mtime"], "data": summary["data"]}
