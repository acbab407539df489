"""manage.py list_api_tokens and revoke_api_token."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from tokens.models import ApiToken
from tokens.services import create_api_token, record_api_token_use, revoke_api_token

pytestmark = pytest.mark.django_db


def run(name: str, *args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def answers(raw: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client.get("/api/v1/projects").status_code


def test_list_shows_every_token_and_never_a_secret():
    used, used_raw = create_api_token(name="daemon on build-1")
    record_api_token_use(token=used)
    gone, gone_raw = create_api_token(name="dashboard", read_only=True)
    revoke_api_token(token=gone)
    out, err = run("list_api_tokens")
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "PREFIX", "NAME", "SCOPE", "CREATED", "LAST", "USED", "EXPIRES", "REVOKED"]
    assert len(lines) == 3 and err == ""
    rows = {line.split()[0]: line for line in lines[1:]}
    used_line, gone_line = rows[str(used.pk)], rows[str(gone.pk)]
    assert used.prefix in used_line and "daemon on build-1" in used_line and "read-write" in used_line
    assert used_line.count(f"{timezone.now():%Y-%m-%d}") == 2 and used_line.endswith("-")
    assert gone.prefix in gone_line and "read-only" in gone_line
    assert gone_line.count(f"{timezone.now():%Y-%m-%d}") == 2 and " - " in gone_line
    for secret in (used_raw, gone_raw, used.token_hash, gone.token_hash):
        assert secret not in out


def test_list_active_leaves_out_revoked_tokens_and_says_when_there_are_none():
    token, _ = create_api_token(name="old")
    revoke_api_token(token=token)
    out, err = run("list_api_tokens", "--active")
    assert out.splitlines()[1:] == [] and err.strip() == "No active API tokens."
    assert str(token.prefix) in run("list_api_tokens")[0]


def test_a_name_with_a_newline_stays_on_its_line():
    create_api_token(name="two\nlines")
    out, _ = run("list_api_tokens")
    assert len(out.splitlines()) == 2 and "two\\nlines" in out


@pytest.mark.parametrize("by", ["id", "prefix", "token"])
def test_revoke_by_id_prefix_or_token_and_again_changes_nothing(by):
    token, raw = create_api_token(name="leaked")
    other, other_raw = create_api_token(name="kept")
    reference = {"id": str(token.pk), "prefix": token.prefix, "token": raw}[by]
    out, _ = run("revoke_api_token", reference)
    assert out.strip() == f"revoked token {token.pk} 'leaked' (prefix {token.prefix})"
    token.refresh_from_db()
    first_revoked_at = token.revoked_at
    assert first_revoked_at is not None and answers(raw) == 401 and answers(other_raw) == 200
    out, _ = run("revoke_api_token", reference)
    assert out.startswith("already revoked, unchanged: token")
    token.refresh_from_db()
    assert token.revoked_at == first_revoked_at
    assert ApiToken.objects.get(pk=other.pk).revoked_at is None


def test_revoke_dry_run_reports_and_rolls_back():
    token, raw = create_api_token(name="trial")
    out, _ = run("revoke_api_token", token.prefix, "--dry-run")
    assert out.startswith("would revoke token")
    token.refresh_from_db()
    assert token.revoked_at is None and answers(raw) == 200


def test_an_unknown_token_is_named_and_nothing_is_revoked():
    token, _ = create_api_token(name="kept")
    with pytest.raises(CommandError, match="chartr_nothere") as exc:
        run("revoke_api_token", token.prefix, "chartr_nothere")
    assert "nothing revoked" in str(exc.value)
    token.refresh_from_db()
    assert token.revoked_at is None


def test_an_unknown_whole_token_is_not_echoed():
    secret = "chartr_" + "s" * 43
    with pytest.raises(CommandError) as exc:
        run("revoke_api_token", secret)
    assert secret not in str(exc.value) and secret[:14] in str(exc.value)


def test_a_shared_prefix_asks_for_an_id():
    first, _ = create_api_token(name="a")
    second, _ = create_api_token(name="b")
    ApiToken.objects.filter(pk=second.pk).update(prefix=first.prefix)
    with pytest.raises(CommandError, match=f"ids {first.pk}, {second.pk}"):
        run("revoke_api_token", first.prefix)
    assert not ApiToken.objects.filter(revoked_at__isnull=False).exists()
