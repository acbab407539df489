"""A command on a missing data dir or an unmigrated database says so in one line and writes nothing.

Each command runs as an operator would run it: ``manage.py`` in a fresh
process with an empty HOME (and XDG dirs), against SQLite and PostgreSQL. It
must exit non-zero with exactly one line, no traceback, naming the data dir
and the variable it came from, and telling how to migrate; no data dir, config
dir or secret key may appear. ``manage.py migrate`` then creates them, and the
same command runs.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, isolated_env, with_dbname

pytestmark = pytest.mark.own_databases

COMMANDS = [
    ["create_api_token", "ci"],
    ["list_api_tokens"],
    ["snapshot"],
    ["axes_reset"],
    ["shell", "-c", "print('ran')"],
]


def fresh_env(root: Path, **extra: str) -> dict[str, str]:
    """The caller's environment minus chartr's, with only HOME set: the data dir comes from HOME."""
    env = isolated_env(root, **extra)
    for name in ("CHARTR_DATA_DIR", "XDG_CONFIG_HOME", "CHARTR_STATIC_ROOT"):
        env.pop(name)
    env.update(extra)
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=120
    )


def every_file(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def assert_refused_in_one_line(result: subprocess.CompletedProcess, *expected: str) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode == 1, result.stderr
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    for text in (*expected, "run `manage.py migrate`"):
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("args", COMMANDS, ids=[args[0] for args in COMMANDS])
def test_without_a_data_dir_a_command_says_so_and_writes_nothing(tmp_path, args):
    env = fresh_env(tmp_path)
    before = every_file(tmp_path)
    data_dir = tmp_path / "home" / ".local" / "share" / "chartr"
    assert_refused_in_one_line(
        run(args, env),
        f"the data dir {data_dir} (from HOME; CHARTR_DATA_DIR and XDG_DATA_HOME are unset) does not exist",
    )
    assert every_file(tmp_path) == before


@pytest.mark.parametrize(
    "variable, expected",
    [
        ("XDG_DATA_HOME", "(from XDG_DATA_HOME; CHARTR_DATA_DIR is unset)"),
        ("CHARTR_DATA_DIR", "(from CHARTR_DATA_DIR)"),
    ],
)
def test_the_message_names_the_variable_the_data_dir_came_from(tmp_path, variable, expected):
    data_dir = tmp_path / "xdg" if variable == "XDG_DATA_HOME" else tmp_path / "explicit"
    env = fresh_env(tmp_path, **{variable: str(data_dir)})
    line = assert_refused_in_one_line(run(["list_api_tokens"], env), expected)
    assert str(data_dir) in line
    assert not data_dir.exists() and not (tmp_path / "home" / ".config").exists()


def test_an_unmigrated_sqlite_database_is_named_with_its_data_dir(tmp_path):
    data_dir = tmp_path / "home" / ".local" / "share" / "chartr"
    data_dir.mkdir(parents=True)
    sqlite3.connect(data_dir / "chartr.sqlite3").close()  # a database file with no table
    env = fresh_env(tmp_path)
    before = every_file(tmp_path)
    for args in COMMANDS[:2]:
        assert_refused_in_one_line(
            run(args, env),
            f"the database {data_dir / 'chartr.sqlite3'} in the data dir {data_dir} (from HOME",
            "is not migrated (",
        )
    assert every_file(tmp_path) == before


def test_migrate_creates_what_the_command_needs_and_then_it_runs(tmp_path):
    env = fresh_env(tmp_path)
    assert run(["create_api_token", "ci"], env).returncode == 1
    migrated = run(["migrate", "-v", "0"], env)
    assert migrated.returncode == 0, migrated.stderr
    assert (tmp_path / "home" / ".local" / "share" / "chartr" / "chartr.sqlite3").is_file()
    assert (tmp_path / "home" / ".config" / "chartr" / "secret_key").is_file()
    created = run(["create_api_token", "ci"], env)
    assert created.returncode == 0 and "Created read-write token 'ci'" in created.stderr, created.stderr


def test_an_unmigrated_postgres_database_says_so(tmp_path, scratch_db):
    database = scratch_db("postgresql", purpose="unmigrated")
    env = fresh_env(tmp_path, DATABASE_URL=database.url)
    for args in COMMANDS[:3]:
        assert_refused_in_one_line(
            run(args, env), f"the database {database.name} on ", "(from DATABASE_URL) is not migrated ("
        )
    assert every_file(tmp_path) == ["home"]


def test_a_postgres_database_that_does_not_exist_says_so(tmp_path, scratch_db):
    existing = scratch_db("postgresql", purpose="exists")
    missing = f"{existing.name}_missing"
    env = fresh_env(tmp_path, DATABASE_URL=with_dbname(existing.url, missing))
    for args in COMMANDS[:2]:
        line = assert_refused_in_one_line(
            run(args, env), f"cannot open the database {missing} on ", "(from DATABASE_URL)"
        )
        assert f'database "{missing}" does not exist' in line
    assert every_file(tmp_path) == ["home"]


def test_help_and_the_setup_commands_are_not_checked(tmp_path):
    env = fresh_env(tmp_path)
    helped = run(["create_api_token", "--help"], env)
    assert helped.returncode == 0 and "usage: manage.py create_api_token" in helped.stdout, helped.stderr
    checked = run(["check"], env)
    assert checked.returncode == 0 and "System check identified no issues" in checked.stdout, checked.stderr
    assert every_file(tmp_path) == ["home"]
