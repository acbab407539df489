"""The reads of an instance export and of the import's checks, every one in bounded pages.

Records are read in keyset pages (``pages``: ``WHERE key > last ORDER BY key LIMIT n``) and an
agent's rows in seq pages up to the head read with the agent, so memory stays flat however
much an instance holds, and no query holds a cursor open across pages.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import BooleanField, ExpressionWrapper, Model, Q, QuerySet

from legacy.models import ImportRun
from portability.format import canonical, new_digest, time_text
from portability.records import AGENT, TIMELINE, record_of
from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from timeline.models import TimelineRow, TimelineRowRevision
from tokens.models import ApiToken

#: Records per page (agents come with their timeline heads).
RECORD_PAGE = 500
#: Timeline rows per page.
ROW_PAGE = 2000
ROW_KEYS = (
    "seq",
    "committed_at",
    "item_type",
    "item",
    "item_id",
    "turn_id",
    "provider_message_id",
    "provider_timeline_item_id",
    "extra",
)


def pages(queryset: QuerySet, *, size: int | None = None) -> Iterator[list[Model]]:
    """``queryset`` by ascending primary key, ``size`` (``RECORD_PAGE``) at a time."""
    size = size or RECORD_PAGE
    last = None
    while True:
        page = queryset.order_by("pk")
        if last is not None:
            page = page.filter(pk__gt=last)
        batch = list(page[:size])
        if not batch:
            return
        yield batch
        last = batch[-1].pk


def agents_with_heads() -> QuerySet[AgentSnapshot]:
    return AgentSnapshot.objects.select_related("timeline_head")


def tokens_with_creators() -> QuerySet[ApiToken]:
    return ApiToken.objects.select_related("created_by")


def held_counts(*, with_tokens: bool) -> dict[str, int]:
    """How many records of each kind the instance holds now (an export's progress totals)."""
    return {
        "project": Project.objects.count(),
        "workspace": Workspace.objects.count(),
        "agent": AgentSnapshot.objects.count(),
        "timeline": AgentSnapshot.objects.count(),
        "row": TimelineRow.objects.count(),
        "api_token": ApiToken.objects.count() if with_tokens else 0,
        "import_run": ImportRun.objects.count(),
    }


def what_is_held(*, with_tokens: bool) -> list[str]:
    """The kinds of record this database already holds, which an import would collide with."""
    models = {
        "projects": Project,
        "workspaces": Workspace,
        "agents": AgentSnapshot,
        "timeline rows": TimelineRow,
        "legacy import runs": ImportRun,
    }
    if with_tokens:
        models["API tokens"] = ApiToken
    return [name for name, model in models.items() if model.objects.exists()]


def row_records(agent_id: str, *, after: int, head_seq: int, size: int | None = None) -> Iterator[dict]:
    """The agent's rows after seq ``after`` up to ``head_seq``, as records, ``size`` per query.

    ``revert_token`` is left out for a row without one (SQL NULL) and kept for a null one
    (JSON null); ``extra`` is left out when the row has none."""
    size = size or ROW_PAGE
    rows = (
        TimelineRow.objects.filter(agent_id=agent_id, seq__lte=head_seq)
        .order_by("seq")
        .annotate(has_revert_token=ExpressionWrapper(Q(revert_token__isnull=False), output_field=BooleanField()))
    )
    while after < head_seq:
        page = list(rows.filter(seq__gt=after).values(*ROW_KEYS, "revert_token", "has_revert_token")[:size])
        if not page:
            return
        for row in page:
            yield _row_record(row)
        after = page[-1]["seq"]


def _row_record(row: dict) -> dict:
    record = {"type": "row", **{key: row[key] for key in ROW_KEYS if key != "extra"}}
    record["committed_at"] = time_text(row["committed_at"])
    if row["has_revert_token"]:
        record["revert_token"] = row["revert_token"]
    if row["extra"] is not None:
        record["extra"] = row["extra"]
    return record


def timeline_records(agent: AgentSnapshot) -> Iterator[dict]:
    """The agent's ``timeline`` record (its head), then a record per retained row."""
    head = agent.timeline_head
    yield record_of(TIMELINE, head)
    yield from row_records(agent.agent_id, after=head.min_seq - 1, head_seq=head.head_seq)


class AgentDigest:
    """The content hash of an agent: SHA-256 over its record, its timeline record and its rows, each as
    ``canonical`` text and a newline. The export writes it; the import recomputes it from the database."""

    def __init__(self, agent: AgentSnapshot):
        self._hash = new_digest()
        self.rows = 0
        self.add(record_of(AGENT, agent))

    def add(self, record: dict) -> None:
        self._hash.update((canonical(record) + "\n").encode("utf-8"))
        if record["type"] == "row":
            self.rows += 1

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def agent_digest(agent: AgentSnapshot) -> AgentDigest:
    """The agent's content hash as this database holds it."""
    digest = AgentDigest(agent)
    for record in timeline_records(agent):
        digest.add(record)
    return digest


def earlier_row_versions() -> int:
    """The earlier versions of updated rows, which the format does not carry (docs/portability.md)."""
    return TimelineRowRevision.objects.count()
