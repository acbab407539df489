"""Django's ``migrate``, which first creates what a fresh installation lacks: the data and config dirs, the secret key.

It overrides Django's own command (an app's command of the same name does,
Django's "Overriding commands"); every command but the few that set an
installation up refuses to run before it did (``manage.py``, chartr/installation.py).
"""

from django.core.management.commands import migrate

from chartr import paths


class Command(migrate.Command):
    def execute(self, *args, **options):
        # Before the system checks, which open the database: SQLite's file needs its dir.
        if not (options["plan"] or options["check_unapplied"]):
            paths.prepare_state()
        return super().execute(*args, **options)
