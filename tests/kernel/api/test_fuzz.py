"""Schema-driven fuzzing: schemathesis generates requests from the app's own
OpenAPI document (valid and invalid ones, NUL bytes and odd unicode included)
and checks every response: no 5xx, documented status, body matching the
schema, and the error code the contract lists for that status.

Bounded and derandomized so CI is deterministic and takes well under a
minute; raise CHARTR_FUZZ_EXAMPLES locally for a deeper run.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from schemathesis.generation import GenerationMode

from chartr import config
from kernel.api.schema import error_codes
from tests.factories import AgentFactory, ProjectFactory, WorkspaceFactory
from tests.support.api import stream_path
from tokens.services import create_api_token

MAX_EXAMPLES = config.value("CHARTR_FUZZ_EXAMPLES")

pytestmark = pytest.mark.usefixtures("wsgi_keeps_test_connection")


def app_schema() -> dict:
    import json

    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


class InProcessWSGI(WSGIHandler):
    """The real WSGI app, minus the per-request connection cleanup that would
    close the test's transaction (Django's own test client does the same)."""


def fuzzable_schema() -> dict:
    """The app's schema minus the SSE stream: it streams only under ASGI (this
    in-process WSGI app answers 503 asgi_required) and never ends; the real-process
    tests in tests/process/ exercise it against a real server."""
    document = app_schema()
    del document["paths"][stream_path()]
    return document


schema = schemathesis.openapi.from_dict(fuzzable_schema())
schema.app = InProcessWSGI()
schema.config.generation.update(
    modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
    max_examples=MAX_EXAMPLES,
    deterministic=True,
    # The test sends a real token with every request; auth is checked by `ignored_auth` and test_auth.py.
    with_security_parameters=False,
)
# Every other built-in check stays on. This one expects any schema-valid request
# to succeed, but some rules are beyond what a schema can say: a cursor is
# opaque, an id must name a row, attention needs a reason, and this test sends
# NUL bytes, which are refused everywhere. Those requests get a 400 with the
# contract's envelope, checked below; tests/process/test_schemathesis.py runs
# this check too, against a real server, dropping only those refusals.
schema.config.checks.update(excluded_check_names=["positive_data_acceptance"])


@pytest.fixture
def seeded(db):
    """A few real rows so ids in the generated requests sometimes hit something."""
    for n in range(3):
        AgentFactory(agent_id=str(n), workspace=WorkspaceFactory(project=ProjectFactory()))
    return create_api_token(name="fuzz")[1]


def error_code_matches_contract(response, case) -> None:
    status = response.status_code
    if status < 400:
        return
    body = response.json()
    codes = error_codes().get(status, (("method_not_allowed",),) if status == 405 else ((),))[0]
    assert body["error"]["code"] in codes, f"{status} with code {body['error']['code']!r}"
    assert ("fields" in body["error"]) == (status == 400 and "fields" in body["error"])


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case, seeded):
    response = case.call_and_validate(headers={"Authorization": f"Bearer {seeded}"})
    assert response.status_code < 500
    error_code_matches_contract(response, case)
