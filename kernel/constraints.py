"""Database-level building blocks shared by the apps' Meta constraints.

Every constraint here compiles to SQL any SQLite or PostgreSQL client evaluates
(no REGEXP, which SQLite lacks unless the connection defines it), so
``PRAGMA integrity_check`` and the ``sqlite3`` shell read a chartr database.
"""

from __future__ import annotations

from django.db.models import CheckConstraint, F, Lookup, Q
from django.db.models.functions import Length
from django.db.models.lookups import GreaterThanOrEqual, LessThanOrEqual

from kernel.engines import for_engine


def archived_has_operation_check(prefix: str):
    """An archived record names the archive operation that took it."""
    return CheckConstraint(
        condition=Q(archived_at__isnull=True) | Q(archive_operation__isnull=False),
        name=f"{prefix}_archived_has_operation",
    )


def choices_check(field: str, choices, name: str, *, nullable: bool = False):
    condition = Q(**{f"{field}__in": [value for value, _ in choices]})
    if nullable:
        condition |= Q(**{f"{field}__isnull": True})
    return CheckConstraint(condition=condition, name=name)


class OnlyCharacters(Lookup):
    """``lhs`` is made of the characters of one bracket expression (``"0-9a-f"``), as SQL every client runs.

    A regex lookup would need REGEXP on SQLite, a function only Django's connections
    define: ``PRAGMA integrity_check`` or the ``sqlite3`` shell would fail on every
    row ("unknown function: REGEXP()"). SQLite's own ``GLOB`` and PostgreSQL's own
    ``~`` read the same bracket expression (ranges, a ``-`` last is itself). An
    empty string passes: bound the length apart.
    """

    lookup_name = "only_characters"
    prepare_rhs = False

    def __init__(self, lhs, characters: str) -> None:
        if not characters or any(c in characters for c in "[]^\\*?"):
            raise ValueError(f"not a plain bracket expression: {characters!r}")
        super().__init__(lhs, characters)

    def as_sql(self, compiler, connection):
        lhs, params = self.process_lhs(compiler, connection)
        return for_engine(
            connection,
            {
                # GLOB stops at a NUL, which SQLite text may hold (PostgreSQL's cannot): instr sees past it.
                "sqlite": (
                    f"(NOT ({lhs} GLOB %s) AND instr({lhs}, char(0)) = 0)",
                    (*params, f"*[^{self.rhs}]*", *params),
                ),
                "postgresql": (f"{lhs} ~ %s", (*params, f"^[{self.rhs}]*$")),
            },
        )


def characters_check(field: str, characters: str, *, min_length: int, max_length: int, name: str):
    """``field`` is ``min_length`` to ``max_length`` characters of ``characters`` (a bracket expression)."""
    length = Length(field)
    return CheckConstraint(
        condition=Q(OnlyCharacters(F(field), characters))
        & Q(GreaterThanOrEqual(length, min_length))
        & Q(LessThanOrEqual(length, max_length)),
        name=name,
    )
