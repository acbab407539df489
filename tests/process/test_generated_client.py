"""A client generated from the live /api/v1/schema by openapi-python-client does a full round trip.

What a client team does: generate, import, call. After generation the test
speaks to the server only through the generated client (no hand-written
HTTP), so anything the schema gets wrong (a missing field, an untyped item,
a shape the server does not send) fails here.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.process.live_support import ServerProcess

pytestmark = [pytest.mark.process, pytest.mark.timeout(240)]

PACKAGE = "chartr_generated_client"


@pytest.fixture
def server(tmp_path, scratch_db):
    database = scratch_db(migrated=True)
    server = ServerProcess(tmp_path, database=database)
    token = server.setup([])["token"]
    server.start()
    yield server, token
    server.stop()


def generate_client(schema_url_response: bytes, target: Path):
    schema = target / "schema.json"
    schema.write_bytes(schema_url_response)
    # The generator's default clean-up, with the ruff installed next to this interpreter (a dev dependency).
    ruff = Path(sys.executable).parent / "ruff"
    config = target / "generator.json"
    config.write_text(json.dumps({"post_hooks": [f"{ruff} check . --fix-only --extend-select=I", f"{ruff} format ."]}))
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "openapi-python-client"),
            "generate",
            "--config",
            str(config),
            "--path",
            str(schema),
            "--meta",
            "none",
            "--output-path",
            str(target / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # The generator warns (and leaves pieces out) for any schema it cannot turn into code.
    assert "Warning" not in result.stdout, result.stdout
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()


@pytest.fixture
def client_modules(server, tmp_path):
    live, token = server
    response = live.get("/api/v1/schema", headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    assert response.status_code == 200
    generate_client(response.content, tmp_path)
    yield importlib.import_module(PACKAGE)
    sys.path.remove(str(tmp_path))
    for name in [name for name in sys.modules if name == PACKAGE or name.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def test_generated_client_round_trip(server, client_modules):
    live, token = server
    models = importlib.import_module(f"{PACKAGE}.models")

    def op(path: str):
        """One generated operation module, e.g. ``op("agents.agents_create").sync(...)``."""
        return importlib.import_module(f"{PACKAGE}.api.{path}")

    client = client_modules.AuthenticatedClient(base_url=live.base_url, token=token, raise_on_unexpected_status=True)
    with client:
        project = op("projects.projects_create").sync(
            client=client,
            body=models.ProjectCreateRequest(directory="/srv/generated/app", kind=models.ProjectKindEnum.GIT),
        )
        assert isinstance(project, models.Project), project
        workspace = op("workspaces.workspaces_create").sync(
            client=client,
            body=models.WorkspaceCreateRequest(
                project_id=project.id, directory="/srv/generated/app/main", kind=models.WorkspaceKindEnum.CHECKOUT
            ),
        )
        assert isinstance(workspace, models.Workspace), workspace
        agent = op("agents.agents_create").sync(
            client=client, body=models.AgentCreateRequest(workspace_id=workspace.id, provider="claude")
        )
        assert isinstance(agent, models.Agent), agent

        appended = op("timeline.timeline_append").sync(
            agent.agent_id,
            client=client,
            body=models.AppendRequestRequest(
                items=[
                    models.NewItemRequest(
                        item=models.UserMessageItem(type_="user_message", text="Run the tests"), item_id="msg-1"
                    ),
                    models.NewItemRequest(
                        item=models.ToolCallItem(
                            type_="tool_call",
                            call_id="call-1",
                            name="shell",
                            status=models.ToolCallItemStatus.COMPLETED,
                        ),
                        item_id="call-1",
                    ),
                ]
            ),
        )
        assert isinstance(appended, models.AppendResponse), appended
        assert [row.seq for row in appended.rows] == [1, 2] and appended.head_seq == 2

        read = op("timeline.timeline_read")
        tail = read.sync(agent.agent_id, client=client)
        assert isinstance(tail, models.TimelinePage), tail
        assert [row.seq for row in tail.rows] == [1, 2]
        message, call = (row.item for row in tail.rows)
        assert isinstance(message, models.UserMessageItem) and message.text == "Run the tests"
        assert isinstance(call, models.ToolCallItem) and call.status == models.ToolCallItemStatus.COMPLETED
        assert call.call_id == "call-1" and tail.rows[1].item_id == "call-1"

        before = read.sync(agent.agent_id, client=client, direction=models.TimelineReadDirection.BEFORE, seq=2)
        assert [row.seq for row in before.rows] == [1] and before.has_newer
        after = read.sync(agent.agent_id, client=client, direction=models.TimelineReadDirection.AFTER, seq=1)
        assert [row.seq for row in after.rows] == [2] and after.has_older
        assert isinstance(after.rows[0], models.CanonicalRow)

        archived = op("agents.agents_archive_create").sync(agent.agent_id, client=client)
        assert archived.agent.archived_at is not None
        restored = op("agents.agents_unarchive_create").sync(agent.agent_id, client=client)
        assert restored.agent.archived_at is None
        project_archive = op("projects.projects_archive_create").sync(project.id, client=client)
        assert project_archive.project.archived_at is not None
        assert op("agents.agents_retrieve").sync(agent.agent_id, client=client).archived_at is not None
        op("projects.projects_unarchive_create").sync(project.id, client=client)
        assert op("agents.agents_retrieve").sync(agent.agent_id, client=client).archived_at is None
