"""chartr.config: every variable parsed by its declared kind, a wrong one a start-up error naming it.

The walk is parametrized from the table (chartr/config.py), so a
variable cannot be added without a value it accepts and values it refuses; the
scan makes every ``CHARTR_*`` name in the tree a declared one; the doc's table is
the generated one. The start-up error is checked through the real processes:
``manage.py check``, bin/chartr-entrypoint and gunicorn with gunicorn.conf.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from chartr import config
from chartr.config import NOT_ENVIRONMENT, VARIABLES
from tests.support.processes import ENTRYPOINT, REPO, isolated_env

#: What a variable's accepted sample needs beside it (the combination rules of chartr.config).
COMPANIONS = {"CHARTR_WORKERS": {"CHARTR_REDIS_URL": "redis://127.0.0.1:6379/0"}}
WALK = [pytest.param(variable, id=variable.name) for variable in VARIABLES]


@pytest.mark.parametrize("variable", WALK)
def test_every_variable_takes_a_valid_value(variable):
    accepted, _ = variable.kind.samples
    values = config.load({variable.name: accepted, **COMPANIONS.get(variable.name, {})})
    assert values[variable.name] == variable.kind.parse(accepted)


@pytest.mark.parametrize("variable", WALK)
def test_every_variable_refuses_an_invalid_value_naming_it(variable):
    _, refused = variable.kind.samples
    assert refused, f"{variable.name} declares no value it refuses"
    for raw in refused:
        with pytest.raises(config.ConfigError) as error:
            config.load({variable.name: raw})
        assert f"{variable.name}={raw!r}: expected {variable.kind.allowed}" in str(error.value)


@pytest.mark.parametrize("variable", WALK)
def test_unset_or_empty_gives_the_default(variable):
    if variable.name == "CHARTR_WORKERS":
        assert config.load({})[variable.name] == 1  # the local transport's one worker
        return
    assert config.load({})[variable.name] == variable.default
    assert config.load({variable.name: ""})[variable.name] == variable.default


@pytest.mark.parametrize(
    "name, raw",
    [
        ("CHARTR_SECURE_COOKIES", "ture"),
        ("CHARTR_DEBUG", "2"),
        ("CHARTR_DEBUG", "-1"),
        ("CHARTR_DEBUG", "ok"),
        ("CHARTR_LIVE_TRANSPORT", "redsi"),
        ("CHARTR_LIVE_TRANSPORT", "Redis"),
        ("CHARTR_TOKEN_CACHE_SECONDS", "5m"),
        ("CHARTR_WORKERS", "0"),
        ("CHARTR_MAX_BODY_BYTES", "-1"),
        ("CHARTR_API_THROTTLE_RATE", "600"),
        ("CHARTR_REDIS_URL", "redis//127.0.0.1:6379/0"),
    ],
)
def test_the_values_issue_28_found_loosening_chartr_are_errors(name, raw):
    with pytest.raises(config.ConfigError, match=re.escape(f"{name}={raw!r}: expected ")):
        config.load({name: raw})


def test_booleans_take_exactly_their_documented_spellings():
    boolean = config.BY_NAME["CHARTR_DEBUG"].kind
    assert [boolean.parse(raw) for raw in ("true", "TRUE", "1", "yes", "On")] == [True] * 5
    assert [boolean.parse(raw) for raw in ("false", "False", "0", "no", "OFF")] == [False] * 5


def test_every_problem_is_reported_at_once():
    with pytest.raises(config.ConfigError) as error:
        config.load({"CHARTR_DEBUG": "ture", "CHARTR_WORKERS": "0"})
    assert error.value.problems[0].startswith("CHARTR_DEBUG='ture'")
    assert error.value.problems[1].startswith("CHARTR_WORKERS='0'")


def test_a_chartr_name_chartr_does_not_know_is_refused_with_a_suggestion():
    typo = "CHARTR_" + "WORKES"
    with pytest.raises(
        config.ConfigError, match=f"{typo} is set, but chartr has no such variable. Did you mean CHARTR_WORKERS"
    ):
        config.load({typo: "2"})
    with pytest.raises(config.ConfigError, match="CHARTR_SSE_BUFFER_SIZE is a constant in chartr/settings.py"):
        config.load({"CHARTR_SSE_BUFFER_SIZE": "5"})


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"CHARTR_LIVE_TRANSPORT": "redis"}, "CHARTR_LIVE_TRANSPORT='redis' needs CHARTR_REDIS_URL"),
        ({"CHARTR_LIVE_TRANSPORT": "postgres"}, "CHARTR_LIVE_TRANSPORT='postgres' needs a PostgreSQL DATABASE_URL"),
        (
            {"CHARTR_WORKERS": "2"},
            "Set CHARTR_LIVE_TRANSPORT=redis with CHARTR_REDIS_URL=redis://HOST:6379/0, or CHARTR_WORKERS=1.",
        ),
        (
            {"CHARTR_WORKERS": "2", "DATABASE_URL": "postgres://u@db/x", "CHARTR_LIVE_TRANSPORT": "local"},
            "CHARTR_WORKERS=2 with the local live transport",
        ),
    ],
)
def test_combinations_that_cannot_work_are_refused(env, expected):
    with pytest.raises(config.ConfigError, match=re.escape(expected)):
        config.load(env)


def test_several_workers_start_with_a_transport_that_crosses_processes():
    postgres = {"DATABASE_URL": "postgres://u@db/x"}
    assert config.load({"CHARTR_WORKERS": "3", **postgres})["CHARTR_WORKERS"] == 3
    assert config.load({"CHARTR_WORKERS": "3", "CHARTR_REDIS_URL": "redis://r:6379/0"})["CHARTR_WORKERS"] == 3
    expected = min(2 * (os.cpu_count() or 1), 8)
    assert config.load(postgres)["CHARTR_WORKERS"] == expected


# --- every CHARTR_* name in the tree is declared; the doc is the generated one ---

NAME = re.compile(r"\bCHARTR_[A-Z0-9_]*[A-Z0-9]\b")


def tracked_text_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return [path for path in listed if not path.endswith((".png", ".ico", ".woff2", ".gz", ".sqlite3"))]


def test_every_chartr_name_in_the_code_and_docs_is_declared():
    found: dict[str, str] = {}
    for path in tracked_text_files():
        try:
            text = (REPO / path).read_text()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        for name in NAME.findall(text):
            found.setdefault(name, path)
    declared = {variable.name for variable in VARIABLES} | NOT_ENVIRONMENT
    assert {"CHARTR_WORKERS", "CHARTR_COLLECTSTATIC", "CHARTR_DEBUG"} <= set(found), "the scan has stopped working"
    undeclared = {name: path for name, path in found.items() if name not in declared}
    assert not undeclared, f"declare these in chartr/config.py: {undeclared}"


def test_the_configuration_doc_holds_the_generated_table():
    documented = config.documented_table(config.DOC.read_text())
    assert documented == config.table(), "docs/configuration.md is stale: run `python -m chartr.config --write`"


# --- through the real processes -----------------------------------------------


def wrong_env(tmp_path, **wrong: str) -> dict[str, str]:
    return isolated_env(tmp_path, **wrong)


def test_manage_py_check_refuses_a_wrong_value_naming_it(tmp_path):
    env = wrong_env(tmp_path, CHARTR_DEBUG="ture", CHARTR_API_THROTTLE_RATE="600")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert "CHARTR_DEBUG='ture': expected `true`/`false`" in result.stderr
    assert "CHARTR_API_THROTTLE_RATE='600': expected `<requests>/<period>`" in result.stderr
    assert "Traceback" not in result.stderr


def test_manage_py_check_passes_with_valid_values(tmp_path):
    env = wrong_env(tmp_path, CHARTR_DEBUG="Off", CHARTR_API_THROTTLE_RATE="600/m", CHARTR_TOKEN_CACHE_SECONDS="2.5")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_the_entrypoint_stops_before_migrating_with_the_message(tmp_path):
    env = wrong_env(tmp_path, CHARTR_LIVE_TRANSPORT="redsi")
    result = subprocess.run([str(ENTRYPOINT)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "CHARTR_LIVE_TRANSPORT='redsi': expected one of `auto`, `local`, `postgres`, `redis`" in result.stderr
    assert not (tmp_path / "data" / "chartr.sqlite3").exists(), "nothing may run before the check"


def test_gunicorn_stops_on_its_config_with_the_message(tmp_path):
    env = wrong_env(tmp_path, CHARTR_WORKERS="2")  # SQLite, no Redis: the local transport
    result = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--config", str(REPO / "gunicorn.conf.py")],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "CHARTR_WORKERS=2 with the local live transport" in result.stderr
    assert "Set CHARTR_LIVE_TRANSPORT=redis with CHARTR_REDIS_URL" in result.stderr
    assert "Traceback" not in result.stderr and "Booting worker" not in result.stderr
