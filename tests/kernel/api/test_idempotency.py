from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection

from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from tests.factories import ProjectFactory, WorkspaceFactory
from tests.support.api import assert_error, client_with
from tokens.models import IdempotentCreate
from tokens.services import create_api_token


def post(api, url, body, key):
    return api.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY=key)


@pytest.mark.django_db
def test_a_retried_create_returns_the_first_answer_and_creates_nothing(api):
    project = ProjectFactory()
    workspace = WorkspaceFactory()
    cases = [
        ("/api/v1/projects", {"directory": "/src/new", "kind": "git"}, Project),
        (
            "/api/v1/workspaces",
            {"project_id": project.pk, "directory": project.directory, "kind": "checkout"},
            Workspace,
        ),
        ("/api/v1/agents", {"workspace_id": workspace.pk, "provider": "claude"}, AgentSnapshot),
    ]
    for url, body, model in cases:
        before = model.objects.count()
        first = post(api, url, body, f"key-{url}")
        assert first.status_code == 201, first.content
        again = post(api, url, body, f"key-{url}")
        assert (again.status_code, again.json()) == (201, first.json())
        assert again["Location"] == first["Location"]
        assert model.objects.count() == before + 1
        # Without the key, or with a new one, it is another create (or its own refusal).
        assert post(api, url, body, f"other-{url}").status_code in (201, 409)


@pytest.mark.django_db
def test_an_agent_without_agent_id_is_created_once_per_key(api):
    workspace = WorkspaceFactory()
    first = post(api, "/api/v1/agents", {"workspace_id": workspace.pk, "provider": "claude"}, "k1")
    again = post(api, "/api/v1/agents", {"workspace_id": workspace.pk, "provider": "claude"}, "k1")
    assert again.json()["agent_id"] == first.json()["agent_id"] and again["ETag"] == first["ETag"]
    assert AgentSnapshot.objects.count() == 1


@pytest.mark.django_db
def test_the_same_key_with_another_request_is_422(api):
    first = post(api, "/api/v1/projects", {"directory": "/src/a", "kind": "git"}, "k1")
    assert first.status_code == 201
    assert_error(
        post(api, "/api/v1/projects", {"directory": "/src/b", "kind": "git"}, "k1"), 422, "idempotency_key_reused"
    )
    assert_error(
        post(api, "/api/v1/workspaces", {"directory": "/src/a", "kind": "git"}, "k1"), 422, "idempotency_key_reused"
    )
    assert list(Project.objects.values_list("directory", flat=True)) == ["/src/a"]
    # The same body with its keys in another order is the same request.
    body = {"display_name": "A", "directory": "/src/c", "kind": "git"}
    assert post(api, "/api/v1/projects", body, "k2").status_code == 201
    assert post(api, "/api/v1/projects", dict(reversed(body.items())), "k2").status_code == 201
    assert Project.objects.count() == 2


@pytest.mark.django_db
def test_keys_belong_to_their_token_and_a_refusal_is_not_remembered(api):
    other = client_with(create_api_token(name="other")[1])
    assert post(api, "/api/v1/projects", {"directory": "/src/a", "kind": "git"}, "k1").status_code == 201
    # Another token's key of the same name is its own: its create runs (and is refused here).
    assert_error(
        post(other, "/api/v1/projects", {"directory": "/src/a", "kind": "git"}, "k1"), 409, "duplicate_directory"
    )
    assert post(other, "/api/v1/projects", {"directory": "/src/b", "kind": "git"}, "k1").status_code == 201
    assert IdempotentCreate.objects.count() == 2


@pytest.mark.django_db
def test_an_expired_key_creates_again(api):
    assert post(api, "/api/v1/projects", {"directory": "/src/a", "kind": "git"}, "k1").status_code == 201
    IdempotentCreate.objects.update(created_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    assert post(api, "/api/v1/projects", {"directory": "/src/b", "kind": "git"}, "k1").status_code == 201
    assert Project.objects.count() == 2 and IdempotentCreate.objects.count() == 1


@pytest.mark.django_db
def test_a_new_key_deletes_the_tokens_expired_keys_and_no_others(api):
    other = client_with(create_api_token(name="other")[1])
    for n in range(3):
        assert post(api, "/api/v1/projects", {"directory": f"/src/old{n}", "kind": "git"}, f"old{n}").status_code == 201
    assert post(other, "/api/v1/projects", {"directory": "/src/theirs", "kind": "git"}, "old0").status_code == 201
    IdempotentCreate.objects.update(created_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    assert post(api, "/api/v1/projects", {"directory": "/src/recent", "kind": "git"}, "recent").status_code == 201
    remaining = sorted(IdempotentCreate.objects.values_list("token__name", "key"))
    assert remaining == [("other", "old0"), ("test client", "recent")]


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "a b", "é", "x" * 256])
def test_a_malformed_key_is_400(api, key):
    response = post(api, "/api/v1/projects", {"directory": "/src/a", "kind": "git"}, key)
    assert_error(response, 400, "invalid", fields=["Idempotency-Key"])
    assert not Project.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_two_racing_retries_create_one_record(token):
    workspace = WorkspaceFactory()
    start = threading.Barrier(2)
    answers = []

    def retry() -> None:
        try:
            client = client_with(token[1])
            start.wait()
            answers.append(post(client, "/api/v1/agents", {"workspace_id": workspace.pk, "provider": "claude"}, "race"))
        finally:
            connection.close()

    threads = [threading.Thread(target=retry) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [answer.status_code for answer in answers] == [201, 201], [a.content for a in answers]
    assert answers[0].json() == answers[1].json()
    assert AgentSnapshot.objects.count() == 1 and IdempotentCreate.objects.count() == 1
