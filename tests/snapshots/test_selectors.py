import pytest

from kernel.errors import NotFound
from registry.selectors import ArchivePreview, UnarchivePreview
from registry.services import archive_workspace
from snapshots import selectors
from snapshots.services import archive_agent
from tests.factories import AgentFactory, WorkspaceFactory

pytestmark = pytest.mark.django_db


def test_agent_for_api_carries_the_project_id_and_refuses_impossible_ids():
    agent = AgentFactory()
    assert selectors.agent_for_api(agent_id=agent.agent_id).api_project_id == agent.workspace.project_id
    for missing in ("nobody", "bad\x00id", "x" * 129):
        with pytest.raises(NotFound):
            selectors.agent_for_api(agent_id=missing)


def test_archive_preview_counts_the_agent_and_the_lifecycle_it_closes():
    running = AgentFactory(lifecycle="running")
    idle = AgentFactory(lifecycle="idle")
    closed = AgentFactory(lifecycle="closed")
    assert selectors.agent_archive_preview(agent=running) == ArchivePreview(agents=1, closed_agents={"running": 1})
    assert selectors.agent_archive_preview(agent=idle) == ArchivePreview(agents=1, closed_agents={"idle": 1})
    assert selectors.agent_archive_preview(agent=closed) == ArchivePreview(agents=1)
    archive_agent(agent=idle)
    idle.refresh_from_db()
    assert selectors.agent_archive_preview(agent=idle) == ArchivePreview()


def test_unarchive_preview_counts_the_agents_of_its_archive_operation():
    workspace = WorkspaceFactory()
    first = AgentFactory(workspace=workspace)
    AgentFactory(workspace=workspace)
    assert selectors.agent_unarchive_preview(agent=first) == UnarchivePreview()
    archive_workspace(workspace=workspace)
    first.refresh_from_db()
    # The workspace's operation took both; unarchiving either is refused while the workspace is archived.
    assert selectors.agent_unarchive_preview(agent=first) == UnarchivePreview(
        agents=2, reopened_agents={"idle": 2}, blocked_by=str(workspace)
    )
    solo = AgentFactory()
    archive_agent(agent=solo)
    solo.refresh_from_db()
    assert selectors.agent_unarchive_preview(agent=solo) == UnarchivePreview(agents=1, reopened_agents={"idle": 1})
