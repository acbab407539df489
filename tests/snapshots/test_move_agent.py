"""``move_agent``: an agent placed before its directory was known goes to its workspace, its children with it."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from kernel.errors import ArchivedConflict
from registry.services import workspace_for_directory
from snapshots.models import AgentSnapshot
from snapshots.services import archive_agent, create_agent, move_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def placed():
    holding = workspace_for_directory("/claude-code-sessions/default")
    session = create_agent(workspace=holding, provider="claude-code", agent_id="session")
    create_agent(
        workspace=holding, provider="claude-code", agent_id="sub", parent=session, cwd="/claude-code-sessions/default"
    )
    return session, workspace_for_directory("/srv/app")


def test_the_agent_and_its_children_move_and_a_repeat_changes_nothing(placed):
    session, target = placed
    moved = move_agent(agent=session, workspace=target, cwd="/srv/app/src")
    sub = AgentSnapshot.objects.get(pk="sub")
    assert (moved.workspace_id, moved.cwd, moved.version) == (target.pk, "/srv/app/src", 2)
    assert (sub.workspace_id, sub.cwd, sub.version) == (target.pk, "", 2)  # its cwd was outside the new workspace
    again = move_agent(agent=moved, workspace=target, cwd="/srv/app/src")
    assert again.version == 2


def test_a_cwd_outside_the_workspace_and_an_archived_agent_are_refused(placed):
    session, target = placed
    with pytest.raises(ValidationError):
        move_agent(agent=session, workspace=target, cwd="/elsewhere")
    archive_agent(agent=session)
    with pytest.raises(ArchivedConflict):
        move_agent(agent=session, workspace=target, cwd="/srv/app")
    assert AgentSnapshot.objects.get(pk="session").workspace.directory == "/claude-code-sessions/default"
