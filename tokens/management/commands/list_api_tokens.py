"""manage.py list_api_tokens [--active]: every token's id, prefix, name, scope and dates, never the token."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from tokens.models import ApiToken
from tokens.selectors import api_tokens

COLUMNS = ["ID", "PREFIX", "NAME", "SCOPE", "CREATED", "LAST USED", "EXPIRES", "REVOKED"]


class Command(BaseCommand):
    help = (
        "List the API tokens, newest first: id, prefix, name, read-only or read-write, when created, "
        "last used, expiring and revoked. Only hashes are stored, so no token can be shown; "
        "revoke one with revoke_api_token ID|PREFIX."
    )

    def add_arguments(self, parser):
        parser.add_argument("--active", action="store_true", help="Leave out revoked and expired tokens.")

    def handle(self, *args, active: bool, **options):
        rows = [COLUMNS] + [self._row(token) for token in api_tokens(include_revoked=not active)]
        widths = [max(len(row[column]) for row in rows) for column in range(len(COLUMNS))]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if len(rows) == 1:
            self.stderr.write("No active API tokens." if active else "No API tokens.")

    @staticmethod
    def _row(token: ApiToken) -> list[str]:
        def when(moment) -> str:
            return moment.strftime("%Y-%m-%d %H:%M:%SZ") if moment is not None else "-"

        # A name is shown on one line whatever it holds.
        name = token.name.encode("unicode_escape").decode("ascii") if not token.name.isprintable() else token.name
        scope = "read-only" if token.read_only else "read-write"
        return [
            str(token.pk),
            token.prefix,
            name,
            scope,
            when(token.created_at),
            when(token.last_used_at),
            when(token.expires_at),
            when(token.revoked_at),
        ]
