"""A database built by the previous layout (everything under ``chartr``) migrates to the new one without losing a row.

The old tree is ``git archive``d from PREVIOUS_LAYOUT, migrated and filled by its
own code in real processes (this venv's python, throwaway data and config
dirs), then the new tree migrates the same database. ApiToken and ImportRun
moved from ``chartr`` to ``tokens`` and ``legacy`` with their tables kept, and
their content types relabelled, so every table keeps its row count, the
permissions and admin log entries follow the models, and a fresh database
ends up with the same tables, content types and permissions.

Runs on this run's engine: SQLite, or a scratch PostgreSQL database when
DATABASE_URL points at PostgreSQL. CI's two passes cover both; the PostgreSQL
pass no longer repeats the SQLite variant, which the SQLite pass runs.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.conftest import skip_or_fail
from tests.support.processes import REPO, isolated_env, run_engine

pytestmark = [pytest.mark.process, pytest.mark.timeout(300)]

#: Today's main before the refactor (issue 11): the layout a deployed database was built by.
PREVIOUS_LAYOUT = "f45a66f"
#: The migrations the new layout adds on top of an old database.
HAND_OVER_MIGRATIONS = {"chartr.0002_hand_over_models", "tokens.0001_initial", "legacy.0001_initial"}
#: The content types the hand-over relabels: the same rows under their new app.
RELABELLED = {"chartr.apitoken": "tokens.apitoken", "chartr.importrun": "legacy.importrun"}
#: Models added since the old layout: their content types and permissions are new rows.
MODELS_SINCE_THE_OLD_LAYOUT = {
    "axes.accessattempt",
    "axes.accessattemptexpiration",
    "axes.accessfailurelog",
    "axes.accesslog",
    "codex.codeximportrun",
    "codex.codexthread",
    "claude_code.claudecodeimportrun",
    "claude_code.claudecodesession",
    "timeline.timelinehead",
    "timeline.timelinerowrevision",
    "tokens.idempotentcreate",
    "tokens.streamticket",
    "tokens.throttlewindow",
}
RESULT = "RESULT:"

# Run by the old tree: data through its own services, as a deployment would hold it.
POPULATE = """
import datetime as dt

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

import chartr
from chartr.models import ApiToken, ImportRun
from chartr.services import create_api_token
from registry.services import create_project, create_workspace
from snapshots.services import create_agent
from timeline.services import NewTimelineItem, append_timeline_items

admin = User.objects.create_superuser("admin", "admin@example.com", "old-password")
viewer = User.objects.create_user("viewer", password="old-password", is_staff=True)
viewer.user_permissions.add(Permission.objects.get(content_type__app_label="chartr", codename="view_apitoken"))
importers = Group.objects.create(name="importers")
importers.permissions.add(Permission.objects.get(content_type__app_label="chartr", codename="view_importrun"))
viewer.groups.add(importers)

token, raw = create_api_token(name="fleet", created_by=admin)
project = create_project(directory="/srv/chartr-migration", kind="git")
workspace = create_workspace(project=project, directory="/srv/chartr-migration/main", kind="checkout")
agent = create_agent(workspace=workspace, provider="claude", title="migrating")
append_timeline_items(
    agent_id=agent.agent_id,
    items=[
        NewTimelineItem(item={"type": "user_message", "text": "hello"}, item_id="m-1"),
        NewTimelineItem(item={"type": "assistant_message", "text": "hi"}, item_id="m-2"),
        NewTimelineItem(item={"type": "reasoning", "text": "thinking"}),
    ],
)
now = timezone.now()
ImportRun.objects.create(
    source_path="/legacy/chartr.json", started_at=now - dt.timedelta(seconds=5), finished_at=now, counts={"projects": 1}
)
LogEntry.objects.create(
    user=admin,
    content_type=ContentType.objects.get_for_model(ApiToken),
    object_id=str(token.pk),
    object_repr=str(token),
    action_flag=CHANGE,
    change_message="made before the move",
)
print(RESULT + json.dumps({"raw_token": raw, "token_id": token.pk, "agent_id": str(agent.agent_id), "code": chartr.__file__}))
"""

# Run by either tree: what the database holds, table by table.
SURVEY = """
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder

counts = {}
with connection.cursor() as cursor:
    for table in connection.introspection.table_names():
        cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
        counts[table] = cursor.fetchone()[0]
print(RESULT + json.dumps({
    "counts": counts,
    "content_types": sorted(f"{ct.app_label}.{ct.model}" for ct in ContentType.objects.all()),
    "permissions": sorted(
        f"{p.content_type.app_label}.{p.codename}" for p in Permission.objects.select_related("content_type")
    ),
    "migrations": sorted(f"{m.app}.{m.name}" for m in MigrationRecorder.Migration.objects.all()),
}))
"""

# Run by the new tree after it migrated the old database.
CHECK = """
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from legacy.models import ImportRun
from tokens.models import ApiToken
from tokens.services import hash_token

raw = os.environ["MIGRATION_TEST_RAW_TOKEN"]
token = ApiToken.objects.get(token_hash=hash_token(raw))
api = APIClient(SERVER_NAME="localhost")
anonymous = api.get("/api/v1/projects").status_code
api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
response = api.get("/api/v1/projects")
viewer = User.objects.get(username="viewer")
entry = LogEntry.objects.get()
print(RESULT + json.dumps({
    "token": [token.pk, token.name, token.created_by.username],
    "anonymous_status": anonymous,
    "api_status": response.status_code,
    "api_body": response.content.decode(),
    "viewer_permissions": sorted(
        f"{p.content_type.app_label}.{p.codename}" for p in viewer.user_permissions.select_related("content_type")
    ),
    "viewer_can": {
        perm: viewer.has_perm(perm)
        for perm in ("tokens.view_apitoken", "chartr.view_apitoken", "legacy.view_importrun", "chartr.view_importrun")
    },
    "import_runs": [[run.source_path, run.counts] for run in ImportRun.objects.all()],
    "log_entry": [entry.content_type.app_label, entry.content_type.model, entry.get_edited_object().pk],
    "models": [ApiToken._meta.label, ApiToken._meta.db_table, ImportRun._meta.label, ImportRun._meta.db_table],
}))
"""


def run_script(tree: Path, script: str, env: dict[str, str], *, timeout: float = 120) -> dict:
    """``manage.py shell -c`` in ``tree``; the script prints its result as one JSON line."""
    code = f"import json, os\nRESULT = {RESULT!r}\n" + textwrap.dedent(script)
    done = manage(tree, "shell", "-v", "0", "-c", code, env=env, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    assert done.returncode == 0 and lines, f"script failed in {tree}:\n{done.stdout}\n{done.stderr}"
    return json.loads(lines[-1][len(RESULT) :])


def manage(tree: Path, *args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=tree, env=env, capture_output=True, text=True, timeout=timeout
    )


def migrate(tree: Path, env: dict[str, str]) -> None:
    done = manage(tree, "migrate", "--no-input", env=env)
    assert done.returncode == 0, f"migrate failed in {tree}:\n{done.stdout}\n{done.stderr}"


def start_migrate(tree: Path, env: dict[str, str]) -> subprocess.Popen:
    """``migrate`` in the background (its own database and dirs); ``finish_migrate`` checks it."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "migrate", "--no-input"],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_migrate(process: subprocess.Popen, tree: Path, *, timeout: float = 180) -> None:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, f"migrate failed in {tree}:\n{stdout}\n{stderr}"


# --- the old tree, and the databases ----------------------------------------------


@pytest.fixture(scope="module")
def old_tree(tmp_path_factory) -> Path:
    """The repository at PREVIOUS_LAYOUT, exported with ``git archive``."""
    if shutil.which("git") is None:
        skip_or_fail("git is not installed: the previous layout is read from git history")
    git = ["git", "-C", str(REPO)]
    shallow = subprocess.run([*git, "rev-parse", "--is-shallow-repository"], capture_output=True, text=True)
    if shallow.returncode != 0:
        skip_or_fail(f"{REPO} is not a git checkout: the previous layout is read from git history")
    found = subprocess.run([*git, "cat-file", "-e", f"{PREVIOUS_LAYOUT}^{{commit}}"], capture_output=True, text=True)
    if found.returncode != 0:
        hint = " (this is a shallow clone: git fetch --unshallow)" if shallow.stdout.strip() == "true" else ""
        skip_or_fail(f"commit {PREVIOUS_LAYOUT} (the previous layout) is not in this repository's history{hint}")
    tree = tmp_path_factory.mktemp("previous-layout")
    archive = subprocess.run([*git, "archive", PREVIOUS_LAYOUT], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    assert (tree / "manage.py").is_file() and (tree / "chartr" / "models.py").is_file()
    return tree


def postgres_admin_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://", "pgsql://")):
        pytest.skip(
            "PostgreSQL not configured: this variant runs when DATABASE_URL=postgres://... (the PostgreSQL pass)"
        )
    return url


class ScratchPostgres:
    """Uniquely named databases on DATABASE_URL's server, each dropped at the end."""

    def __init__(self, url: str):
        self.url = urlsplit(url)
        self.names: list[str] = []

    def _admin(self):
        import psycopg

        return psycopg.connect(
            urlunsplit(self.url._replace(scheme="postgresql", path="/postgres")), autocommit=True, connect_timeout=5
        )

    def create(self) -> str:
        name = f"chartr_layout_{secrets.token_hex(5)}"
        with self._admin() as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        self.names.append(name)
        return urlunsplit(self.url._replace(path=f"/{name}"))

    def drop_all(self) -> None:
        with self._admin() as conn:
            for name in self.names:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=[run_engine()])
def database_urls(request, tmp_path):
    """Two empty databases of one engine, by URL: the old layout's, and a fresh one. None: SQLite in the data dir."""
    if request.param == "sqlite":
        yield None, None
        return
    scratch = ScratchPostgres(postgres_admin_url())
    try:
        first = scratch.create()
    except Exception as exc:  # psycopg.OperationalError and friends: the server is not there
        skip_or_fail(f"PostgreSQL from DATABASE_URL is not usable ({type(exc).__name__}: {exc})")
    try:
        yield first, scratch.create()
    finally:
        scratch.drop_all()


def environment(root: Path, database_url: str | None) -> dict[str, str]:
    env = isolated_env(root)
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def differences(before: dict, after: dict) -> list[str]:
    return [
        f"{key}: {before.get(key)} -> {after.get(key)}"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


# --- the test ----------------------------------------------------------------------


def test_a_database_built_by_the_previous_layout_migrates_without_losing_a_row(old_tree, database_urls, tmp_path):
    old_url, fresh_url = database_urls
    env = environment(tmp_path / "deployment", old_url)
    # The fresh database compared with at the end migrates meanwhile: nothing here touches it.
    fresh_env = environment(tmp_path / "fresh", fresh_url)
    fresh_migration = start_migrate(REPO, fresh_env)

    migrate(old_tree, env)
    made = run_script(old_tree, POPULATE, env)
    assert Path(made["code"]).is_relative_to(old_tree), f"the old tree ran the new code: {made['code']}"
    before = run_script(old_tree, SURVEY, env)
    assert {"chartr_apitoken", "chartr_importrun", "timeline_timelinerow"} <= set(before["counts"])
    assert {"chartr.apitoken", "chartr.importrun"} <= set(before["content_types"])

    migrate(REPO, env)
    after = run_script(REPO, SURVEY, env)

    # Not a row gained or lost anywhere: the relabelled content types and their permissions included.
    # Models the old tree did not have get their content type and Django's four permissions each.
    added_types = set(after["content_types"]) - set(before["content_types"]) - set(RELABELLED.values())
    assert added_types == MODELS_SINCE_THE_OLD_LAYOUT, sorted(added_types)
    tables_before = {table: n for table, n in before["counts"].items() if table != "django_migrations"}
    tables_before["django_content_type"] += len(added_types)
    tables_before["auth_permission"] += 4 * len(added_types)
    tables_after = {table: n for table, n in after["counts"].items() if table in tables_before}
    assert tables_after == tables_before, "row counts changed:\n" + "\n".join(
        differences(tables_before, tables_after)
        + [f"content type added: {ct}" for ct in sorted(set(after["content_types"]) - set(before["content_types"]))]
        + [f"permission added: {p}" for p in sorted(set(after["permissions"]) - set(before["permissions"]))]
    )
    assert set(after["migrations"]) - set(before["migrations"]) >= HAND_OVER_MIGRATIONS
    assert {"tokens.apitoken", "legacy.importrun"} <= set(after["content_types"])
    assert not {"chartr.apitoken", "chartr.importrun"} & set(after["content_types"]), after["content_types"]

    # The new code reads the old rows.
    checked = run_script(REPO, CHECK, {**env, "MIGRATION_TEST_RAW_TOKEN": made["raw_token"]})
    assert checked["token"] == [made["token_id"], "fleet", "admin"]
    assert checked["anonymous_status"] == 401
    assert checked["api_status"] == 200, checked["api_body"]
    assert "/srv/chartr-migration" in checked["api_body"]
    assert checked["viewer_permissions"] == ["tokens.view_apitoken"]
    assert checked["viewer_can"] == {
        "tokens.view_apitoken": True,
        "chartr.view_apitoken": False,
        "legacy.view_importrun": True,
        "chartr.view_importrun": False,
    }
    assert checked["import_runs"] == [["/legacy/chartr.json", {"projects": 1}]]
    assert checked["log_entry"] == ["tokens", "apitoken", made["token_id"]]
    assert checked["models"] == ["tokens.ApiToken", "chartr_apitoken", "legacy.ImportRun", "chartr_importrun"]

    # The models and their migrations agree in the new tree.
    pending = manage(REPO, "makemigrations", "--check", "--dry-run", env=env)
    assert pending.returncode == 0, f"makemigrations finds changes:\n{pending.stdout}\n{pending.stderr}"

    # A fresh database, migrated from zero by the new tree, has the same shape.
    finish_migrate(fresh_migration, REPO)
    fresh = run_script(REPO, SURVEY, fresh_env)
    assert sorted(fresh["counts"]) == sorted(after["counts"]), differences(
        dict.fromkeys(after["counts"], "present"), dict.fromkeys(fresh["counts"], "present")
    )
    assert fresh["content_types"] == after["content_types"]
    assert fresh["permissions"] == after["permissions"]
    assert fresh["migrations"] == after["migrations"]
