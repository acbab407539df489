"""Factories that go through the real services, so test data obeys the same rules."""

from __future__ import annotations

import factory

from registry.models import Project, Workspace
from registry.services import create_project, create_workspace
from snapshots.models import AgentSnapshot
from snapshots.services import create_agent
from timeline.services import CarriedHead, carry_over_heads


class ServiceFactory(factory.Factory):
    """Builds through a service function instead of ``Model.objects.create``."""

    class Meta:
        abstract = True

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return cls._service()(**kwargs)


class ProjectFactory(ServiceFactory):
    class Meta:
        model = Project

    @staticmethod
    def _service():
        return create_project

    directory = factory.Sequence(lambda n: f"/srv/code/project-{n}")
    kind = Project.Kind.GIT


class WorkspaceFactory(ServiceFactory):
    class Meta:
        model = Workspace

    @staticmethod
    def _service():
        return create_workspace

    project = factory.SubFactory(ProjectFactory)
    directory = factory.Sequence(lambda n: f"/srv/code/workspaces/ws-{n}")
    kind = Workspace.Kind.CHECKOUT


class AgentFactory(ServiceFactory):
    """An agent made by ``create_agent``; ``last_activity_at``/``last_user_message_at`` go to its
    timeline head through ``timeline.services.carry_over_heads``, as the importer's do."""

    class Meta:
        model = AgentSnapshot

    @staticmethod
    def _service():
        return create_agent

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        activity = {name: kwargs.pop(name, None) for name in ("last_activity_at", "last_user_message_at")}
        agent = create_agent(**kwargs)
        if any(activity.values()):
            carry_over_heads([CarriedHead(agent.agent_id, **activity)])
        return agent

    workspace = factory.SubFactory(WorkspaceFactory)
    agent_id = factory.Sequence(lambda n: f"agent-{n}")
    provider = "claude"
    lifecycle = AgentSnapshot.Lifecycle.IDLE
