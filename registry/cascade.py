"""What the registry needs from the records that live under its workspaces, without importing them.

The agent's foreign key points at ``Workspace``, so ``snapshots`` depends on
``registry`` (and ``timeline`` on ``snapshots``), never the other way round.
Yet archiving a project must archive the agents under it, unarchiving must
restore exactly the agents its archive took, the admin's list pages count
live agents, and a delete confirmation counts everything that goes with it.
The registry states what it needs as the small ``RecordsUnderWorkspaces``
protocol and a set of ``DeletionCounter``s; the apps that own such records
register theirs in ``AppConfig.ready()``.

Why a registered protocol and not signals: the registry needs *answers*
(counts, a subquery expression for a list annotation), from exactly one
implementation, inside the caller's transaction and in the locking order the
services rely on. A signal's receivers hand back ``[(receiver, response)]``
lists every caller would have to fold, promise nothing about the shape of the
response, and silently do nothing when no one is connected, which for an
archive would leave live agents in an archived workspace. Here a missing
registration fails loudly, and the protocol documents the contract in one
place.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Literal, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db.models import Expression, QuerySet

if TYPE_CHECKING:
    from registry.models import Workspace


@dataclass(frozen=True)
class Counted:
    """Records under workspaces that an archive takes or an unarchive restores (or would)."""

    records: int = 0
    #: The states an archive takes them out of, or its unarchive puts them back in
    #: (state: how many), in the owning app's order; records it leaves as they are are not counted.
    states: dict[str, int] = field(default_factory=dict)


class RecordsUnderWorkspaces(Protocol):
    """The records (agents) that live under workspaces and are archived with them.

    Every method runs inside the caller's transaction; none opens its own.
    """

    def archive_live(self, *, workspaces: QuerySet[Workspace], operation: uuid.UUID, now: dt.datetime) -> Counted:
        """Archive the live records under ``workspaces``, stamping them with ``operation``.

        The caller has already locked the workspaces, so no record can be added
        under them until it commits. A fixed number of queries, however many rows.
        """
        ...

    def unarchive(self, *, operation: uuid.UUID) -> Counted:
        """Restore exactly the records carrying ``operation``, each in the state its archive took it out of."""
        ...

    def count_live(self, *, workspaces: QuerySet[Workspace]) -> Counted:
        """What ``archive_live`` would take under ``workspaces`` now. Writes nothing."""
        ...

    def count_archived(self, *, operation: uuid.UUID) -> Counted:
        """What ``unarchive`` would restore for ``operation``. Writes nothing."""
        ...

    def live_count(self, *, per: Literal["project", "workspace"]) -> Expression:
        """A correlated subquery counting the live records under each outer project or workspace row."""
        ...

    def growth(self, *, per: Literal["project", "workspace"]) -> dict[str, Expression]:
        """Annotations ``stats_agents``, ``stats_timeline_rows`` and ``stats_timeline_bytes``: every record
        under each outer project or workspace row (archived ones too) and the history they hold."""
        ...


#: What an archive of each kind of record takes with it, in the order the admin's sentences name them.
ARCHIVE_TAKES_ALONG: dict[str, tuple[str, ...]] = {
    "projects": ("workspaces", "agents"),
    "workspaces": ("agents",),
    "agents": (),
}


@dataclass(frozen=True)
class ArchiveResult:
    """What an archive took. (What it would take is a selector's answer: ``*_archive_preview``.)"""

    workspaces: int = 0
    agents: int = 0
    #: The agents it closed, by the lifecycle each had (which their unarchive restores).
    closed_agents: dict[str, int] = field(default_factory=dict)
    changed: bool = False


@dataclass(frozen=True)
class UnarchiveResult:
    workspaces: int = 0
    agents: int = 0
    #: The agents put back in the lifecycle their archive closed, by that lifecycle.
    reopened_agents: dict[str, int] = field(default_factory=dict)
    changed: bool = False


@dataclass(frozen=True)
class DeletionScope:
    """The records a hard delete starts from: all of one kind, by primary key."""

    kind: Literal["projects", "workspaces", "agents"]
    ids: list


@dataclass(frozen=True)
class DeletionCascade:
    """What a hard delete takes with it. Registered counters fill all but the first two."""

    projects: int = 0
    workspaces: int = 0
    agents: int = 0
    timeline_rows: int = 0

    def by_label(self) -> dict[str, int]:
        """The counts as the admin's delete confirmation names them."""
        return {
            "projects": self.projects,
            "workspaces": self.workspaces,
            "agents": self.agents,
            "timeline rows": self.timeline_rows,
        }


#: Counts the records of one kind a hard delete of ``scope`` takes with it.
DeletionCounter = Callable[[DeletionScope], int]

_records_under_workspaces: RecordsUnderWorkspaces | None = None
_deletion_counters: dict[str, DeletionCounter] = {}


def register_records_under_workspaces(records: RecordsUnderWorkspaces) -> None:
    """Called once, from the owning app's ``AppConfig.ready()``."""
    global _records_under_workspaces
    _records_under_workspaces = records


def records_under_workspaces() -> RecordsUnderWorkspaces:
    if _records_under_workspaces is None:
        raise ImproperlyConfigured(
            "No app registered the records that live under workspaces (snapshots does, in its AppConfig.ready())."
        )
    return _records_under_workspaces


def register_deletion_counter(name: str, counter: DeletionCounter) -> None:
    """Add ``counter`` as the ``name`` count of ``DeletionCascade`` (``registry.selectors.deletion_cascade``)."""
    if name not in {f.name for f in fields(DeletionCascade)} - {"projects", "workspaces"}:
        raise ImproperlyConfigured(f"DeletionCascade has no count named {name!r}.")
    _deletion_counters[name] = counter


def deletion_counters() -> dict[str, DeletionCounter]:
    return dict(_deletion_counters)
