"""What the browser tests share: Debian's chromium under Playwright (never ``playwright install``),
and a chartr served by the entrypoint with a superuser and, when a test needs one, its own setup.

A setup script runs in the server's environment (Django set up) and prints one line
``SETUP {json}``; ``admin_server`` hands that JSON to the test beside the server's base URL."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import skip_or_fail
from tests.support.processes import REPO, Server, isolated_env, manage, python

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
SERVER_START_TIMEOUT = 60
PASSWORD = "browser-" + secrets.token_hex(8)


@contextmanager
def chromium() -> Iterator:
    """A headless chromium; the test is skipped (failed under CI) when Debian's package is missing."""
    if not CHROMIUM.exists():
        skip_or_fail(f"{CHROMIUM} is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def admin_server(tmp_path: Path, database, *, setup: str | None = None, args: tuple[str, ...] = (), **settings: str):
    """A migrated chartr on ``database`` (a ``scratch_db``) with the superuser ``admin`` (``PASSWORD``),
    ``setup`` run first, served with DEBUG off and one worker: ``(base_url, what setup printed)``."""
    env = isolated_env(
        tmp_path,
        CHARTR_DEBUG="0",
        CHARTR_WORKERS="1",
        DJANGO_SUPERUSER_PASSWORD=PASSWORD,
        **settings,
        **database.env(),
    )
    manage("createsuperuser", "--noinput", "--username", "admin", "--email", "admin@example.com", env=env, check=True)
    printed: dict = {}
    if setup is not None:
        result = python(setup, *args, env=env)
        line = next((line for line in result.stdout.splitlines() if line.startswith("SETUP ")), None)
        assert line, result.stderr
        printed = json.loads(line.split(" ", 1)[1])
    # The entrypoint finds the migrations applied and a superuser present, collects the static files, serves.
    with Server(env, tmp_path / "server.log", start_timeout=SERVER_START_TIMEOUT) as running:
        yield running.base_url, printed
