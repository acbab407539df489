"""Settings resolve the data and config dirs from the environment, in a fresh process each time, and write nothing."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chartr import config, paths

REPO = Path(__file__).resolve().parents[2]
# The settings module itself: django.conf.settings refuses to hand out an empty SECRET_KEY (not migrated yet).
PROBE = (
    "import json; from chartr import settings; "
    "print(json.dumps({'data': str(settings.DATA_DIR), 'config': str(settings.CONFIG_DIR), "
    "'db': settings.DATABASES['default']['NAME'], 'engine': settings.DATABASES['default']['ENGINE'], "
    "'key': settings.SECRET_KEY, 'debug': settings.DEBUG, 'hosts': settings.ALLOWED_HOSTS}))"
)


def load_settings(env: dict[str, str], home: Path) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTR_", "XDG_", "DATABASE_URL"))}
    base.update({"HOME": str(home), "DJANGO_SETTINGS_MODULE": "chartr.settings", **env})
    out = subprocess.run([sys.executable, "-c", PROBE], env=base, cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_defaults_follow_home(tmp_path):
    s = load_settings({}, tmp_path)
    assert s["data"] == str(tmp_path / ".local/share/chartr")
    assert s["config"] == str(tmp_path / ".config/chartr")
    assert s["db"] == str(tmp_path / ".local/share/chartr/chartr.sqlite3")
    assert s["engine"] == "kernel.db_backends.sqlite3"
    assert s["debug"] is False
    assert s["hosts"] == ["localhost", "127.0.0.1", "[::1]"]


def test_xdg_variables_and_chartr_data_dir(tmp_path):
    s = load_settings({"XDG_DATA_HOME": str(tmp_path / "xd"), "XDG_CONFIG_HOME": str(tmp_path / "xc")}, tmp_path)
    assert s["data"] == str(tmp_path / "xd/chartr") and s["config"] == str(tmp_path / "xc/chartr")
    s = load_settings({"XDG_DATA_HOME": str(tmp_path / "xd"), "CHARTR_DATA_DIR": str(tmp_path / "explicit")}, tmp_path)
    assert s["data"] == str(tmp_path / "explicit")


def test_settings_write_nothing_and_migrate_creates_the_dirs_owner_only(tmp_path):
    env = {"CHARTR_DATA_DIR": str(tmp_path / "d"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    assert load_settings(env, tmp_path)["key"] == ""
    assert not (tmp_path / "d").exists() and not (tmp_path / "c").exists()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTR_", "XDG_", "DATABASE_URL"))}
    migrate = [sys.executable, "manage.py", "migrate", "-v", "0"]
    subprocess.run(migrate, env={**base, "HOME": str(tmp_path), **env}, cwd=REPO, check=True, timeout=120)
    assert mode(tmp_path / "d") == 0o700
    assert mode(tmp_path / "c" / "chartr") == 0o700
    key_file = tmp_path / "c" / "chartr" / "secret_key"
    assert mode(key_file) == 0o600 and load_settings(env, tmp_path)["key"] == key_file.read_text().strip()


def test_secret_key_is_generated_once_reused_and_private(tmp_path):
    env = {"CHARTR_DATA_DIR": str(tmp_path / "d"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    paths.prepare_state(env)
    first = load_settings(env, tmp_path)["key"]
    paths.prepare_state(env)
    second = load_settings(env, tmp_path)["key"]
    key_file = tmp_path / "c" / "chartr" / "secret_key"
    assert first == second == key_file.read_text().strip()
    assert len(first) >= 50
    assert mode(key_file) == 0o600


def test_explicit_secret_key_wins_and_writes_nothing(tmp_path):
    env = {"XDG_CONFIG_HOME": str(tmp_path / "c"), "CHARTR_SECRET_KEY": "from-the-environment"}
    assert load_settings(env, tmp_path)["key"] == "from-the-environment"
    paths.prepare_state({**env, "CHARTR_DATA_DIR": str(tmp_path / "d")})
    assert not (tmp_path / "c" / "chartr" / "secret_key").exists()


def test_env_file_is_read_but_real_environment_wins(tmp_path):
    config = tmp_path / "c" / "chartr"
    config.mkdir(parents=True)
    (config / "chartr.env").write_text(
        "CHARTR_DEBUG=1\nCHARTR_ALLOWED_HOSTS=file.example\nCHARTR_DATA_DIR=" + str(tmp_path / "from-file") + "\n"
    )
    s = load_settings({"XDG_CONFIG_HOME": str(tmp_path / "c"), "CHARTR_ALLOWED_HOSTS": "env.example"}, tmp_path)
    assert s["debug"] is True
    assert s["hosts"] == ["env.example"]
    assert s["data"] == str(tmp_path / "from-file")


def test_database_url_overrides_sqlite(tmp_path):
    s = load_settings({"DATABASE_URL": "postgres://u@db.invalid:5432/x"}, tmp_path)
    assert s["engine"] == "kernel.db_backends.postgresql" and s["db"] == "x"


@pytest.mark.django_db
def test_sqlite_runs_with_wal_foreign_keys_and_immediate_transactions():
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite-specific pragmas; this run is on " + connection.vendor)
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA foreign_keys")
        assert cursor.fetchone()[0] == 1
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] >= 5000
    assert connection.settings_dict["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in connection.settings_dict["OPTIONS"]["init_command"]


# --- docs/configuration.md lists every environment variable the code reads ---

CONFIGURATION_DOC = REPO / "docs" / "configuration.md"
APP_PACKAGES = (
    "chartr",
    "kernel",
    "tokens",
    "registry",
    "snapshots",
    "timeline",
    "legacy",
    "datadir",
    "retention",
    "dashboard",
    "portability",
    "claude_code",
    "codex",
    # The Python client's Claude Code hook reads its own CHARTR_* variables where Claude Code runs.
    "clients/python/src",
)
# Reads in Python: chartr.config's values (_env[NAME] in settings and gunicorn.conf.py, config.value(NAME),
# settings.NAME: every CHARTR_* variable is a setting of its name),
# os.environ.get(NAME, environ[NAME]; in the entrypoint and compose.yaml: ${NAME or ${NAME:-default}; in the
# Dockerfile: NAME=.
PYTHON_READ = re.compile(
    r"""(?:\bvalue|environ\.get|environ\.setdefault|getenv)\(\s*["']([A-Z][A-Z0-9_]*)["']"""
    r"""|(?:environ|_env)\[["']([A-Z][A-Z0-9_]*)["']\]"""
    r"""|\bsettings\.(CHARTR_[A-Z0-9_]*)|getattr\(settings, ["'](CHARTR_[A-Z0-9_]*)["']"""
)
SHELL_READ = re.compile(r"\$\{([A-Z][A-Z0-9_]*)")
DOCKERFILE_ENV = re.compile(r"\b(CHARTR_[A-Z0-9_]+|XDG_[A-Z_]+)=")
# Read, but not through a call the patterns above can see (os.path.expanduser("~")).
READ_INDIRECTLY = {"HOME"}


def python_sources() -> list[Path]:
    files = [REPO / "gunicorn.conf.py", REPO / "manage.py"]
    for package in (*APP_PACKAGES, "tests", "bench"):
        files.extend(sorted((REPO / package).rglob("*.py")))
    return files


def variables_read_by_the_code() -> dict[str, str]:
    """Every environment variable name read anywhere, with one file that reads it."""
    found: dict[str, str] = {}
    for path in python_sources():
        for match in PYTHON_READ.finditer(path.read_text()):
            found.setdefault(next(name for name in match.groups() if name), str(path.relative_to(REPO)))
    for name in ("bin/chartr-entrypoint", "compose.yaml"):
        for match in SHELL_READ.finditer((REPO / name).read_text()):
            found.setdefault(match[1], name)
    for match in DOCKERFILE_ENV.finditer((REPO / "Dockerfile").read_text()):
        found.setdefault(match[1], "Dockerfile")
    return found


def documented_variables() -> set[str]:
    rows = re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", CONFIGURATION_DOC.read_text(), re.M)
    assert len(rows) == len(set(rows)), "docs/configuration.md lists a variable twice"
    return set(rows)


def test_every_environment_variable_is_documented():
    read = variables_read_by_the_code()
    # The scan must see the usual suspects, or it has stopped working.
    assert {"DATABASE_URL", "CHARTR_SECRET_KEY", "CHARTR_BIND", "CHARTR_COLLECTSTATIC", "CHARTR_DATA_DIR"} <= set(read)
    # settings.NAME reads the settings constants too, which are no environment variables.
    documented = documented_variables() | config.NOT_ENVIRONMENT
    missing = {name: where for name, where in read.items() if name not in documented}
    assert not missing, f"read by the code but not in docs/configuration.md: {missing}"


def test_configuration_doc_lists_nothing_the_code_no_longer_reads():
    stale = documented_variables() - set(variables_read_by_the_code()) - READ_INDIRECTLY
    assert not stale, f"in docs/configuration.md but read nowhere: {sorted(stale)}"


def test_tuning_constants_are_not_environment_variables(tmp_path):
    """The live stream's buffer, batch and retry sizes are fixed; setting one in the environment is refused."""
    probe = (
        "import json; from django.conf import settings as s; "
        "print(json.dumps([s.CHARTR_SSE_BUFFER_SIZE, s.CHARTR_SSE_BATCH_SIZE, s.CHARTR_SSE_RETRY_MS]))"
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTR_", "XDG_", "DATABASE_URL"))}
    base.update({"HOME": str(tmp_path), "DJANGO_SETTINGS_MODULE": "chartr.settings"})
    out = subprocess.run([sys.executable, "-c", probe], env=base, cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [256, 100, 1000]
    for name in ("CHARTR_SSE_BUFFER_SIZE", "CHARTR_SSE_BATCH_SIZE", "CHARTR_SSE_RETRY_MS"):
        refused = subprocess.run(
            [sys.executable, "-c", probe], env={**base, name: "5"}, cwd=REPO, capture_output=True, text=True
        )
        assert refused.returncode != 0 and f"{name} is a constant in chartr/settings.py" in refused.stderr
