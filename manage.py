#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chartr.settings")
    import django
    from django.core.management import execute_from_command_line

    from chartr.config import ConfigError

    try:
        django.setup()
        from chartr.installation import problem

        # Before any command runs: on a database that does not exist or is not migrated, one line saying so.
        refusal = problem(sys.argv)
        if refusal:
            sys.stderr.write(f"{refusal}\n")
            sys.exit(1)
        execute_from_command_line(sys.argv)
    except ConfigError as error:
        # A wrong environment variable: the message names it; a traceback would only bury it.
        sys.stderr.write(f"{error}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
