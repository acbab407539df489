"""``python -m chartr.config [--write]``: print docs/configuration.md's table of variables, or write it there."""

from __future__ import annotations

import sys

from chartr.config import docs

if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        docs.write()
    else:
        sys.stdout.write(docs.table())
