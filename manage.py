#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chartr.settings")
    from django.core.management import execute_from_command_line

    from chartr.config import ConfigError

    try:
        execute_from_command_line(sys.argv)
    except ConfigError as error:
        # A wrong environment variable: the message names it; a traceback would only bury it.
        sys.stderr.write(f"{error}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
