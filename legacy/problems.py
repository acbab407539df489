"""What goes wrong with legacy input, said with the file and the place in it."""

from __future__ import annotations

from dataclasses import dataclass

from kernel.errors import InputInvalid


@dataclass(frozen=True)
class Problem:
    """One invalid file or record: ``path`` is the file, ``location`` a line
    (``line 3``) or an array index (``[2]``), or empty for the whole file."""

    path: str
    location: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.location}" if self.location else self.path
        return f"{where}: {self.reason}"


class RecordError(ValueError):
    """A record is invalid; the message is the reason, the caller adds the place."""


class LegacyImportInvalid(InputInvalid):
    """The input is invalid and nothing was written."""

    code = "invalid_legacy_data"

    def __init__(self, problems: list[Problem], *, message: str | None = None, skippable: bool = True):
        plural = "s" if len(problems) != 1 else ""
        super().__init__(
            problems,
            message=message or f"{len(problems)} invalid file{plural} or record{plural}; nothing was imported.",
        )
        #: whether --skip-invalid could have imported the rest
        self.skippable = skippable


def changed_during_import(path, location: str, reason: str) -> LegacyImportInvalid:
    """A file that changed between its check and its write: nothing is imported, and no skipping helps."""
    problem = Problem(str(path), location, f"changed during the import: {reason}")
    return LegacyImportInvalid(
        [problem], message=f"{path} changed during the import; nothing was imported.", skippable=False
    )
