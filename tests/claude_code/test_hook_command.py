"""chartr-claude-hook: Claude Code's hook input through the API to the agent, and never a failure."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys

import httpx
import pytest
from chartr_client.claude_hook import hook_body, run

from chartr.wsgi import application
from claude_code.keys import SessionKey
from snapshots.models import AgentSnapshot
from tests.claude_code import home as claude_home
from tests.claude_code.test_hooks import hook
from tests.support.api import assert_error

KEY = SessionKey(claude_home.PROJECT_KEY, claude_home.SESSION_ID)


def forward(event, environ, **kwargs) -> tuple[int, str]:
    stderr = io.StringIO()
    code = run(io.StringIO(json.dumps(event) if not isinstance(event, str) else event), stderr, environ, **kwargs)
    return code, stderr.getvalue()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("wsgi_keeps_test_connection")
def test_the_command_marks_the_session_through_the_api(token):
    environ = {"CHARTR_URL": "http://testserver", "CHARTR_TOKEN": token[1]}
    transport = httpx.WSGITransport(app=application)
    assert forward(hook("SessionStart"), environ, transport=transport) == (0, "")
    assert AgentSnapshot.objects.get(pk=KEY.agent_id).lifecycle == "running"
    event = hook("Notification", message="Claude needs your permission to use Bash")
    assert forward(event, environ, transport=transport) == (0, "")
    found = AgentSnapshot.objects.get(pk=KEY.agent_id)
    assert (found.attention_reason, found.runtime_info["attention_message"]) == (
        "permission",
        "Claude needs your permission to use Bash",
    )
    code, said = forward({"hook_event_name": "Stop", "session_id": "s"}, environ, transport=transport)
    assert code == 0 and "chartr refused the event (400)" in said


@pytest.mark.django_db
def test_the_endpoint_answers_bad_input_in_the_envelope(api):
    answer = api.post(
        "/api/v1/claude-code/hooks",
        {"hook_event_name": "Stop", "session_id": "s", "transcript_path": "s.jsonl"},
        format="json",
    )
    assert_error(answer, 400, "invalid", fields=["transcript_path"])
    answer = api.post("/api/v1/claude-code/hooks?namespace=no%20spaces", hook_body(hook("Stop")), format="json")
    assert answer.status_code == 400
    # Claude Code's other fields stay on the machine: the command sends only what chartr reads.
    assert_error(api.post("/api/v1/claude-code/hooks", hook("Stop"), format="json"), 400, "invalid")
    ok = api.post("/api/v1/claude-code/hooks", hook_body(hook("UserPromptSubmit", prompt="go")), format="json")
    assert ok.status_code == 200 and ok.json() == {
        "event": "UserPromptSubmit",
        "agent_id": KEY.agent_id,
        "changed": True,
    }
    again = api.post("/api/v1/claude-code/hooks", hook_body(hook("UserPromptSubmit")), format="json")
    assert again.json()["changed"] is False


def test_chartr_down_slow_or_unset_is_a_message_and_exit_0():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    code, said = forward(hook("Stop"), {"CHARTR_URL": f"http://127.0.0.1:{port}", "CHARTR_TOKEN": "t"})
    assert code == 0 and "did not answer (ConnectError" in said
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        environ = {
            "CHARTR_URL": f"http://127.0.0.1:{silent.getsockname()[1]}",
            "CHARTR_TOKEN": "t",
            "CHARTR_HOOK_TIMEOUT": "0.3",
        }
        code, said = forward(hook("Stop"), environ)
    assert code == 0 and "did not answer (ReadTimeout" in said
    assert forward(hook("Stop"), {}) == (
        0,
        "chartr-claude-hook: CHARTR_URL and CHARTR_TOKEN must be set; the event was not sent\n",
    )
    environ = {"CHARTR_URL": f"http://127.0.0.1:{port}", "CHARTR_TOKEN": "t", "CHARTR_HOOK_TIMEOUT": "5m"}
    code, said = forward(hook("Stop"), environ)
    assert code == 0 and "CHARTR_HOOK_TIMEOUT='5m' is not seconds from 0.1 to 30.0; using 2.0" in said
    code, said = forward("not json", {"CHARTR_URL": "http://x", "CHARTR_TOKEN": "t"})
    assert code == 0 and "the hook input is not JSON" in said


def test_the_installed_command_exits_0_when_chartr_is_down():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    done = subprocess.run(
        [sys.executable, "-m", "chartr_client.claude_hook"],
        input=json.dumps(hook("PermissionRequest", tool_name="Bash", tool_input={"command": "ls"})),
        env={"CHARTR_URL": f"http://127.0.0.1:{port}", "CHARTR_TOKEN": "t", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and "chartr-claude-hook: chartr at" in done.stderr
