"""An agent's parent link: children go with their parent, in the database itself."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from snapshots.models import AgentSnapshot
from snapshots.services import create_agent, delete_agent
from tests.factories import WorkspaceFactory

pytestmark = pytest.mark.django_db


def test_deleting_a_parent_deletes_its_children_and_their_children():
    workspace = WorkspaceFactory()
    session = create_agent(workspace=workspace, provider="claude", agent_id="session")
    sub = create_agent(workspace=workspace, provider="claude", agent_id="sub", parent=session)
    create_agent(workspace=workspace, provider="claude", agent_id="subsub", parent=sub)
    create_agent(workspace=workspace, provider="claude", agent_id="other")

    assert list(session.children.values_list("agent_id", flat=True)) == ["sub"]
    delete_agent(agent=session)

    assert list(AgentSnapshot.objects.values_list("agent_id", flat=True)) == ["other"]


def test_the_database_cascades_a_raw_delete_of_the_parent():
    workspace = WorkspaceFactory()
    session = create_agent(workspace=workspace, provider="claude", agent_id="session")
    create_agent(workspace=workspace, provider="claude", agent_id="sub", parent=session)

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM snapshots_agentsnapshot WHERE agent_id = %s", ["session"])

    assert not AgentSnapshot.objects.filter(agent_id="sub").exists()


def test_an_agent_cannot_be_its_own_parent():
    workspace = WorkspaceFactory()
    create_agent(workspace=workspace, provider="claude", agent_id="loop")

    with pytest.raises(IntegrityError), transaction.atomic():
        AgentSnapshot.objects.filter(agent_id="loop").update(parent_id="loop")
