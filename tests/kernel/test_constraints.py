"""Each bad value is refused by the database itself, bypassing every Python check."""

from __future__ import annotations

import pytest
from django.db import DataError, IntegrityError, connection, transaction
from django.utils import timezone

from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from timeline.models import TimelineRow

pytestmark = pytest.mark.django_db

# PostgreSQL reports an over-long varchar as DataError; both are the database saying no.
REFUSED = (IntegrityError, DataError)


def assert_db_refuses(queryset, **values):
    # queryset.update() issues a bare UPDATE: no model validation runs.
    with pytest.raises(REFUSED), transaction.atomic():
        queryset.update(**values)


@pytest.mark.parametrize(
    "directory",
    ["relative", "/trailing/", "/double//slash", "/a/./b", "/a/../b", "/a/..", "/a/.", "/" + "x" * 4096],
)
def test_directory_shape_is_enforced_for_projects_and_workspaces(directory):
    workspace = WorkspaceFactory()
    assert_db_refuses(Project.objects.filter(pk=workspace.project_id), directory=directory)
    assert_db_refuses(Workspace.objects.filter(pk=workspace.pk), directory=directory)


def test_root_directory_is_allowed():
    project = ProjectFactory()
    Project.objects.filter(pk=project.pk).update(directory="/")
    assert Project.objects.get(pk=project.pk).directory == "/"


def test_directories_are_unique():
    first, second = ProjectFactory(), ProjectFactory()
    assert_db_refuses(Project.objects.filter(pk=second.pk), directory=first.directory)
    w1, w2 = WorkspaceFactory(), WorkspaceFactory()
    assert_db_refuses(Workspace.objects.filter(pk=w2.pk), directory=w1.directory)


def test_enums_are_enforced():
    agent = AgentFactory()
    assert_db_refuses(Project.objects.all(), kind="svn")
    assert_db_refuses(Workspace.objects.all(), kind="clone")
    assert_db_refuses(AgentSnapshot.objects.all(), lifecycle="sleeping")
    assert_db_refuses(AgentSnapshot.objects.filter(pk=agent.pk), requires_attention=True, attention_reason="bored")


def test_attention_reason_only_with_attention():
    agent = AgentFactory()
    qs = AgentSnapshot.objects.filter(pk=agent.pk)
    assert_db_refuses(qs, requires_attention=False, attention_reason="finished")
    qs.update(requires_attention=True, attention_reason="finished")  # the coherent pair is fine
    qs.update(requires_attention=True, attention_reason=None)  # attention without a reason, as Paseo allows


def test_agent_id_shape_is_enforced():
    workspace = WorkspaceFactory()
    for bad in ["", "has space", "x" * 129, "a/b", "newline\n", "é", "a*", "[x]", "^", "a\\b", "a\x00"]:
        with pytest.raises(REFUSED), transaction.atomic():
            AgentSnapshot.objects.bulk_create([AgentSnapshot(agent_id=bad, workspace=workspace, provider="p")])
    good = ["Az09._:-", "x" * 128, "-", "z"]
    AgentSnapshot.objects.bulk_create([AgentSnapshot(agent_id=ok, workspace=workspace, provider="p") for ok in good])
    assert set(AgentSnapshot.objects.values_list("agent_id", flat=True)) == set(good)


def test_archived_record_must_carry_its_operation():
    agent = AgentFactory()
    assert_db_refuses(AgentSnapshot.objects.filter(pk=agent.pk), archived_at=timezone.now())
    assert_db_refuses(Workspace.objects.all(), archived_at=timezone.now())
    assert_db_refuses(Project.objects.all(), archived_at=timezone.now())


def test_agent_needs_an_existing_workspace():
    # Django's foreign keys are DEFERRABLE INITIALLY DEFERRED: the database
    # checks them at commit, which check_constraints() forces here.
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentSnapshot.objects.bulk_create([AgentSnapshot(agent_id="orphan", workspace_id=987654, provider="p")])
        connection.check_constraints()


def test_timeline_seq_is_positive_and_unique_per_agent_and_item_id_unique_when_set():
    agent = AgentFactory()
    now = timezone.now()

    def row(seq, item_id=None):
        return TimelineRow(agent=agent, seq=seq, committed_at=now, item_type="x", item={"type": "x"}, item_id=item_id)

    TimelineRow.objects.bulk_create([row(1, "k1"), row(2), row(3)])
    for bad in ([row(0)], [row(1)], [row(4, "k1")]):
        with pytest.raises(IntegrityError), transaction.atomic():
            TimelineRow.objects.bulk_create(bad)
    assert TimelineRow.objects.count() == 3


@pytest.mark.parametrize("table,column", [("registry_project", "id"), ("registry_workspace", "id")])
def test_a_delete_outside_the_orm_cascades_in_the_database(table, column):
    """The database itself holds the FK cascades: raw SQL deletes leave no orphans."""
    agent = AgentFactory()
    TimelineRow.objects.create(agent=agent, seq=1, committed_at=timezone.now(), item_type="x", item={"type": "x"})
    target = agent.workspace.project_id if table == "registry_project" else agent.workspace_id
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE {column} = %s", [target])
    connection.check_constraints()
    assert not AgentSnapshot.objects.exists()
    assert not TimelineRow.objects.exists()
    assert Project.objects.exists() == (table == "registry_workspace")
