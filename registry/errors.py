"""The registry's own refusals (the shared ones are in ``kernel.errors``)."""

from __future__ import annotations

from kernel.errors import Conflict


class DuplicateDirectory(Conflict):
    """Another project (or workspace) already has this directory."""

    code = "duplicate_directory"
