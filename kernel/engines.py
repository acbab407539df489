"""The one way code picks what differs per database engine.

Every choice of a class, a function or a value by engine goes through
``for_engine(connection, {"sqlite": A, "postgresql": B})``: the engine is the
connection's ``vendor``, an engine without an entry gets ``default`` when one
is given, and otherwise the caller's ``error`` naming what is unsupported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

T = TypeVar("T")

#: How the engines read in a refusal.
ENGINE_NAMES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


class UnsupportedEngine(NotImplementedError):
    """No entry for the connection's engine, and no default."""


_NO_DEFAULT: Any = object()


def for_engine(
    connection: Any,
    choices: Mapping[str, T],
    *,
    default: T = _NO_DEFAULT,
    unsupported: str = "chartr supports",
    error: type[Exception] = UnsupportedEngine,
) -> T:
    """``choices[connection.vendor]``, else ``default``, else ``error``.

    ``unsupported`` starts the refusal: ``unsupported="Data snapshots support"``
    reads "Data snapshots support SQLite and PostgreSQL, not mysql."
    """
    try:
        return choices[connection.vendor]
    except KeyError:
        if default is not _NO_DEFAULT:
            return default
        engines = " and ".join(ENGINE_NAMES.get(vendor, vendor) for vendor in choices)
        raise error(f"{unsupported} {engines}, not {connection.vendor}.") from None
