"""Schemathesis 4 (`st run --checks all`) against a real server: gunicorn with the uvicorn worker,
as deployed, on this run's database (SQLite, or PostgreSQL in CI's PostgreSQL pass).

Every phase runs (examples, coverage, fuzzing, stateful) with a fixed seed and a
bounded number of examples per operation, so a run is repeatable and fits CI.
The stream is included: its events are checked against their documented schemas.
Only the refusals no schema can state are dropped, by the hook in
schemathesis_hooks.py; tests/process/schemathesis.toml holds the rest of the
configuration. On failure the test prints Schemathesis' report, which gives a
`curl` command reproducing each failure.

Locally: CHARTR_SCHEMATHESIS_EXAMPLES=50 for a deeper run, CHARTR_SCHEMATHESIS_SEED to explore.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import schemathesis
from schemathesis.core.failures import FailureGroup
from schemathesis.core.transport import Response

from chartr import config
from tests.process.live_support import ServerProcess

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
EXAMPLES = config.value("CHARTR_SCHEMATHESIS_EXAMPLES")
SEED = config.value("CHARTR_SCHEMATHESIS_SEED")
#: A guard, not the budget: `st run` stops when the examples are spent (~1.5-3 min on a busy 2-core machine).
RUN_TIMEOUT = 420

pytestmark = [pytest.mark.process, pytest.mark.timeout(RUN_TIMEOUT + 120)]


@pytest.fixture
def server(tmp_path, scratch_db):
    database = scratch_db(migrated=True)
    # No throttling and a short keep-alive: the stream's first events come at once.
    server = ServerProcess(tmp_path, database=database, env={"CHARTR_LOG_LEVEL": "ERROR"})
    token = server.setup(["fuzz-0", "fuzz-1"])["token"]
    server.start()
    yield server, token
    server.stop()


def st_run(base_url: str, token: str, report_dir: Path) -> subprocess.CompletedProcess:
    report_dir.mkdir(parents=True, exist_ok=True)
    command = [
        str(Path(sys.executable).parent / "st"),
        "--config-file",
        str(HERE / "schemathesis.toml"),
        "run",
        f"{base_url}/api/v1/schema",
        "--header",
        f"Authorization: Bearer {token}",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--seed",
        str(SEED),
        "--max-examples",
        str(EXAMPLES),
        "--generation-database",
        "none",
        "--request-timeout",
        "5",
        "--workers",
        "1",
        "--no-color",
        "--report",
        "junit",
        "--report-dir",
        str(report_dir),
    ]
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.process.schemathesis_hooks",
        "PYTHONPATH": str(REPO),
    }
    # Run from the report dir: st keeps its cache (.schemathesis/) in the working directory.
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=report_dir, timeout=RUN_TIMEOUT)


def test_schemathesis_finds_nothing_against_the_live_server(server, tmp_path):
    live, token = server
    result = st_run(live.base_url, token, tmp_path / "schemathesis-report")
    report = result.stdout + result.stderr
    # Printed on success too: the summary (operations, phases, cases, time) is the run's record.
    print(report[-3000:])
    assert result.returncode == 0, f"Schemathesis failed; each failure has a curl to reproduce it:\n{report}"
    assert "Failures:" not in report


def test_the_stream_events_match_their_documented_schemas(server):
    """The fuzzing above mostly meets unknown agents (404); this reads a real stream with rows,
    a provisional update and the opening snapshot, and validates each event as Schemathesis does."""
    live, token = server
    auth = {"Authorization": f"Bearer {token}"}
    items = [
        {"item": {"type": "user_message", "text": "hi"}, "item_id": "m1"},
        {"item": {"type": "tool_call", "callId": "c1", "name": "shell", "status": "running"}},
        {"item": {"type": "a_kind_from_the_future", "payload": [1, 2]}},
    ]
    assert (
        httpx.post(live.url("/api/v1/agents/fuzz-0/timeline"), json={"items": items}, headers=auth).status_code == 201
    )
    schema = schemathesis.openapi.from_url(live.url("/api/v1/schema"), headers=auth)
    operation = schema["/api/v1/agents/{agent_id}/timeline/stream"]["GET"]
    case = operation.Case(path_parameters={"agent_id": "fuzz-0"}, query={"after_seq": 0})
    response = case.call(headers=auth, timeout=3)
    events = [line for line in response.text.splitlines() if line.startswith("event: ")]
    assert events == ["event: agent", "event: committed", "event: committed", "event: committed"], response.text
    case.validate_response(response)
    # The same check fails for an event the schema does not describe.
    wrong = b'id: 1\nevent: committed\ndata: {"seq": 1}\n\n'
    forged = Response(
        status_code=200,
        headers={key: [value] for key, value in response.headers.items() if isinstance(value, str)}
        | {key: value for key, value in response.headers.items() if isinstance(value, list)},
        content=wrong,
        request=response.request,
        elapsed=response.elapsed,
        verify=response.verify,
    )
    with pytest.raises(FailureGroup) as failures:
        case.validate_response(forged)
    assert "SSE event violates schema" in str(failures.value)
