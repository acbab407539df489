"""``chartr-claude-hook``: the command Claude Code's hooks run, so chartr's console shows each
session live (running, waiting for permission with what it asks, idle).

Claude Code runs it with the hook's JSON on stdin; it forwards that to chartr
(``POST /api/v1/claude-code/hooks``) and exits 0 whatever happens: a hook must never block or fail
Claude Code. When chartr is down, slow (``CHARTR_HOOK_TIMEOUT`` seconds, 2 by default), refuses the
call or is not configured, it says so on stderr and Claude Code goes on.

Configuration, from the environment: ``CHARTR_URL`` (e.g. ``http://127.0.0.1:8000``),
``CHARTR_TOKEN`` (an API token) and optionally ``CHARTR_CLAUDE_NAMESPACE`` (``default``: where
``import_claude_code`` writes, so imported and live sessions are the same agents).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import IO

import httpx

from chartr_client.client import api_base, client_headers

DEFAULT_TIMEOUT = 2.0
MIN_TIMEOUT, MAX_TIMEOUT = 0.1, 30.0
HOOKS_PATH = "/claude-code/hooks"
#: The fields of the hook input chartr reads; Claude Code sends more, and adds some over time.
SENT_FIELDS = ("hook_event_name", "session_id", "transcript_path", "cwd", "message", "tool_name", "tool_input")


def _say(stderr: IO[str], message: str) -> int:
    stderr.write(f"chartr-claude-hook: {message}\n")
    return 0


def hook_body(event: object) -> object:
    """The fields chartr reads (anything but a JSON object goes as it is, for chartr to refuse)."""
    if not isinstance(event, dict):
        return event
    return {name: event[name] for name in SENT_FIELDS if name in event}


def _timeout(raw: str, stderr: IO[str]) -> float:
    """``CHARTR_HOOK_TIMEOUT``: seconds from 0.1 to 30; a wrong value is named and the default used."""
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not MIN_TIMEOUT <= value <= MAX_TIMEOUT:
        _say(
            stderr,
            f"CHARTR_HOOK_TIMEOUT={raw!r} is not seconds from {MIN_TIMEOUT} to {MAX_TIMEOUT}; using {DEFAULT_TIMEOUT}",
        )
        return DEFAULT_TIMEOUT
    return value


def run(
    stdin: IO[str],
    stderr: IO[str],
    environ: Mapping[str, str],
    *,
    transport: httpx.BaseTransport | None = None,
) -> int:
    """Forward one hook event; always 0 (what went wrong goes to ``stderr``)."""
    url, token = environ.get("CHARTR_URL", ""), environ.get("CHARTR_TOKEN", "")
    if not url or not token:
        return _say(stderr, "CHARTR_URL and CHARTR_TOKEN must be set; the event was not sent")
    try:
        event = json.load(stdin)
    except ValueError as exc:
        return _say(stderr, f"the hook input is not JSON ({exc}); the event was not sent")
    timeout = _timeout(environ.get("CHARTR_HOOK_TIMEOUT", ""), stderr)
    namespace = environ.get("CHARTR_CLAUDE_NAMESPACE", "default")
    try:
        with httpx.Client(
            base_url=api_base(url), headers=client_headers(token), timeout=timeout, transport=transport
        ) as http:
            answer = http.post(HOOKS_PATH, params={"namespace": namespace}, json=hook_body(event))
    except httpx.HTTPError as exc:
        return _say(stderr, f"chartr at {url} did not answer ({exc.__class__.__name__}: {exc}); Claude Code goes on")
    if answer.status_code >= 400:
        return _say(stderr, f"chartr refused the event ({answer.status_code}): {answer.text[:300]}")
    return 0


def main() -> None:
    try:
        code = run(sys.stdin, sys.stderr, os.environ)
    except Exception as exc:  # never fail Claude Code, whatever goes wrong here
        code = _say(sys.stderr, f"unexpected error ({exc.__class__.__name__}: {exc})")
    sys.exit(code)


if __name__ == "__main__":
    main()
