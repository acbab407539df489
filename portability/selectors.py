"""The reads of an instance export and of the import's checks, every one in bounded pages.

Records are read in keyset pages (``each``: ``WHERE key > last ORDER BY key LIMIT n``) and an
agent's rows in seq pages up to the head read with the agent, so memory stays flat however
much an instance holds, and no query holds a cursor open across pages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from django.db.models import F, Model, Q, QuerySet

from claude_code.models import ClaudeCodeSession
from legacy.models import ImportRun
from portability.format import KINDS, canonical, time_text
from portability.records import AGENT, CLAUDE_CODE_SESSION, TIMELINE, record_of
from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from timeline.models import ROW_FIELDS, TimelineRow, TimelineRowRevision, has_revert_token
from tokens.models import ApiToken

#: Records per page (agents come with their timeline heads).
RECORD_PAGE = 500
#: Timeline rows per page.
ROW_PAGE = 2000
#: A row's columns as a record holds them (``revert_token`` is read beside them: absent or null).
ROW_KEYS = (*(name for name in ROW_FIELDS if name != "revert_token"), "revision", "update_seq")


def each(queryset: QuerySet) -> Iterator[Model]:
    """Every object of ``queryset`` by ascending primary key, read ``RECORD_PAGE`` at a time."""
    last = None
    while True:
        page = queryset.order_by("pk")
        if last is not None:
            page = page.filter(pk__gt=last)
        batch = list(page[:RECORD_PAGE])
        if not batch:
            return
        yield from batch
        last = batch[-1].pk


def agents_with_heads() -> QuerySet[AgentSnapshot]:
    return AgentSnapshot.objects.select_related("timeline_head")


def tokens_with_creators() -> QuerySet[ApiToken]:
    return ApiToken.objects.select_related("created_by")


#: The model each kind of record is read from (a timeline is its agent's head: one per agent).
MODELS = {
    "project": Project,
    "workspace": Workspace,
    "agent": AgentSnapshot,
    "timeline": AgentSnapshot,
    "row": TimelineRow,
    "row_revision": TimelineRowRevision,
    "claude_code_session": ClaudeCodeSession,
    "api_token": ApiToken,
    "import_run": ImportRun,
}


def held_counts(*, with_tokens: bool) -> dict[str, int]:
    """How many records of each kind the instance holds now (an export's progress totals)."""
    return {kind: model.objects.count() if with_tokens or kind != "api_token" else 0 for kind, model in MODELS.items()}


def what_is_held(*, with_tokens: bool) -> list[str]:
    """The kinds of record this database already holds, which an import would collide with."""
    kinds = ("project", "workspace", "agent", "row", "import_run", *(("api_token",) if with_tokens else ()))
    return [KINDS[kind] for kind in kinds if MODELS[kind].objects.exists()]


def row_records(agent_id: str, *, after: int, head_seq: int) -> Iterator[dict]:
    """The agent's rows after seq ``after`` up to ``head_seq``, as records, ``ROW_PAGE`` per query.

    ``revert_token`` is left out for a row without one (SQL NULL) and kept for a null one
    (JSON null); ``extra`` is left out when the row has none."""
    rows = (
        TimelineRow.objects.filter(agent_id=agent_id, seq__lte=head_seq)
        .order_by("seq")
        .annotate(has_revert_token=has_revert_token())
    )
    while after < head_seq:
        page = list(rows.filter(seq__gt=after).values(*ROW_KEYS, "revert_token", "has_revert_token")[:ROW_PAGE])
        if not page:
            return
        for row in page:
            yield _record("row", row, ROW_KEYS, times=("committed_at",))
        after = page[-1]["seq"]


def _record(kind: str, values: dict, keys: tuple[str, ...], *, times: tuple[str, ...]) -> dict:
    """A row's or an earlier version's ``values()`` as a record: ``times`` as text, a key of
    ``OMITTED_WHEN_NULL`` left out when null, ``revert_token`` only when it has one (a null one is kept)."""
    record = {
        "type": kind,
        **{key: values[key] for key in keys if key not in OMITTED_WHEN_NULL or values[key] is not None},
    }
    record.update((key, time_text(values[key])) for key in times)
    if values["has_revert_token"]:
        record["revert_token"] = values["revert_token"]
    return record


#: A row's and an earlier version's keys left out when null: no extra, never updated.
OMITTED_WHEN_NULL = ("extra", "revision", "update_seq")
#: An earlier version's columns: its row's, but the row's own ``item_id``, and when it was replaced.
REVISION_KEYS = (*(name for name in ROW_KEYS if name != "item_id"), "replaced_at")


def revision_records(agent_id: str) -> Iterator[dict]:
    """The earlier versions of the agent's updated rows (``TimelineRowRevision``), by seq and revision,
    ``ROW_PAGE`` per query; ``revert_token`` and ``extra`` as on a row record, ``update_seq`` left out when null."""
    revisions = (
        TimelineRowRevision.objects.filter(agent_id=agent_id)
        .annotate(
            seq=F("row__seq"),
            has_revert_token=has_revert_token(),
        )
        .order_by("seq", "revision")
    )
    after = (0, 0)
    while True:
        later = Q(seq__gt=after[0]) | Q(seq=after[0], revision__gt=after[1])
        page = list(revisions.filter(later).values(*REVISION_KEYS, "revert_token", "has_revert_token")[:ROW_PAGE])
        for revision in page:
            yield _record("row_revision", revision, REVISION_KEYS, times=("committed_at", "replaced_at"))
        if len(page) < ROW_PAGE:
            return
        after = (page[-1]["seq"], page[-1]["revision"])


def timeline_records(agent: AgentSnapshot) -> Iterator[dict]:
    """The agent's ``timeline`` record (its head), then a record per retained row."""
    head = agent.timeline_head
    yield record_of(TIMELINE, head)
    yield from row_records(agent.agent_id, after=head.min_seq - 1, head_seq=head.head_seq)
    if head.update_seq:  # no update ever: no earlier version to read
        yield from revision_records(agent.agent_id)


class AgentDigest:
    """The content hash of an agent: SHA-256 over its record, its timeline record and its rows, each as
    ``canonical`` text and a newline. The export writes it; the import recomputes it from the database."""

    def __init__(self, agent: AgentSnapshot, *, left_out: frozenset[str] = frozenset()):
        """``left_out``: keys of ``AGENT.added`` that the file's record did not have (null here)."""
        self._hash = hashlib.sha256()
        self.rows = 0
        record = record_of(AGENT, agent)
        for key in left_out:
            del record[key]
        self.add(record)

    def add(self, record: dict) -> None:
        self._hash.update((canonical(record) + "\n").encode("utf-8"))
        if record["type"] == "row":
            self.rows += 1

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def agent_digest(agent: AgentSnapshot, *, left_out: frozenset[str] = frozenset()) -> AgentDigest:
    """The agent's content hash as this database holds it (``left_out``: as ``AgentDigest``)."""
    digest = AgentDigest(agent, left_out=left_out)
    for record in timeline_records(agent):
        digest.add(record)
    return digest


class RecordSetDigest:
    """A content hash of a set of records whatever their order: the sum, modulo 2**256, of each
    record's SHA-256 over its ``canonical`` text. The import adds the records of the file as it reads
    them, and compares with the same hash over what the database then holds."""

    def __init__(self) -> None:
        self.value = 0

    def add(self, record: dict) -> None:
        digest = hashlib.sha256(canonical(record).encode("utf-8")).digest()
        self.value = (self.value + int.from_bytes(digest)) % 2**256


def sessions_digest() -> RecordSetDigest:
    """The ``RecordSetDigest`` of the Claude Code sessions this database holds, as records."""
    digest = RecordSetDigest()
    for session in each(ClaudeCodeSession.objects.all()):
        digest.add(record_of(CLAUDE_CODE_SESSION, session))
    return digest
