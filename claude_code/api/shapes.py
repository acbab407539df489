"""The wire shapes of the Claude Code session endpoints (msgspec: validation, JSON out, OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from claude_code.keys import (
    DEFAULT_NAMESPACE,
    MAX_KEY_LENGTH,
    MAX_NAMESPACE_LENGTH,
    NAMESPACE_PATTERN,
    SUBPATH_PATTERN,
)
from timeline.items import MAX_ITEM_ID_LENGTH

#: Entries per append call (the SDK flushes at about 500; the body limit bounds it too).
MAX_ENTRIES_PER_CALL = 1000
#: Entries per page of a load.
MAX_LOAD_LIMIT = 5000

Namespace = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=MAX_NAMESPACE_LENGTH,
        pattern=NAMESPACE_PATTERN,
        description="The tenant the session belongs to; `default` is where `import_claude_code` writes.",
    ),
]
ProjectKey = Annotated[
    str,
    msgspec.Meta(
        min_length=1, max_length=MAX_KEY_LENGTH, description="The SDK's `project_key` (by default the sanitised cwd)."
    ),
]
SessionId = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_KEY_LENGTH)]
Subpath = Annotated[
    str,
    msgspec.Meta(
        max_length=MAX_KEY_LENGTH,
        pattern=SUBPATH_PATTERN,
        description="Empty for the main transcript, else a relative path such as `subagents/agent-<id>`.",
    ),
]
#: A transcript line, kept whole: any JSON object (its ``uuid``, when present, a string).
Entry = Annotated[
    dict[str, Any],
    msgspec.Meta(
        description="One transcript line as Claude Code wrote it. Its `uuid` is the idempotency key.",
        extra_json_schema={"properties": {"uuid": {"type": "string", "minLength": 1, "maxLength": MAX_ITEM_ID_LENGTH}}},
    ),
]
#: An entry as answered: the stored JSON text passed through.
StoredEntry = Annotated[msgspec.Raw, msgspec.Meta(extra_json_schema={"type": "object"})]


class ProjectQuery(msgspec.Struct, forbid_unknown_fields=True):
    project_key: ProjectKey
    namespace: Namespace = DEFAULT_NAMESPACE


class SessionQuery(msgspec.Struct, forbid_unknown_fields=True):
    project_key: ProjectKey
    session_id: SessionId
    namespace: Namespace = DEFAULT_NAMESPACE


class KeyQuery(msgspec.Struct, forbid_unknown_fields=True):
    project_key: ProjectKey
    session_id: SessionId
    subpath: Subpath = ""
    namespace: Namespace = DEFAULT_NAMESPACE


class LoadQuery(KeyQuery, forbid_unknown_fields=True):
    after: Annotated[
        int, msgspec.Meta(ge=0, description="The `after` of the previous page (0 for the first): entries past it.")
    ] = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LOAD_LIMIT)] = MAX_LOAD_LIMIT


class AppendEntries(msgspec.Struct, forbid_unknown_fields=True):
    entries: Annotated[list[Entry], msgspec.Meta(max_length=MAX_ENTRIES_PER_CALL)]
    summary: (
        Annotated[
            dict[str, Any],
            msgspec.Meta(
                description="A main key's summary `data` folded from `summary_version` with every entry of the "
                "call: written with them when none is ignored and the version holds (`summary_written`)."
            ),
        ]
        | None
    ) = None
    summary_version: Annotated[int, msgspec.Meta(ge=0)] | None = None


class SummaryWrite(msgspec.Struct, forbid_unknown_fields=True):
    data: Annotated[dict[str, Any], msgspec.Meta(description="The SDK's summary `data`, stored verbatim.")]
    expected_version: Annotated[
        int, msgspec.Meta(ge=0, description="The version the writer folded from (0: none written yet).")
    ]


class SessionSummary(msgspec.Struct):
    """The SDK's ``SessionSummaryEntry`` plus the ``version`` to write the next fold against."""

    session_id: str
    mtime: int
    data: dict[str, Any]
    version: int


class Appended(msgspec.Struct):
    appended: int
    #: Indexes of the entries ignored as repeated uuids.
    ignored: list[int]
    #: The session's storage mtime (epoch ms); null when nothing was ever appended to the key.
    mtime: int | None
    #: For a main transcript: its summary as stored (null before the first write), to fold into.
    summary: SessionSummary | None
    summary_version: int
    #: Whether the summary sent along was written.
    summary_written: bool = False


class EntriesPage(msgspec.Struct):
    entries: list[StoredEntry]
    #: Where the next page starts (pass as `after`).
    after: int
    more: bool


class SessionListed(msgspec.Struct):
    session_id: str
    mtime: int


class SessionList(msgspec.Struct):
    sessions: list[SessionListed]


class SummaryList(msgspec.Struct):
    summaries: list[SessionSummary]


class Subkeys(msgspec.Struct):
    subkeys: list[str]


class Deleted(msgspec.Struct):
    deleted: bool
