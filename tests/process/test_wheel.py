"""The built wheel holds the whole project.

The wheel is built from a copy of the source tree, installed into a fresh venv
(its dependencies come from this venv's site-packages, added after the wheel's
own by a ``.pth`` file, so nothing is downloaded), and run from outside the
tree: Django's checks pass, every migration is there and applies, and every
template and static file of the tree is found inside the installed wheel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.support.processes import REPO, isolated_env

pytestmark = [pytest.mark.process, pytest.mark.slow]

#: Local state a checkout may hold, left out of the copy the wheel is built from.
LOCAL_STATE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "__pycache__",
    "*.egg-info",
    "build",
    "dist",
    "staticfiles",
    "test-artifacts",
    ".pytest_cache",
    ".hypothesis",
    "*.sqlite3*",
)


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the fresh venv's python, its environment, the directory to run in): chartr is the wheel's."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, ignore=LOCAL_STATE)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", root / "dist", source)
    (wheel,) = (root / "dist").glob("chartr-*.whl")
    shutil.rmtree(source)

    prefix = root / "venv"
    venv.create(prefix, with_pip=False)
    python = prefix / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--quiet", wheel)
    # After the install, so pip never sees this venv's editable chartr. The .pth files inside that
    # directory (the editable install's finder among them) are not processed: only the path is added.
    purelib = run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip()
    (Path(purelib) / "chartr-test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    # Nothing on the path but the venv's own: no PYTHONPATH leading back into the tree.
    env = {
        name: value
        for name, value in isolated_env(root, DJANGO_SETTINGS_MODULE="chartr.settings").items()
        if name != "PYTHONPATH"
    }
    workdir = root / "elsewhere"
    workdir.mkdir()
    return python, env, workdir


def django_admin(installed, *args: str) -> str:
    python, env, workdir = installed
    return run(python, "-m", "django", *args, env=env, cwd=workdir).stdout


def test_chartr_is_imported_from_the_wheel(installed):
    python, env, workdir = installed
    found = run(python, "-c", "import chartr; print(chartr.__file__)", env=env, cwd=workdir).stdout.strip()
    assert Path(found).is_relative_to(python.parent.parent), found


def test_the_checks_pass_and_every_migration_is_there_and_applies(installed):
    django_admin(installed, "check", "--fail-level", "WARNING")
    django_admin(installed, "makemigrations", "--check", "--dry-run")
    django_admin(installed, "migrate", "--noinput")
    assert "[ ]" not in django_admin(installed, "showmigrations", "--list")


def test_every_template_and_static_file_is_in_the_wheel(installed):
    templates = sorted(
        str(path.relative_to(folder)) for folder in REPO.glob("*/templates") for path in folder.rglob("*.html")
    )
    static = sorted(str(path.relative_to(folder)) for folder in REPO.glob("*/static") for path in folder.rglob("*.*"))
    assert "admin/index.html" in templates and "chartr/admin.css" in static
    python, env, workdir = installed
    script = (
        "import sys, django; django.setup()\n"
        "from django.contrib.staticfiles import finders\n"
        "from django.template.loader import get_template\n"
        "n = int(sys.argv[1])\n"
        "for name in sys.argv[2 : 2 + n]: print(get_template(name).origin.name)\n"
        "for name in sys.argv[2 + n :]: print(finders.find(name))\n"
    )
    found = run(python, "-c", script, len(templates), *templates, *static, env=env, cwd=workdir).stdout.split()
    assert len(found) == len(templates) + len(static)
    outside = [path for path in found if not Path(path).is_relative_to(python.parent.parent)]
    assert outside == [], outside
