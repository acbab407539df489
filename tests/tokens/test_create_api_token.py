from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from tokens.models import ApiToken
from tokens.services import hash_token

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("create_api_token", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_prints_a_working_token_once_and_stores_only_its_hash():
    out, err = run("daemon on build-1")
    raw = out.strip()
    assert out.count("\n") == 1 and raw.startswith("chartr_")
    token = ApiToken.objects.get()
    assert token.name == "daemon on build-1" and not token.read_only
    assert token.token_hash == hash_token(raw) and raw not in (token.token_hash, token.prefix)
    assert "read-write" in err and "only this once" in err and raw not in err
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.post("/api/v1/projects", {"directory": "/x", "kind": "git"}, format="json").status_code == 201


def test_read_only_token_cannot_write():
    raw = run("dashboard", "--read-only")[0].strip()
    assert ApiToken.objects.get().read_only
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert client.get("/api/v1/projects").status_code == 200
    assert client.post("/api/v1/projects", {"directory": "/x", "kind": "git"}, format="json").status_code == 403


def test_dry_run_saves_nothing_and_prints_no_token():
    out, err = run("trial", "--dry-run")
    assert out == "" and "nothing was saved" in err
    assert ApiToken.objects.count() == 0


@pytest.mark.parametrize("name", ["", "x" * 129, "nul\x00name"])
def test_invalid_name_is_a_command_error(name):
    with pytest.raises(CommandError, match="(?i)name"):
        run(name)
    assert ApiToken.objects.count() == 0


@pytest.mark.django_db
def test_the_service_refuses_a_nul_in_the_name():
    from django.core.exceptions import ValidationError

    from tokens.models import ApiToken
    from tokens.services import create_api_token

    with pytest.raises(ValidationError) as exc:
        create_api_token(name="bad\x00name")
    assert "name" in exc.value.message_dict
    assert not ApiToken.objects.exists()
