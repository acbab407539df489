"""manage.py create_api_token NAME [--read-only] [--expires-in-days N]: prints a new bearer token, once."""

from __future__ import annotations

import datetime as dt

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from tokens.services import create_api_token


class Command(BaseCommand):
    help = (
        "Create an API token and print it. Only its hash is stored, so this is the only time it is shown. "
        "The token goes to stdout alone (TOKEN=$(manage.py create_api_token ci)); the notice goes to stderr."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="What the token is for, e.g. 'daemon on build-1'.")
        parser.add_argument("--read-only", action="store_true", help="The token may read but not write (403).")
        parser.add_argument(
            "--expires-in-days",
            type=_positive_days,
            metavar="N",
            help="The token stops authenticating after N days (its open streams end then); default: never.",
        )
        parser.add_argument("--dry-run", action="store_true", help="Validate and create, then roll back.")

    def handle(self, *args, name: str, read_only: bool, dry_run: bool, expires_in_days: float | None, **options):
        expires_at = None if expires_in_days is None else timezone.now() + dt.timedelta(days=expires_in_days)
        try:
            with transaction.atomic():
                token, raw = create_api_token(name=name, read_only=read_only, expires_at=expires_at)
                if dry_run:
                    transaction.set_rollback(True)
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items())
            raise CommandError(f"Cannot create the token: {problems}") from None
        if dry_run:
            self.stderr.write(f"Dry run: would create {self._describe(token)}; nothing was saved.")
            return
        self.stdout.write(raw)
        self.stderr.write(f"Created {self._describe(token)}. It is shown only this once; store it now.")

    @staticmethod
    def _describe(token) -> str:
        access = "read-only" if token.read_only else "read-write"
        expiry = "" if token.expires_at is None else f", expiring {token.expires_at.isoformat(timespec='seconds')}"
        return f"{access} token {token.name!r} (prefix {token.prefix}{expiry})"


def _positive_days(raw: str) -> float:
    try:
        days = float(raw)
    except ValueError:
        days = float("nan")
    if not 0 < days <= 36_500:
        raise CommandError(f"--expires-in-days takes a number of days above 0 (at most 36500), not {raw!r}.")
    return days
