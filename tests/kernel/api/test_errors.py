"""The error contract: every code, and no client input ever producing a 500."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from registry.models import Project
from snapshots.models import AgentSnapshot
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.kernel.api.boom_urls import SECRET
from tests.support.api import assert_error

pytestmark = pytest.mark.django_db


def post_raw(client, url: str, body: bytes | str, content_type: str = "application/json", **extra):
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    return client.generic("POST", url, body, content_type=content_type, **extra)


@pytest.mark.parametrize(
    "body",
    [
        b"{",
        b"",
        b"null",
        b"[]",
        b'"just a string"',
        b"{'single': 'quotes'}",
        b'{"directory": "/a", "kind": "git",}',
        b"\xff\xfe{}",
        b'{"directory": NaN, "kind": "git"}',
        b'{"directory": Infinity, "kind": "git"}',
        b'{"directory": 1e999, "kind": "git"}',
        b'{"directory": "/a", "kind": "git", "display_name": ' + b"9" * 5000 + b"}",
        b"[" * 100000 + b"]" * 100000,
        b'{"a":' * 70 + b"1" + b"}" * 70,
    ],
)
def test_malformed_bodies_are_400(api, body):
    assert_error(post_raw(api, "/api/v1/projects", body), 400, "invalid")
    assert Project.objects.count() == 0


@pytest.mark.parametrize(
    "body, field",
    [
        ('{"directory": "/a\\u0000b", "kind": "git"}', "directory"),
        ('{"directory": "/a", "kind": "git", "display_name": "x\\u0000"}', "display_name"),
        ('{"directory": "/a", "kind": "git", "display_name": "\\ud800"}', "display_name"),
        ('{"directory": "/a", "kind": "git", "display_name": "\\udfff\\ud800"}', "display_name"),
        ('{"directory": "/a", "kind": "git", "\\u0000": 1}', "non_field_errors"),
        ('{"directory": "/a", "kind": "git", "\\ud83d": 1}', "non_field_errors"),
    ],
)
def test_text_no_database_can_store_is_400_naming_the_field(api, body, field):
    assert_error(post_raw(api, "/api/v1/projects", body), 400, "invalid", fields=[field])
    assert Project.objects.count() == 0


@pytest.mark.parametrize(
    "config, field",
    [
        ('{"k": "v\\u0000"}', "config.k"),
        ('{"k\\u0000": "v"}', "config"),
        ('{"k": ["ok", {"deep": "\\ud800"}]}', "config.k[1].deep"),
    ],
)
def test_nul_and_surrogates_inside_json_fields_are_400(api, config, field):
    workspace = WorkspaceFactory()
    body = f'{{"workspace_id": {workspace.pk}, "provider": "claude", "config": {config}}}'
    assert_error(post_raw(api, "/api/v1/agents", body), 400, "invalid", fields=[field])
    assert AgentSnapshot.objects.count() == 0


def test_odd_unicode_round_trips(api):
    name = "Ünïcödé ✓ 🚀 عربى 𝔘 e\u0301 \u200b\ufeff"
    response = api.post(
        "/api/v1/projects", {"directory": "/srv/🚀/ü", "kind": "git", "display_name": name}, format="json"
    )
    assert response.status_code == 201, response.content
    fetched = api.get(f"/api/v1/projects/{response.json()['id']}").json()
    assert (fetched["display_name"], fetched["directory"]) == (name, "/srv/🚀/ü")
    assert [r["id"] for r in api.get("/api/v1/projects?search=🚀").json()["results"]] == [fetched["id"]]


def test_huge_numbers(api):
    workspace = WorkspaceFactory()
    for value in (2**63, 2**64, -(2**63) - 1, 10**300):
        response = api.post("/api/v1/agents", {"workspace_id": value, "provider": "p"}, format="json")
        assert_error(response, 400, "invalid", fields=["workspace_id"])
    big = {"int": 10**40, "neg": -(10**40), "float": 1.7976931348623157e308, "tiny": 5e-324}
    response = api.post("/api/v1/agents", {"workspace_id": workspace.pk, "provider": "p", "config": big}, format="json")
    assert response.status_code == 201, response.content
    stored = api.get(f"/api/v1/agents/{response.json()['agent_id']}").json()["config"]
    assert (stored["int"], stored["neg"]) == (big["int"], big["neg"])
    # PostgreSQL's jsonb keeps numbers as decimals and prints 1.79e308 in full: the value survives, not the notation.
    assert float(stored["float"]) == pytest.approx(big["float"]) and float(stored["tiny"]) == big["tiny"]
    assert_error(api.get(f"/api/v1/agents?workspace_id={10**40}"), 400, "invalid", fields=["workspace_id"])
    assert_error(api.get(f"/api/v1/workspaces/{10**40}"), 404, "not_found")
    assert_error(api.post(f"/api/v1/workspaces/{2**63}/archive"), 404, "not_found")


@pytest.mark.parametrize(
    "value",
    [5, 1.5, True, None, [], {}, "x" * 5000],
)
def test_wrong_types_are_400(api, value):
    AgentFactory(agent_id="a1")
    for field in ("provider", "title", "lifecycle", "requires_attention", "labels", "attention_at"):
        response = api.patch("/api/v1/agents/a1", {field: value}, format="json")
        if response.status_code == 200:
            # Only the values that are legal for the field get here (null clears title, {} labels...).
            # Attention without a reason is legal (as in Paseo).
            legal = [
                ("title", None),
                ("labels", None),
                ("labels", {}),
                ("attention_at", None),
                ("requires_attention", True),
            ]
            assert (field, value) in legal
        else:
            assert_error(response, 400, "invalid")


def test_query_parameters_with_nul_or_odd_bytes_never_500(api):
    ProjectFactory()
    for query in ("search=%00", "search=%ED%A0%80", "search=%FF", "directory=%ED%A0%80", "kind=%00", "cursor=%FF"):
        response = api.get(f"/api/v1/projects?{query}")
        assert response.status_code in (200, 400), (query, response.status_code)
        if response.status_code == 400:
            assert_error(response, 400, "invalid")


def test_body_over_the_limit_is_413(api, settings):
    settings.CHARTR_MAX_BODY_BYTES = 200
    body = json.dumps({"directory": "/a", "kind": "git", "display_name": "x" * 300})
    assert_error(post_raw(api, "/api/v1/projects", body), 413, "payload_too_large")
    ok = json.dumps({"directory": "/a", "kind": "git", "display_name": "x" * 100})
    assert post_raw(api, "/api/v1/projects", ok).status_code == 201


def test_default_limit_is_one_mebibyte(api):
    padding = "x" * (1024 * 1024)
    body = json.dumps({"directory": "/a", "kind": "git", "display_name": padding})
    assert_error(post_raw(api, "/api/v1/projects", body), 413, "payload_too_large")
    assert Project.objects.count() == 0


def test_declared_length_over_the_limit_is_413_without_reading(api, settings):
    settings.CHARTR_MAX_BODY_BYTES = 100
    response = post_raw(api, "/api/v1/projects", b"{}", CONTENT_LENGTH="999999999")
    assert_error(response, 413, "payload_too_large")


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", ""],
)
def test_non_json_body_is_415(api, content_type):
    response = post_raw(api, "/api/v1/projects", b"directory=/a&kind=git", content_type=content_type)
    assert_error(response, 415, "unsupported_media_type")
    assert Project.objects.count() == 0


def test_json_with_charset_is_accepted(api):
    body = json.dumps({"directory": "/a", "kind": "git"})
    assert post_raw(api, "/api/v1/projects", body, content_type="application/json; charset=utf-8").status_code == 201


def test_throttled_is_429_with_retry_after(api, settings):
    cache.clear()
    settings.CHARTR_API_THROTTLE_RATE = "3/m"
    for _ in range(3):
        assert api.get("/api/v1/projects").status_code == 200
    response = api.get("/api/v1/projects")
    assert_error(response, 429, "throttled")
    assert 1 <= int(response["Retry-After"]) <= 60
    settings.CHARTR_API_THROTTLE_RATE = ""
    assert api.get("/api/v1/projects").status_code == 200
    cache.clear()


def test_unknown_address_under_api_is_json_404(api):
    for url in ("/api/v1/nothing-here", "/api/v1/projects/", "/api/v2/projects", "/api/", "/api/v1/agents/a/b/c"):
        assert_error(api.get(url), 404, "not_found")


def test_unsupported_method_is_405(api):
    project = ProjectFactory()
    for method in ("put", "delete"):
        response = getattr(api, method)(f"/api/v1/projects/{project.pk}", {}, format="json")
        assert_error(response, 405, "method_not_allowed")
        assert "PATCH" in response["Allow"]


@pytest.mark.urls("tests.kernel.api.boom_urls")
@pytest.mark.parametrize("debug", [False, True])
def test_unexpected_failure_is_500_server_error_without_internals(api, settings, debug, caplog):
    settings.DEBUG = debug
    response = api.get("/api/v1/test-boom")
    error = assert_error(response, 500, "server_error")
    assert set(error) == {"code", "message"}
    assert SECRET.encode() not in response.content
    assert any(SECRET in (record.exc_text or "") or record.exc_info for record in caplog.records)


@pytest.mark.urls("tests.kernel.api.boom_urls")
def test_failure_outside_drf_under_api_is_json_500(api, settings):
    settings.DEBUG = False
    api.raise_request_exception = False
    response = api.get("/api/v1/test-django-boom")
    assert_error(response, 500, "server_error")
    assert SECRET.encode() not in response.content


def test_unknown_query_parameters_are_400(api):
    project = ProjectFactory()
    assert_error(api.get("/api/v1/projects?archvied=true"), 400, "invalid", fields=["archvied"])
    assert_error(api.get(f"/api/v1/projects/{project.pk}?x=1"), 400, "invalid", fields=["x"])
    assert_error(api.post(f"/api/v1/projects/{project.pk}/archive?force=1"), 400, "invalid", fields=["force"])
    assert api.get("/api/v1/projects?archived=&kind=&limit=&cursor=").status_code == 200
