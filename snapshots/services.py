"""Every write to agent snapshots. Admin, API and commands call these."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Q, QuerySet, When
from django.utils import timezone

from kernel.errors import ArchivedConflict, Conflict, NotFound, VersionMismatch
from kernel.services import (
    UNSET,
    delete_in_batches,
    insert_carried_over,
    lock_for_update,
    require_json_object,
    validate_fields,
)
from registry.cascade import ArchiveResult, UnarchiveResult
from registry.directories import is_within, normalize_directory
from registry.models import Workspace
from registry.services import workspace_for_directory
from snapshots.models import AgentSnapshot
from snapshots.selectors import lifecycles_an_unarchive_restores, stale_condition
from snapshots.signals import agents_changed, agents_created

#: Agents per statement of ``import_agents``: well under SQLite's variable limit.
IMPORT_BATCH = 500

#: Fields a client may change with update_agent. Identity, workspace and the
#: bookkeeping columns are not among them.
UPDATABLE_AGENT_FIELDS = (
    "provider",
    "title",
    "labels",
    "lifecycle",
    "last_mode_id",
    "config",
    "runtime_info",
    "persistence",
    "requires_attention",
    "attention_reason",
    "attention_at",
    "internal",
)


def _validate_labels(labels: Any) -> dict[str, str]:
    require_json_object(labels, "labels")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise ValidationError({"labels": ["Labels map strings to strings."]}, code="invalid")
    return labels


def _apply_attention(agent: AgentSnapshot, *, explicit_at: bool) -> None:
    """Keep the attention fields coherent: a reason exactly when attention is required."""
    if not agent.requires_attention:
        # Both go: a later raise must not inherit the old time ("since" on the dashboard).
        agent.attention_reason = None
        agent.attention_at = None
        return
    # A reason is optional: Paseo raises attention without one too.
    agent.attention_reason = agent.attention_reason or None
    if not explicit_at and agent.attention_at is None:
        agent.attention_at = timezone.now()


def _normalized_cwd(cwd: str | None) -> str:
    """The agent's own directory, normalized like every stored directory ("" when unknown)."""
    if not cwd:
        return ""
    try:
        return normalize_directory(cwd)
    except ValidationError as exc:
        raise ValidationError({"cwd": exc.messages}, code="invalid") from None


def _validate_agent(agent: AgentSnapshot) -> None:
    _validate_labels(agent.labels)
    for name in ("config", "runtime_info", "persistence"):
        require_json_object(getattr(agent, name), name)
    validate_fields(agent, exclude=["workspace"])


def notify_agents_changed(agent_ids: list[str], reason: str) -> None:
    if agent_ids:
        transaction.on_commit(lambda: agents_changed.send(sender=AgentSnapshot, agent_ids=agent_ids, reason=reason))


def archive_agent_rows(agents: QuerySet[AgentSnapshot], operation: uuid.UUID, now: dt.datetime) -> int:
    """Archive ``agents`` with ``operation``, inside the caller's transaction. One UPDATE.

    An archived agent is no longer doing anything, whatever it was doing: it is
    closed, and the lifecycle it had is kept for its unarchive to restore.
    """
    return agents.update(
        archived_at=now,
        archive_operation=operation,
        lifecycle_before_archive=F("lifecycle"),
        lifecycle=AgentSnapshot.Lifecycle.CLOSED,
        updated_at=now,
        version=F("version") + 1,
    )


def restore_archived_agents(operation: uuid.UUID) -> tuple[int, list[str], dict[str, int]]:
    """Unarchive exactly the agents carrying ``operation``, inside the caller's transaction,
    each back in the lifecycle its archive closed (one the archive did not set is left alone).
    Returns how many, their ids and the lifecycles restored (lifecycle: how many)."""
    agents = AgentSnapshot.objects.filter(archive_operation=operation)
    agent_ids = list(agents.values_list("agent_id", flat=True))
    if not agent_ids:
        return 0, [], {}
    reopened = lifecycles_an_unarchive_restores(agents)
    now = timezone.now()
    closed_by_the_archive = Q(lifecycle=AgentSnapshot.Lifecycle.CLOSED, lifecycle_before_archive__isnull=False)
    restored = AgentSnapshot.objects.filter(pk__in=agent_ids).update(
        archived_at=None,
        archive_operation=None,
        lifecycle=Case(When(closed_by_the_archive, then=F("lifecycle_before_archive")), default=F("lifecycle")),
        lifecycle_before_archive=None,
        updated_at=now,
        version=F("version") + 1,
    )
    return restored, agent_ids, reopened


#: The refusal of a cwd outside the agent's workspace (data, not schema: the workspace's directory decides).
CWD_OUTSIDE_WORKSPACE = "An agent's cwd must be its workspace's directory or a directory below it."


def _check_workspace_takes(workspace: Workspace, agent: AgentSnapshot) -> None:
    """A new agent goes only into a live workspace, with its cwd at or below the workspace's directory."""
    if workspace.is_archived:
        raise ArchivedConflict(f"Workspace {workspace.pk} is archived; agents cannot be added to it.")
    if agent.cwd and not is_within(agent.cwd, workspace.directory):
        raise ValidationError(
            {"cwd": [CWD_OUTSIDE_WORKSPACE]},
            code="invalid",
        )


def create_agent(
    *,
    workspace: Workspace,
    provider: str,
    agent_id: str | None = None,
    cwd: str = "",
    title: str = "",
    labels: dict[str, str] | None = None,
    lifecycle: str = AgentSnapshot.Lifecycle.INITIALIZING,
    last_mode_id: str = "",
    config: dict | None = None,
    runtime_info: dict | None = None,
    persistence: dict | None = None,
    requires_attention: bool = False,
    attention_reason: str | None = None,
    attention_at: dt.datetime | None = None,
    internal: bool = False,
    parent: AgentSnapshot | None = None,
) -> AgentSnapshot:
    agent = AgentSnapshot(
        agent_id=agent_id or str(uuid.uuid4()),
        parent=parent,
        cwd=_normalized_cwd(cwd),
        provider=provider,
        title=title or "",
        labels={} if labels is None else labels,
        lifecycle=lifecycle,
        last_mode_id=last_mode_id or "",
        config={} if config is None else config,
        runtime_info={} if runtime_info is None else runtime_info,
        persistence={} if persistence is None else persistence,
        requires_attention=requires_attention,
        attention_reason=attention_reason,
        attention_at=attention_at,
        internal=internal,
        last_seen_at=timezone.now(),
    )
    _apply_attention(agent, explicit_at=attention_at is not None)
    _validate_agent(agent)
    with transaction.atomic():
        workspace = lock_for_update(Workspace, workspace.pk)
        _check_workspace_takes(workspace, agent)
        agent.workspace = workspace
        try:
            with transaction.atomic():
                agent.save(force_insert=True)
        except IntegrityError as exc:
            if AgentSnapshot.objects.filter(pk=agent.agent_id).exists():
                raise Conflict(f"An agent with id {agent.agent_id!r} already exists.") from exc
            raise
        agents_created.send(sender=AgentSnapshot, agent_ids=[agent.agent_id])
        notify_agents_changed([agent.agent_id], "created")
    return agent


def register_agent(*, agent_id: str, cwd: str, provider: str, **fields: Any) -> tuple[AgentSnapshot, bool]:
    """The agent ``agent_id``, created on first use where chartr's rule for a cwd places it
    (``registry.services.workspace_for_directory``); ``(agent, created)``.

    For a daemon that owns its agents: registering an agent that exists changes nothing and
    answers it as it is (whatever the request says), so a daemon may register before every
    first write without keeping track. ``fields`` are ``create_agent``'s (title, labels, ...).
    """
    directory = _normalized_cwd(cwd)
    if not directory:
        raise ValidationError({"cwd": ["A registration needs the agent's working directory."]}, code="invalid")
    existing = AgentSnapshot.objects.filter(pk=agent_id).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            workspace = workspace_for_directory(directory)
            return create_agent(workspace=workspace, agent_id=agent_id, cwd=cwd, provider=provider, **fields), True
    except Conflict:
        # Another registration of the same agent won the race: it is the one.
        existing = AgentSnapshot.objects.filter(pk=agent_id).first()
        if existing is None:
            raise
        return existing, False


def import_agents(*, new: list[AgentSnapshot], changed: list[AgentSnapshot], fields: list[str]) -> None:
    """Write the agents an import checked, inside its transaction: ``new`` inserted with the
    creation and update times they carry (``kernel.services.insert_carried_over``), ``changed``
    updated in ``fields``. Batched, so the cost is a few statements per ``IMPORT_BATCH`` agents;
    the caller has locked ``changed``."""
    if new:
        insert_carried_over(AgentSnapshot, new, batch_size=IMPORT_BATCH)
        agents_created.send(sender=AgentSnapshot, agent_ids=[agent.agent_id for agent in new])
    AgentSnapshot.objects.bulk_update(changed, fields, batch_size=IMPORT_BATCH)
    notify_agents_changed([agent.agent_id for agent in new], "created")
    notify_agents_changed([agent.agent_id for agent in changed], "updated")


def update_agent(*, agent: AgentSnapshot, expected_version: int | None = None, **changes: Any) -> AgentSnapshot:
    """Change an agent snapshot's fields; ``expected_version`` guards against lost updates."""
    unknown = sorted(set(changes) - set(UPDATABLE_AGENT_FIELDS))
    if unknown:
        raise ValidationError({name: ["This field cannot be changed."] for name in unknown}, code="invalid")
    with transaction.atomic():
        agent = lock_for_update(AgentSnapshot, agent.pk)
        if expected_version is not None and agent.version != expected_version:
            raise VersionMismatch(
                f"Agent {agent.agent_id} is at version {agent.version}, not {expected_version}.",
                extra={"version": agent.version},
            )
        if agent.is_archived:
            raise ArchivedConflict(f"Agent {agent.agent_id} is archived; unarchive it before changing it.")
        for name, value in changes.items():
            if value is UNSET:
                continue
            if name in ("labels", "config", "runtime_info", "persistence") and value is None:
                value = {}
            if name in ("title", "last_mode_id") and value is None:
                value = ""
            setattr(agent, name, value)
        _apply_attention(agent, explicit_at="attention_at" in changes)
        _validate_agent(agent)
        agent.version += 1
        agent.last_seen_at = timezone.now()
        agent.save()
        notify_agents_changed([agent.agent_id], "updated")
    return agent


@dataclass(frozen=True)
class AttentionCleared:
    """What ``clear_attention`` did: nothing, or cleared the attention raised for ``reason`` at ``since``."""

    changed: bool = False
    reason: str | None = None
    since: dt.datetime | None = None


def clear_attention(*, agent: AgentSnapshot) -> AttentionCleared:
    """Mark the agent as needing no attention, through ``update_agent``: its reason and time go,
    its version moves and followers get an ``agent`` event. An agent needing no attention is
    left as it is (no new version, no event); an archived one is refused, as any update is."""
    with transaction.atomic():
        agent = lock_for_update(AgentSnapshot, agent.pk)
        if not agent.requires_attention:
            return AttentionCleared()
        reason, since = agent.attention_reason, agent.attention_at
        update_agent(agent=agent, requires_attention=False)
    return AttentionCleared(changed=True, reason=reason, since=since)


def record_heartbeat(*, agent_id: str) -> None:
    """Note that the agent's daemon is alive, without touching its snapshot's version or its timeline.

    A heartbeat is not a change: no ETag moves and no ``agent`` event is sent.
    """
    with transaction.atomic():
        seen = AgentSnapshot.objects.filter(pk=agent_id, archived_at__isnull=True).update(last_seen_at=timezone.now())
        if seen:
            return
        if AgentSnapshot.objects.filter(pk=agent_id).exists():
            raise ArchivedConflict(f"Agent {agent_id} is archived; unarchive it before it reports in again.")
        raise NotFound(f"Agent {agent_id} does not exist.")


def mark_stale_agents(*, now: dt.datetime | None = None) -> list[str]:
    """Set every stale agent to lifecycle ``error``, needing attention for reason ``error``.

    Each gets an ``agent`` event, as any update does. Returns their ids; an
    agent that reports in meanwhile is no longer stale and is left alone.
    """
    now = now or timezone.now()
    with transaction.atomic():
        # of=self: the staleness reads the timeline head through an outer join, which PostgreSQL cannot lock.
        stale = AgentSnapshot.objects.select_for_update(of=("self",)).filter(stale_condition(now=now))
        agent_ids = sorted(stale.values_list("agent_id", flat=True))
        AgentSnapshot.objects.filter(pk__in=agent_ids).update(
            lifecycle=AgentSnapshot.Lifecycle.ERROR,
            requires_attention=True,
            attention_reason=AgentSnapshot.AttentionReason.ERROR,
            attention_at=now,
            updated_at=now,
            version=F("version") + 1,
        )
        notify_agents_changed(agent_ids, "stale")
    return agent_ids


def archive_agent(*, agent: AgentSnapshot) -> ArchiveResult:
    """Archive the agent on its own; archiving an archived agent changes nothing.

    ``snapshots.selectors.agent_archive_preview`` counts the same without writing.
    """
    with transaction.atomic():
        agent = lock_for_update(AgentSnapshot, agent.pk)
        if agent.is_archived:
            return ArchiveResult()
        closed = {agent.lifecycle: 1} if agent.lifecycle != AgentSnapshot.Lifecycle.CLOSED else {}
        archive_agent_rows(AgentSnapshot.objects.filter(pk=agent.pk), uuid.uuid4(), timezone.now())
        notify_agents_changed([agent.agent_id], "archived")
    return ArchiveResult(agents=1, closed_agents=closed, changed=True)


def unarchive_agent(*, agent: AgentSnapshot) -> UnarchiveResult:
    with transaction.atomic():
        agent = lock_for_update(AgentSnapshot, agent.pk)
        if not agent.is_archived:
            return UnarchiveResult()
        # Locked, not just read, for the same reason as in unarchive_workspace.
        if lock_for_update(Workspace, agent.workspace_id).is_archived:
            raise ArchivedConflict(
                f"Agent {agent.agent_id} belongs to archived workspace {agent.workspace_id}; "
                "unarchive the workspace instead."
            )
        restored, _, reopened = restore_archived_agents(agent.archive_operation)
        notify_agents_changed([agent.agent_id], "unarchived")
    return UnarchiveResult(agents=restored, reopened_agents=reopened, changed=True)


def move_agent(*, agent: AgentSnapshot, workspace: Workspace, cwd: str = "") -> AgentSnapshot:
    """Put ``agent`` and the agents under it (its children, in its workspace) into ``workspace``,
    with ``cwd`` as the agent's own (at or below the workspace's directory; the children's cwds
    outside it are cleared). For an agent placed before its directory was known (a Claude Code
    session whose first lines carried no cwd). Moving it where it is changes nothing."""
    with transaction.atomic():
        agent = lock_for_update(AgentSnapshot, agent.pk)
        workspace = lock_for_update(Workspace, workspace.pk)
        cwd = _normalized_cwd(cwd)
        if agent.workspace_id == workspace.pk and agent.cwd == cwd:
            return agent
        agent.cwd = cwd
        _check_workspace_takes(workspace, agent)
        if agent.is_archived:
            raise ArchivedConflict(f"Agent {agent.agent_id} is archived; unarchive it before moving it.")
        children = AgentSnapshot.objects.filter(parent=agent, workspace_id=agent.workspace_id).exclude(
            workspace_id=workspace.pk
        )
        moved = list(children.values_list("pk", flat=True))
        outside = [c.pk for c in children.only("pk", "cwd") if c.cwd and not is_within(c.cwd, workspace.directory)]
        AgentSnapshot.objects.filter(pk__in=outside).update(cwd="")
        children.update(workspace=workspace, version=F("version") + 1, updated_at=timezone.now())
        agent.workspace = workspace
        agent.version += 1
        agent.save()
        notify_agents_changed([agent.agent_id, *moved], "updated")
    return agent


def delete_agent(*, agent: AgentSnapshot) -> None:
    AgentSnapshot.objects.filter(pk=agent.pk).delete()


#: Agents per DELETE of a purge (their timelines are gone by then: timeline purges first).
PURGE_BATCH_AGENTS = 500


def delete_archived_agents(*, archived_before: dt.datetime, batch_size: int = PURGE_BATCH_AGENTS) -> int:
    """Hard-delete every agent archived before ``archived_before``, in batches; how many.

    Whatever timeline rows are left go with them through the foreign key.
    """
    return delete_in_batches(AgentSnapshot.objects.filter(archived_at__lt=archived_before), batch_size=batch_size)
