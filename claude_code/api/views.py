"""The Claude Code session endpoints: plain views (kernel/api/plain.py) over claude_code's services.

Every key travels in the query (``namespace``, ``project_key``, ``session_id``, ``subpath``), so
the SDK's free-form keys need no escaping in a path. Each answer costs one or a few queries
whatever the history's length, except a load, which reads the rows it returns.
"""

from __future__ import annotations

import dataclasses

import msgspec

from claude_code import selectors, services
from claude_code.api.shapes import (
    Appended,
    AppendEntries,
    Deleted,
    EntriesPage,
    KeyQuery,
    LoadQuery,
    ProjectQuery,
    SessionList,
    SessionListed,
    SessionQuery,
    SessionSummary,
    Subkeys,
    SummaryList,
    SummaryWrite,
)
from claude_code.keys import SessionKey, check_key_part, check_namespace
from kernel.api.plain import Answer, Operation, json_view
from kernel.errors import NotFound
from timeline.selectors import MAX_READ_LIMIT, read_timeline
from tokens.access import authorize

TAGS = ("claude-code",)


class _Stored(msgspec.Struct):
    """A stored ``claude_code.*`` item: its ``record`` left as JSON text."""

    record: msgspec.Raw


_stored = msgspec.json.Decoder(_Stored)


def _key(query: KeyQuery | LoadQuery) -> SessionKey:
    return SessionKey.checked(
        project_key=query.project_key, session_id=query.session_id, subpath=query.subpath, namespace=query.namespace
    )


def _project(query: ProjectQuery | SessionQuery) -> tuple[str, str]:
    return check_namespace(query.namespace), check_key_part(query.project_key, "project_key")


def _summary_document(summary: selectors.Summary | None) -> SessionSummary | None:
    if summary is None:
        return None
    return SessionSummary(
        session_id=summary.session_id, mtime=summary.mtime_ms, data=summary.data, version=summary.version
    )


def _view(*operations: Operation):
    """A session endpoint: its operations under the ``claude-code`` tag, behind the API's token checks."""
    return json_view(*(dataclasses.replace(operation, tags=TAGS) for operation in operations), authorize=authorize)


def append(*, query: KeyQuery, body: AppendEntries) -> Answer:
    key = _key(query)
    outcome = services.append_entries(key, body.entries, summary=body.summary, summary_version=body.summary_version)
    summary = selectors.get_summary(key) if key.is_main and outcome.session is not None else None
    return Answer(
        Appended(
            appended=outcome.appended,
            ignored=list(outcome.ignored),
            mtime=None if outcome.session is None else outcome.session.mtime_ms,
            summary=_summary_document(summary),
            summary_version=0 if summary is None else summary.version,
            summary_written=outcome.summary_written,
        )
    )


def load(*, query: LoadQuery) -> Answer:
    key = _key(query)
    agent_id = selectors.written_agent_id(key)
    if agent_id is None:
        raise NotFound(f"Nothing was appended to session {key.session_id!r} (subpath {key.subpath!r}).")
    entries: list[msgspec.Raw] = []
    after, more = query.after, True
    while more and len(entries) < query.limit:
        page = read_timeline(
            agent_id=agent_id,
            direction="after",
            seq=after,
            limit=min(MAX_READ_LIMIT, query.limit - len(entries)),
            items_as_json=True,
        )
        entries.extend(_stored.decode(row["item"]).record for row in page.rows)
        if page.rows:
            after = page.rows[-1]["seq"]
        more = page.has_newer and bool(page.rows)
    return Answer(EntriesPage(entries=entries, after=after, more=more))


def list_sessions(*, query: ProjectQuery) -> Answer:
    namespace, project_key = _project(query)
    found = selectors.list_sessions(namespace, project_key)
    return Answer(SessionList(sessions=[SessionListed(s.session_id, s.mtime_ms) for s in found]))


def list_summaries(*, query: ProjectQuery) -> Answer:
    namespace, project_key = _project(query)
    found = selectors.list_summaries(namespace, project_key)
    return Answer(SummaryList(summaries=[_summary_document(summary) for summary in found]))


def list_subkeys(*, query: SessionQuery) -> Answer:
    namespace, project_key = _project(query)
    session_id = check_key_part(query.session_id, "session_id")
    return Answer(Subkeys(subkeys=selectors.list_subkeys(namespace, project_key, session_id)))


def delete(*, query: KeyQuery) -> Answer:
    return Answer(Deleted(deleted=services.delete_session(_key(query))))


def _main_key(query: SessionQuery) -> SessionKey:
    return SessionKey.checked(project_key=query.project_key, session_id=query.session_id, namespace=query.namespace)


def read_summary(*, query: SessionQuery) -> Answer:
    key = _main_key(query)
    found = selectors.get_summary(key)
    if found is None:
        raise NotFound(f"Session {key.session_id!r} has no summary.")
    return Answer(_summary_document(found))


def write_summary(*, query: SessionQuery, body: SummaryWrite) -> Answer:
    key = _main_key(query)
    written = services.write_summary(key, data=body.data, expected_version=body.expected_version)
    return Answer(_summary_document(written))


session_entries = _view(
    Operation(
        "GET",
        load,
        operation_id="claude_code_load",
        summary="Load a transcript's entries in append order (the SDK's SessionStore.load), a page at a time",
        description="404 `not_found` when nothing was ever appended to the key (the SDK's `None`).",
        query=LoadQuery,
        responses={200: EntriesPage},
        error_statuses=(404,),
    ),
    Operation(
        "POST",
        append,
        operation_id="claude_code_append",
        summary="Append transcript entries (the SDK's SessionStore.append)",
        description=(
            "Entries are stored whole, in order. An entry whose `uuid` is already stored under the key (or repeats "
            "one earlier in the call) is ignored and listed in `ignored`; entries without `uuid` are always "
            "appended. For a main transcript the answer carries its summary sidecar to fold into."
        ),
        query=KeyQuery,
        body=AppendEntries,
        responses={200: Appended},
    ),
)

session = _view(
    Operation(
        "DELETE",
        delete,
        operation_id="claude_code_delete",
        summary="Delete a transcript (the SDK's SessionStore.delete); a main key takes its subagents along",
        query=KeyQuery,
        responses={200: Deleted},
    ),
)

sessions = _view(
    Operation(
        "GET",
        list_sessions,
        operation_id="claude_code_list_sessions",
        summary="A project's sessions with their storage mtime in epoch ms (the SDK's SessionStore.list_sessions)",
        query=ProjectQuery,
        responses={200: SessionList},
    ),
)

summaries = _view(
    Operation(
        "GET",
        list_summaries,
        operation_id="claude_code_list_summaries",
        summary="A project's summary sidecars (the SDK's SessionStore.list_session_summaries)",
        query=ProjectQuery,
        responses={200: SummaryList},
    ),
)

summary = _view(
    Operation(
        "GET",
        read_summary,
        operation_id="claude_code_read_summary",
        summary="A session's summary sidecar with its version (404 `not_found` before the first write)",
        query=SessionQuery,
        responses={200: SessionSummary},
        error_statuses=(404,),
    ),
    Operation(
        "PUT",
        write_summary,
        operation_id="claude_code_write_summary",
        summary="Write a session's summary sidecar, compare-and-swap on its version",
        description=(
            "Stored verbatim, never interpreted. 412 `version_mismatch` (with the current `version`) when "
            "`expected_version` is not the stored one: read it again, fold, and retry."
        ),
        query=SessionQuery,
        body=SummaryWrite,
        responses={200: SessionSummary},
        error_statuses=(404, 412),
    ),
)

subkeys = _view(
    Operation(
        "GET",
        list_subkeys,
        operation_id="claude_code_list_subkeys",
        summary="A session's subagent transcripts' subpaths (the SDK's SessionStore.list_subkeys)",
        query=SessionQuery,
        responses={200: Subkeys},
    ),
)
