"""manage.py create_api_token NAME [--read-only]: prints a new bearer token, once."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from tokens.services import create_api_token


class DryRunRollback(Exception):
    pass


class Command(BaseCommand):
    help = (
        "Create an API token and print it. Only its hash is stored, so this is the only time it is shown. "
        "The token goes to stdout alone (TOKEN=$(manage.py create_api_token ci)); the notice goes to stderr."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="What the token is for, e.g. 'daemon on build-1'.")
        parser.add_argument("--read-only", action="store_true", help="The token may read but not write (403).")
        parser.add_argument("--dry-run", action="store_true", help="Validate and create, then roll back.")

    def handle(self, *args, name: str, read_only: bool, dry_run: bool, **options):
        try:
            with transaction.atomic():
                token, raw = create_api_token(name=name, read_only=read_only)
                if dry_run:
                    raise DryRunRollback
        except DryRunRollback:
            self.stderr.write(f"Dry run: would create {self._describe(token)}; nothing was saved.")
            return
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            raise CommandError(f"Cannot create the token: {problems}") from None
        self.stdout.write(raw)
        self.stderr.write(f"Created {self._describe(token)}. It is shown only this once; store it now.")

    @staticmethod
    def _describe(token) -> str:
        access = "read-only" if token.read_only else "read-write"
        return f"{access} token {token.name!r} (prefix {token.prefix})"
