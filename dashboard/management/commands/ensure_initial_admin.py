"""First run: create the `admin` superuser if there is no superuser yet."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from dashboard.services import ensure_initial_admin

MESSAGES = {
    "superuser_exists": "A superuser exists; no initial admin created.",
    "username_taken": "An account named {username!r} exists and is left untouched; no initial admin created.",
}


class Command(BaseCommand):
    help = (
        "Create the initial `admin` superuser with a random password if no superuser exists. "
        "Prints the password once and writes it to <config dir>/initial-admin-password (mode 0600)."
    )

    def handle(self, *args, **options):
        result = ensure_initial_admin(config_dir=settings.CONFIG_DIR)
        if result.reason == "created":
            self.stdout.write(
                f"Created superuser 'admin' with password: {result.password}\n"
                f"This is shown once; it is also in {result.password_file} (mode 0600). "
                "Change it after logging in, then delete that file."
            )
        elif result.reason == "reused_password_file":
            self.stdout.write(f"Created superuser 'admin' with the password kept in {result.password_file}.")
        elif options["verbosity"] >= 2 or result.reason == "username_taken":
            self.stdout.write(MESSAGES[result.reason].format(username="admin"))
