"""manage.py revoke_api_token TOKEN... [--dry-run]: revoke tokens by id, prefix or the whole token."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from tokens.models import ApiToken
from tokens.selectors import api_tokens_matching
from tokens.services import revoke_api_token


class Command(BaseCommand):
    help = (
        "Revoke API tokens: clients using them get 401 from then on. Name each by its id or prefix "
        "(as list_api_tokens shows them) or by the whole token. Revoking a revoked token changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("tokens", nargs="+", metavar="TOKEN", help="an id, a prefix, or the whole token")
        parser.add_argument("--dry-run", action="store_true", help="Revoke, report, then roll back.")

    def handle(self, *args, tokens: list[str], dry_run: bool, **options):
        found = [self._find(reference) for reference in tokens]
        with transaction.atomic():
            changed = {token.pk: revoke_api_token(token=token) for token in found}
            if dry_run:
                transaction.set_rollback(True)
        verb = "would revoke" if dry_run else "revoked"
        for token in {token.pk: token for token in found}.values():
            done = verb if changed[token.pk] else "already revoked, unchanged:"
            self.stdout.write(f"{done} {self._describe(token)}")

    @staticmethod
    def _find(reference: str) -> ApiToken:
        matches = api_tokens_matching(reference)
        shown = reference if len(reference) <= 16 else reference[:14] + "…"
        if not matches:
            raise CommandError(f"No API token {shown!r} (give an id or prefix from list_api_tokens); nothing revoked.")
        if len(matches) > 1:
            ids = ", ".join(str(token.pk) for token in matches)
            raise CommandError(
                f"The prefix {shown!r} names {len(matches)} tokens (ids {ids}): give an id; nothing revoked."
            )
        return matches[0]

    @staticmethod
    def _describe(token: ApiToken) -> str:
        return f"token {token.pk} {token.name!r} (prefix {token.prefix})"
