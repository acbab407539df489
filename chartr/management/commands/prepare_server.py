"""Everything a server start needs before gunicorn, in one process (one Django start-up, not three)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

FINGERPRINT_FILENAME = ".chartr-collected"


def static_sources_fingerprint() -> str:
    """A digest of every static source file's path, size and mtime, plus the storage setup.

    Collecting (hashing and compressing ~30 MB) takes seconds; when nothing
    changed since the last collect, the start skips it. A dependency upgrade
    or edited asset changes a size or mtime, so the next start collects again.
    """
    digest = hashlib.sha256()
    digest.update(f"{settings.STATIC_URL}|{settings.STORAGES['staticfiles']['BACKEND']}\n".encode())
    for finder in get_finders():
        for relative_path, storage in finder.list(["CVS", ".*", "*~"]):
            stat = Path(storage.path(relative_path)).stat()
            digest.update(f"{relative_path}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


class Command(BaseCommand):
    help = (
        "Prepare a server start: apply migrations under a lock, create the initial admin if "
        "there is no superuser, and collect static files if they changed since the last collect."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-collectstatic",
            action="store_false",
            dest="collectstatic",
            help="Static files are prebuilt, as with CHARTR_COLLECTSTATIC=0 (the Docker image collects them at build time).",
        )

    def handle(self, *args, collectstatic: bool, verbosity: int, **options):
        storage_problem = getattr(connection, "storage_problem", None)
        problem = storage_problem() if storage_problem is not None else None
        if problem is not None:
            raise CommandError(
                f"Refusing to serve {connection.settings_dict['NAME']}: {problem}. SQLite serves one machine; "
                "several machines share PostgreSQL (docs/deploy.md, More than one machine)."
            )
        call_command("migrate_safely", verbosity=verbosity, stdout=self.stdout)
        call_command("ensure_initial_admin", verbosity=verbosity, stdout=self.stdout)
        if collectstatic and settings.CHARTR_COLLECTSTATIC:
            self.collect_static_if_changed()

    def collect_static_if_changed(self) -> None:
        static_root = Path(settings.STATIC_ROOT)
        marker = static_root / FINGERPRINT_FILENAME
        fingerprint = static_sources_fingerprint()
        manifest = static_root / "staticfiles.json"
        if manifest.is_file() and marker.is_file() and marker.read_text().strip() == fingerprint:
            self.stdout.write("Static files unchanged since the last collect.")
            return
        call_command("collectstatic", interactive=False, verbosity=0)
        marker.write_text(fingerprint + "\n")
        self.stdout.write(f"Collected static files into {static_root}.")
