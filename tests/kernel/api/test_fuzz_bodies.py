"""Hypothesis thrown at every writable field: any JSON value at all, including
NUL, lone surrogates, huge integers and deep nesting, gets a success or a 4xx
in the contract's envelope, never a 5xx. Complements the schema-driven fuzz,
whose schema-shaped values rarely get past validation to the database.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel.api.schema import error_codes
from tests.factories import AgentFactory, WorkspaceFactory

# Every code point, including NUL and the lone surrogates no UTF-8 encoder accepts.
any_text = st.text(st.characters(exclude_categories=()), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | any_text
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(any_text, children, max_size=3),
    max_leaves=10,
)

FUZZ = settings(
    max_examples=120, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)

AGENT_CREATE_FIELDS = [
    "agent_id",
    "provider",
    "title",
    "labels",
    "lifecycle",
    "config",
    "runtime_info",
    "persistence",
    "internal",
    "workspace_id",
]
AGENT_PATCH_FIELDS = [
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
]
PROJECT_FIELDS = ["directory", "kind", "display_name", "git_remote"]


def send(client, method: str, url: str, body: dict, **extra):
    # ensure_ascii keeps lone surrogates as \\udxxx escapes, the way a hostile client would send them.
    raw = json.dumps(body, ensure_ascii=True).encode("ascii")
    response = client.generic(method, url, raw, content_type="application/json", **extra)
    assert response.status_code < 500, (response.status_code, body)
    if response.status_code >= 400:
        error = response.json()["error"]
        assert error["code"] in error_codes()[response.status_code][0], error
    return response


@pytest.fixture
def agent_setup(db):
    return WorkspaceFactory(), AgentFactory(agent_id="target")


@pytest.mark.django_db
@FUZZ
@given(field=st.sampled_from(AGENT_CREATE_FIELDS), value=json_values)
def test_agent_create_any_value(api, agent_setup, field, value):
    workspace, _ = agent_setup
    body = {"workspace_id": workspace.pk, "provider": "p", field: value}
    assert send(api, "POST", "/api/v1/agents", body).status_code in (201, 400, 409)


@pytest.mark.django_db
@FUZZ
@given(field=st.sampled_from(AGENT_PATCH_FIELDS), value=json_values, if_match=st.none() | any_text)
def test_agent_patch_any_value(api, agent_setup, field, value, if_match):
    extra = {}
    if if_match is not None and all(ord(c) < 256 for c in if_match):
        extra["HTTP_IF_MATCH"] = if_match
    assert send(api, "PATCH", "/api/v1/agents/target", {field: value}, **extra).status_code in (200, 400, 412)


@pytest.mark.django_db
@FUZZ
@given(values=st.fixed_dictionaries({}, optional=dict.fromkeys(PROJECT_FIELDS, json_values | any_text)))
def test_project_create_any_value(api, values):
    assert send(api, "POST", "/api/v1/projects", values).status_code in (201, 400, 409)


@pytest.mark.django_db
@FUZZ
@given(
    query=st.dictionaries(
        st.sampled_from(
            [
                "archived",
                "kind",
                "directory",
                "search",
                "cursor",
                "limit",
                "workspace_id",
                "project_id",
                "lifecycle",
                "requires_attention",
                "provider",
            ]
        ),
        any_text,
        max_size=4,
    )
)
def test_list_filters_any_value(api, agent_setup, query):
    from urllib.parse import quote

    encoded = "&".join(f"{k}={quote(v.encode('utf-8', 'surrogatepass'))}" for k, v in query.items())
    for url in ("/api/v1/projects", "/api/v1/workspaces", "/api/v1/agents"):
        response = api.get(f"{url}?{encoded}")
        assert response.status_code in (200, 400), (url, query, response.status_code)
