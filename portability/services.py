"""``import_instance``: the one write path that loads an instance export into an empty database.

One transaction, streamed: each kind of record is read a batch at a time and written through its
owning app's service (``registry.services.carry_over_registry``, ``snapshots.services.import_agents``,
``timeline.writes.carried.carry_over_timeline``, ``claude_code.services.carry_over_sessions``,
``tokens.services.carry_over_api_tokens``, ``legacy.services.carry_over_import_runs``), so memory stays
flat at any size. Then it verifies:
the counts of the ``end`` record against the file and the database, and each agent's content
hash recomputed from the database against the one the export wrote. Any problem (bad input,
named by file and line, a refusal by the database, a mismatch) rolls everything back; a dry run
does it all and rolls back too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import DatabaseError, transaction

from claude_code.keys import SessionKey
from claude_code.services import carry_over_sessions
from kernel.errors import ChartrError
from kernel.migrations import not_migrated
from legacy.report import Progress, no_progress
from legacy.services import carry_over_import_runs
from portability import format as fmt
from portability.parse import carried_timeline, objects, parse_revision, parse_row, token_of
from portability.records import AGENT, API_TOKEN, CLAUDE_CODE_SESSION, IMPORT_RUN, PROJECT, WORKSPACE, RecordInvalid
from portability.selectors import RecordSetDigest, what_is_held
from portability.verify import verify_import
from registry.services import carry_over_registry
from snapshots.services import import_agents
from timeline.reads.planner_statistics import refresh_timeline_statistics
from timeline.rows import ReadRow
from timeline.writes.carried import carry_over_revisions, carry_over_timeline
from tokens.services import carry_over_api_tokens

#: Records per batch insert.
BATCH = 500
#: Timeline rows per batch insert.
ROW_BATCH = 5000


class TargetNotReady(Exception):
    """The database cannot take an instance: not migrated, or not empty."""


class InstanceNotEmpty(TargetNotReady):
    """The database already holds records: an instance is imported only into an empty one."""


@dataclass
class ImportResult:
    path: str
    dry_run: bool
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(fmt.KINDS, 0))
    #: agents whose content hash was recomputed from the database and matched
    agents_verified: int = 0
    source_engine: str = ""


def import_instance(*, path: Path | str, dry_run: bool = False, progress: Progress | None = None) -> ImportResult:
    """Load the export at ``path``; raise ``InstanceFileInvalid`` (bad input or a failed check) or
    ``TargetNotReady`` (not migrated, not empty), having written nothing."""
    progress = progress or no_progress
    if problem := not_migrated():  # every migration applied, as runserver checks it: the import writes every table
        raise TargetNotReady(f"The database is not migrated ({problem}); run manage.py migrate first.")
    with fmt.Reader(Path(path)) as reader:
        with_tokens = reader.header.get("with_tokens")
        if not isinstance(with_tokens, bool):
            raise reader.error(1, "the header's with_tokens must be true or false")
        result = ImportResult(path=str(path), dry_run=dry_run, source_engine=str(reader.header.get("engine", "")))
        try:
            _load_and_verify(reader, result, progress, with_tokens=with_tokens)
        except DatabaseError as exc:  # a deferred constraint, checked as the transaction commits
            raise reader.error(None, f"the database refused the import as it committed ({exc})") from None
    return result


def _load_and_verify(reader: fmt.Reader, result: ImportResult, progress: Progress, *, with_tokens: bool) -> None:
    with transaction.atomic():
        # Inside the transaction: on SQLite it holds the write lock, so nothing lands meanwhile.
        held = what_is_held(with_tokens=with_tokens)
        if held:
            raise InstanceNotEmpty(
                "The database is not empty (it holds " + ", ".join(held) + "); an instance is imported "
                "only into an empty one: a new database, migrated (manage.py migrate)."
            )
        load = _Load(reader, result, progress)
        digests = load.run()
        progress("verifying", 0, 1)
        result.agents_verified = verify_import(
            reader, result.counts, digests, with_tokens=with_tokens, left_out=load.left_out, sessions=load.sessions
        )
        progress("verifying", 1, 1)
        if result.dry_run:
            transaction.set_rollback(True)
        elif result.counts["row"]:
            transaction.on_commit(refresh_timeline_statistics)


class _Load:
    def __init__(self, reader: fmt.Reader, result: ImportResult, progress: Progress):
        self.reader, self.result, self.progress = reader, result, progress
        self.totals = reader.header["counts"]
        #: agent id -> (line of its timeline_end, rows, sha256)
        self.digests: dict[str, tuple[int, int, str]] = {}
        #: the keys of the projects and workspaces read so far (what later records may refer to)
        self.project_ids: set[int] = set()
        self.workspace_ids: set[int] = set()
        #: the agents read so far, and the lines naming a parent not read yet (it may come later
        #: among the agents, which the export writes by id: a foreign key the database checks at commit)
        self.agent_ids: set[str] = set()
        self.parents_ahead: list[tuple[fmt.Line, str]] = []
        #: agent id -> the keys added to the format since (``AGENT.added``) that its record left out
        self.left_out: dict[str, frozenset[str]] = {}
        #: the Claude Code session records read, to compare with what the database holds at the end
        self.sessions = RecordSetDigest()

    def run(self) -> dict[str, tuple[int, int, str]]:
        self._batches(PROJECT.type, self._projects)
        self._batches(WORKSPACE.type, self._workspaces)
        self._batches("agent", self._agents)
        self._check_parents()
        while (line := self.reader.peek()) is not None and line.type == "timeline":
            self._timeline(self.reader.next())
        self._batches(CLAUDE_CODE_SESSION.type, self._sessions)
        self._batches(API_TOKEN.type, self._tokens)
        self._batches(
            IMPORT_RUN.type, lambda lines: carry_over_import_runs(runs=objects(self.reader, IMPORT_RUN, lines))
        )
        return self.digests

    def _projects(self, lines: list[fmt.Line]) -> None:
        projects = objects(self.reader, PROJECT, lines)
        carry_over_registry(projects=projects)
        self.project_ids.update(project.pk for project in projects)

    def _workspaces(self, lines: list[fmt.Line]) -> None:
        workspaces = objects(self.reader, WORKSPACE, lines)
        self._refers(lines, [workspace.project_id for workspace in workspaces], self.project_ids, "project")
        carry_over_registry(workspaces=workspaces)
        self.workspace_ids.update(workspace.pk for workspace in workspaces)

    def _agents(self, lines: list[fmt.Line]) -> None:
        agents = objects(self.reader, AGENT, lines)
        self._refers(lines, [agent.workspace_id for agent in agents], self.workspace_ids, "workspace")
        import_agents(new=agents, changed=[], fields=["version"])
        self.agent_ids.update(agent.pk for agent in agents)
        for line, agent in zip(lines, agents, strict=True):
            if missing := AGENT.added - line.record.keys():
                self.left_out[agent.pk] = frozenset(missing)
        self.parents_ahead.extend(
            (line, agent.parent_id)
            for line, agent in zip(lines, agents, strict=True)
            if agent.parent_id is not None and agent.parent_id not in self.agent_ids
        )

    def _check_parents(self) -> None:
        """Each agent's ``parent`` is an agent of the file (before or after it)."""
        for line, parent_id in self.parents_ahead:
            if parent_id not in self.agent_ids:
                raise self.reader.error(line, f"agent: parent {parent_id!r} is not an agent of the file")

    def _refers(self, lines: list[fmt.Line], keys: list, known: set, what: str) -> None:
        """Each record's ``what`` is one the file brought before it."""
        for line, key in zip(lines, keys, strict=True):
            if key not in known:
                raise self.reader.error(line, f"{line.type}: {what} {key!r} is not in the file before it")

    def _sessions(self, lines: list[fmt.Line]) -> None:
        """Claude Code sessions: each key as the API checks it, each agent one the file brought."""
        sessions = objects(self.reader, CLAUDE_CODE_SESSION, lines)
        for line, session in zip(lines, sessions, strict=True):
            parts = ("namespace", "project_key", "session_id", "subpath")
            try:
                SessionKey.checked(**{part: getattr(session, part) for part in parts})
            except ValidationError as exc:
                raise self.reader.error(line, f"{line.type}: {'; '.join(exc.messages)}") from None
        self._refers(lines, [session.agent_id for session in sessions], self.agent_ids, "agent")
        carry_over_sessions(sessions=sessions)
        for line in lines:
            self.sessions.add(line.record)

    def _tokens(self, lines: list[fmt.Line]) -> None:
        if not self.reader.header["with_tokens"]:
            raise self.reader.error(lines[0], "an api_token record in an export made without --with-tokens")
        carry_over_api_tokens(tokens=[token_of(self.reader, line) for line in lines])

    def _revisions(self, agent_id: str, versions: list, *, after_line: int) -> None:
        """The agent's ``row_revision`` records (held in memory: one agent's earlier versions)."""
        lines = list(self.reader.take("row_revision"))
        revisions = [parse_revision(self.reader, line) for line in lines]
        first = lines[0].lineno if lines else after_line
        last = lines[-1].lineno if lines else after_line
        self._written(
            first, last, lambda: carry_over_revisions(agent_id=agent_id, versions=versions, revisions=revisions)
        )
        self._count("row_revision", len(revisions))

    def _count(self, kind: str, added: int) -> None:
        self.result.counts[kind] += added
        done = self.result.counts[kind]
        self.progress(fmt.KINDS[kind], done, max(done, self.totals[kind]))

    def _batches(self, kind: str, write: Callable[[list[fmt.Line]], None]) -> None:
        lines = self.reader.take(kind)
        while batch := list(islice(lines, BATCH)):
            self._written(batch[0].lineno, batch[-1].lineno, lambda batch=batch: write(batch))
            self._count(kind, len(batch))

    def _written(self, first: int, last: int | Callable[[], int], write: Callable[[], object]) -> object:
        """Run ``write`` in a savepoint; a refusal by the database names the lines it came from."""
        try:
            with transaction.atomic():
                return write()
        except (DatabaseError, ChartrError, ValidationError) as exc:
            last = last() if callable(last) else last
            if isinstance(exc, ChartrError):
                reason = exc.message
            elif isinstance(exc, ValidationError):
                reason = "; ".join(exc.messages)
            else:
                reason = f"the database refused it ({exc})"
            if first == last:
                raise self.reader.error(first, reason) from None
            raise self.reader.error(None, f"lines {first}-{last}: {reason}") from None

    def _timeline(self, line: fmt.Line) -> None:
        try:
            head = carried_timeline(line.record)
        except RecordInvalid as exc:
            raise self.reader.error(line, str(exc)) from None
        rows: list[int] = [0, line.lineno]  # how many, the last line read
        versions: list[tuple[int, int, int | None]] = []  # of the rows an update changed

        def read_rows() -> Iterator[ReadRow]:
            previous = head.min_seq - 1
            for row_line in self.reader.take("row"):
                row = parse_row(self.reader, row_line, after=previous, head_seq=head.head_seq)
                previous = row.seq
                rows[0], rows[1] = rows[0] + 1, row_line.lineno
                if row.revision is not None:
                    versions.append((row.seq, row.revision, row.update_seq))
                yield row

        self._written(
            line.lineno,
            lambda: rows[1],
            lambda: carry_over_timeline(
                head=head, rows=read_rows(), batch_size=ROW_BATCH, on_batch=lambda n: self._count("row", n)
            ),
        )
        self._count("timeline", 1)
        self._revisions(head.agent_id, versions, after_line=rows[1])
        end = self.reader.expect("timeline_end")
        if end.record.get("agent_id") != head.agent_id:
            raise self.reader.error(
                end, f"timeline_end of {end.record.get('agent_id')!r} closes {head.agent_id!r}'s rows"
            )
        if end.record.get("rows") != rows[0] or not isinstance(end.record.get("sha256"), str):
            raise self.reader.error(end, f"timeline_end says {end.record.get('rows')!r} rows; {rows[0]} came before it")
        if head.agent_id in self.digests:
            raise self.reader.error(line, f"a second timeline of agent {head.agent_id!r}")
        self.digests[head.agent_id] = (end.lineno, rows[0], end.record["sha256"])
