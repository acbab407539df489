"""``write_instance``: everything chartr holds, as one file of the instance format. Reads only.

Streamed: each kind is read in keyset pages and each line written as it is made, so memory
stays flat at any size. Each agent's rows are read up to the head read with the agent (rows
are never changed once committed), and the file is written to a temporary name beside the
target and renamed once complete, so an interrupted export leaves no partial file behind.
Export an instance nobody writes to (stopped, or before the move): records changed while it
runs may or may not be in the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

from django.db import connection
from django.utils import timezone

from kernel.files import replaced_atomically
from legacy.report import Progress, no_progress
from portability import format as fmt
from portability.records import AGENT, API_TOKEN, CLAUDE_CODE_SESSION, IMPORT_RUN, PROJECT, WORKSPACE, record_of
from portability.selectors import (
    AgentDigest,
    agents_with_heads,
    each,
    held_counts,
    timeline_records,
    tokens_with_creators,
)
from snapshots.models import AgentSnapshot


class _Writer:
    def __init__(self, out: IO[str], totals: dict[str, int], progress: Progress):
        self.out, self.totals, self.progress = out, totals, progress
        self.counts = dict.fromkeys(fmt.KINDS, 0)

    def write(self, record: dict) -> None:
        self.out.write(fmt.canonical(record) + "\n")
        kind = record["type"]
        if kind in self.counts:
            self.counts[kind] += 1
            done = self.counts[kind]
            if done % 1000 == 0 or done == 1 or kind not in ("row", "row_revision"):
                self.progress(fmt.KINDS[kind], done, max(done, self.totals[kind]))


def write_instance_to(out: IO[str], *, with_tokens: bool = False, progress: Progress | None = None) -> dict[str, int]:
    """Write the whole instance to ``out``; the count of each kind of record written."""
    progress = progress or no_progress
    totals = held_counts(with_tokens=with_tokens)
    writer = _Writer(out, totals, progress)
    head = fmt.header(exported_at=timezone.now(), engine=connection.vendor, with_tokens=with_tokens, counts=totals)
    out.write(fmt.canonical(head) + "\n")
    for kind in (PROJECT, WORKSPACE, AGENT):
        for obj in each(kind.model.objects.all()):
            writer.write(record_of(kind, obj))
    for agent in each(agents_with_heads()):
        _write_timeline(writer, agent)
    for session in each(CLAUDE_CODE_SESSION.model.objects.all()):
        writer.write(record_of(CLAUDE_CODE_SESSION, session))
    if with_tokens:
        for token in each(tokens_with_creators()):
            creator = token.created_by.get_username() if token.created_by is not None else None
            writer.write(record_of(API_TOKEN, token, created_by=creator))
    for run in each(IMPORT_RUN.model.objects.all()):
        writer.write(record_of(IMPORT_RUN, run))
    out.write(fmt.canonical({"type": "end", "counts": writer.counts}) + "\n")
    return writer.counts


def _write_timeline(writer: _Writer, agent: AgentSnapshot) -> None:
    digest = AgentDigest(agent)
    for record in timeline_records(agent):
        digest.add(record)
        writer.write(record)
    writer.write(
        {"type": "timeline_end", "agent_id": agent.agent_id, "rows": digest.rows, "sha256": digest.hexdigest()}
    )


def write_instance(*, path: Path | str, with_tokens: bool = False, progress: Progress | None = None) -> dict[str, int]:
    """Write the whole instance to ``path`` (gzip-compressed when it ends in ``.gz``), atomically."""
    with replaced_atomically(Path(path)) as tmp, fmt.open_file(tmp, "wt") as out:
        return write_instance_to(out, with_tokens=with_tokens, progress=progress)
