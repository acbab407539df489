"""The production environment documented in docs/deploy.md passes `check --deploy`; the local defaults stay plain http."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.support.processes import REPO

DEPLOY_DOC = REPO / "docs" / "deploy.md"
PROBE = (
    "import json, django; from django.conf import settings as s; django.setup(); "
    "print(json.dumps([s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_SSL_REDIRECT, "
    "s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER, s.DEBUG]))"
)


def documented_production_env() -> dict[str, str]:
    block = re.search(r"```sh\n# production environment\n(.*?)```", DEPLOY_DOC.read_text(), re.S)
    assert block, "docs/deploy.md lost its production environment block"
    return dict(line.split("=", 1) for line in block[1].strip().splitlines())


def run(args: list[str], tmp_path, extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTR_", "XDG_", "DATABASE_URL"))}
    env.update(
        CHARTR_DATA_DIR=str(tmp_path / "data"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        DJANGO_SETTINGS_MODULE="chartr.settings",
        **extra,
    )
    return subprocess.run(args, env=env, cwd=REPO, capture_output=True, text=True, timeout=60)


def test_check_deploy_is_clean_with_the_documented_production_env(tmp_path):
    production = documented_production_env()
    assert production["CHARTR_SECURE_COOKIES"] == "1"
    # As the entrypoint deploys it: migrated first, which creates the secret key that check --deploy inspects.
    assert run([sys.executable, "manage.py", "migrate", "-v", "0"], tmp_path, production).returncode == 0
    done = run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, production)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues (0 silenced)." in done.stdout


def test_check_deploy_warns_with_the_local_defaults(tmp_path):
    done = run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, {})
    assert done.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in done.stderr


def test_local_defaults_work_over_plain_http(tmp_path):
    done = run([sys.executable, "-c", PROBE], tmp_path, {})
    assert json.loads(done.stdout) == [False, False, False, 0, None, False]
    done = run([sys.executable, "-c", PROBE], tmp_path, documented_production_env())
    assert json.loads(done.stdout) == [True, True, True, 31536000, ["HTTP_X_FORWARDED_PROTO", "https"], False]


@pytest.mark.django_db
def test_behind_the_proxy_https_passes_with_secure_cookies_and_plain_http_redirects(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.CSRF_COOKIE_SECURE = settings.SESSION_COOKIE_SECURE = True
    plain = client.get("/admin/login/")
    assert plain.status_code == 301 and plain["Location"] == "https://testserver/admin/login/"
    proxied = client.get("/admin/login/", HTTP_X_FORWARDED_PROTO="https")
    assert proxied.status_code == 200
    assert proxied.cookies["csrftoken"]["secure"] is True
