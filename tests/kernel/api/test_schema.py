from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient

from kernel.api.plain_schema import plain_endpoints
from kernel.api.schema import error_codes
from tests.support.api import assert_error, stream_path

pytestmark = pytest.mark.django_db

OPERATIONS = {
    ("/api/v1/projects", "get"),
    ("/api/v1/projects", "post"),
    ("/api/v1/projects/{id}", "get"),
    ("/api/v1/projects/{id}", "patch"),
    ("/api/v1/projects/{id}/archive", "post"),
    ("/api/v1/projects/{id}/unarchive", "post"),
    ("/api/v1/workspaces", "get"),
    ("/api/v1/workspaces", "post"),
    ("/api/v1/workspaces/{id}", "get"),
    ("/api/v1/workspaces/{id}", "patch"),
    ("/api/v1/workspaces/{id}/archive", "post"),
    ("/api/v1/workspaces/{id}/unarchive", "post"),
    ("/api/v1/agents", "get"),
    ("/api/v1/agents", "post"),
    ("/api/v1/agents/{agent_id}", "get"),
    ("/api/v1/agents/{agent_id}", "patch"),
    ("/api/v1/agents/{agent_id}/archive", "post"),
    ("/api/v1/agents/{agent_id}/unarchive", "post"),
    ("/api/v1/agents/{agent_id}/timeline", "get"),
    ("/api/v1/agents/{agent_id}/timeline", "post"),
    ("/api/v1/agents/{agent_id}/timeline/provisional", "post"),
    ("/api/v1/agents/{agent_id}/timeline/stream", "get"),
    ("/api/v1/agents/{agent_id}/timeline/stream-tickets", "post"),
}


@pytest.fixture
def schema(api) -> dict:
    response = api.get("/api/v1/schema")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    return response.json()


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield path, method, operation


def test_schema_is_valid_openapi_3_and_covers_every_endpoint(schema):
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)
    assert {(path, method) for path, method, _ in operations(schema)} >= OPERATIONS
    scheme = schema["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")


def test_generation_has_no_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))


def test_every_operation_documents_its_errors_with_the_envelope(schema):
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    body = schema["components"]["schemas"]["ErrorBody"]
    assert set(body["properties"]) == {"code", "message", "fields"}
    assert sorted(body["required"]) == ["code", "message"]
    plain = {(path, op.method.lower()): op for path, _, ops in plain_endpoints() for op in ops}
    for path, method, operation in operations(schema):
        if path == stream_path():
            continue  # declared beside its view (timeline/live/openapi.py), checked in tests/timeline/api/test_api.py
        responses = operation["responses"]
        # 400 (an unknown query parameter) and 406 (a wrong Accept) everywhere; a write may be sent a body.
        expected = {400, 401, 406, 429, 500}
        if method != "get":
            expected |= {403, 409, 413, 415}
        if "{" in path:
            expected.add(404)
        if (path, method) in {("/api/v1/projects", "post"), ("/api/v1/workspaces", "post"), ("/api/v1/agents", "post")}:
            expected.add(422)  # Idempotency-Key
        plain_operation = plain.get((path, method))
        if plain_operation is not None:  # the plain views (kernel/api/plain.py): no If-Match, their own extras
            expected |= set(plain_operation.error_statuses)
        elif "/timeline" not in path and path != "/api/v1/search":
            expected.add(412)  # If-Match: evaluated (PATCH an agent) or refused, never ignored
        assert {int(s) for s in responses if s.startswith(("4", "5"))} == expected, (path, method)
        for status in expected:
            content = responses[str(status)]["content"]["application/json"]["schema"]
            assert content == {"$ref": "#/components/schemas/Error"}
            for code in error_codes()[status][0]:
                assert f"`{code}`" in responses[str(status)]["description"]
        assert operation["security"] == [{"bearerAuth": []}]


def test_lists_document_keyset_pages_and_filters(schema):
    params = {p["name"]: p for p in schema["paths"]["/api/v1/agents"]["get"]["parameters"]}
    assert {
        "cursor",
        "limit",
        "workspace_id",
        "project_id",
        "lifecycle",
        "requires_attention",
        "provider",
        "archived",
    } <= set(params)
    assert params["limit"]["schema"]["maximum"] == 500
    assert params["archived"]["schema"]["enum"] == ["all", "false", "true"]
    page = schema["paths"]["/api/v1/agents"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    component = schema["components"]["schemas"][page["$ref"].rsplit("/", 1)[1]]
    assert set(component["properties"]) == {"results", "next_cursor"}
    assert component["properties"]["next_cursor"]["type"] == ["string", "null"]
    project_params = {p["name"] for p in schema["paths"]["/api/v1/projects"]["get"]["parameters"]}
    assert {"archived", "kind", "directory", "search"} <= project_params


def test_request_bodies_refuse_unknown_fields_in_the_schema(schema):
    for name in ("ProjectCreateRequest", "PatchedAgentUpdateRequest", "WorkspaceCreateRequest"):
        assert schema["components"]["schemas"][name]["additionalProperties"] is False


def test_agent_etag_and_if_match_are_documented(schema):
    patch = schema["paths"]["/api/v1/agents/{agent_id}"]["patch"]
    assert any(p["name"] == "If-Match" and p["in"] == "header" for p in patch["parameters"])
    assert "ETag" in schema["paths"]["/api/v1/agents/{agent_id}"]["get"]["responses"]["200"]["headers"]


def test_schema_and_docs_need_a_token_or_a_staff_session(anon):
    for url in ("/api/v1/schema", "/api/v1/docs"):
        assert_error(anon.get(url), 401, "not_authenticated")

    User = get_user_model()
    staff = APIClient()
    staff.force_login(User.objects.create_user("operator", password="x", is_staff=True))
    assert staff.get("/api/v1/schema").status_code == 200
    assert staff.get("/api/v1/docs").status_code == 200
    # The session opens the docs, never the API itself.
    assert_error(staff.get("/api/v1/projects"), 401, "not_authenticated")

    visitor = APIClient()
    visitor.force_login(User.objects.create_user("visitor", password="x"))
    assert_error(visitor.get("/api/v1/docs"), 403, "permission_denied")


def test_yaml_on_request(api):
    response = api.get("/api/v1/schema?format=yaml")
    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3.")


def test_docs_page_serves_its_own_assets(api):
    response = api.get("/api/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert any(asset.endswith("swagger-ui-bundle.js") for asset in assets)
    # The start-up script is a URL of its own (no inline script: see SECURE_CSP), and it loads the schema.
    assert "/api/v1/docs?script=" in assets
    assert "<script>" not in html and "<style>" not in html
    script = api.get("/api/v1/docs?script=")
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "/api/v1/schema" in script.content.decode()
    for asset in (asset for asset in assets if asset != "/api/v1/docs?script="):
        assert asset.startswith("/static/"), f"{asset} is not served by the app"
        fetched = api.get(asset)
        assert fetched.status_code == 200, asset
        body = b"".join(fetched.streaming_content) if fetched.streaming else fetched.content
        assert len(body) > 100


@pytest.mark.parametrize(
    ("query", "accept", "content_type"),
    [
        ("", "application/json", "application/json"),
        ("?format=json", "application/json", "application/json"),
        ("?format=json", "", "application/vnd.oai.openapi+json"),
        ("", "application/vnd.oai.openapi+json", "application/vnd.oai.openapi+json"),
        ("", "*/*", "application/vnd.oai.openapi+json"),
    ],
)
def test_json_for_every_way_a_client_asks(api, query, accept, content_type):
    response = api.get("/api/v1/schema" + query, **({"HTTP_ACCEPT": accept} if accept else {}))
    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] == content_type
    assert response.json()["openapi"].startswith("3.")


@pytest.mark.parametrize(
    ("query", "accept"), [("?format=yaml", ""), ("", "application/yaml"), ("", "application/vnd.oai.openapi")]
)
def test_yaml_for_every_way_a_client_asks(api, query, accept):
    response = api.get("/api/v1/schema" + query, **({"HTTP_ACCEPT": accept} if accept else {}))
    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3.")


def test_a_media_type_it_cannot_render_is_refused_with_the_envelope(api):
    assert_error(api.get("/api/v1/schema", HTTP_ACCEPT="text/html"), 406, "not_acceptable")


def test_docs_api_md_lists_every_error_code():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[3] / "docs" / "api.md").read_text()
    codes = {code for codes, _ in error_codes().values() for code in codes}
    codes |= {"method_not_allowed", "not_acceptable", "busy", "maintenance", "shutting_down", "asgi_required"}
    codes |= {"database_unavailable"}
    missing = sorted(code for code in codes if f"`{code}`" not in doc)
    assert not missing, f"docs/api.md does not list {missing}"
