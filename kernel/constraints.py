"""Database-level building blocks shared by the apps' Meta constraints."""

from __future__ import annotations

from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual


def normalized_directory_check(field: str, name: str, *, max_length: int):
    """A CheckConstraint holding the shape of a normalized absolute path (as
    ``registry.directories.normalize_directory`` produces it) of at most ``max_length``.

    NUL bytes are not in it: PostgreSQL cannot store them in text at all and
    SQLite parameters reject them in DDL; the service refuses them first.
    """
    from django.db.models import CheckConstraint

    is_root = Q(**{field: "/"})
    shaped = (
        Q(**{f"{field}__startswith": "/"})
        & ~Q(**{f"{field}__endswith": "/"})
        & ~Q(**{f"{field}__contains": "//"})
        & ~Q(**{f"{field}__contains": "/./"})
        & ~Q(**{f"{field}__contains": "/../"})
        & ~Q(**{f"{field}__endswith": "/."})
        & ~Q(**{f"{field}__endswith": "/.."})
    )
    return CheckConstraint(
        condition=(is_root | shaped) & LessThanOrEqual(Length(field), max_length),
        name=name,
    )


def choices_check(field: str, choices, name: str, *, nullable: bool = False):
    from django.db.models import CheckConstraint

    condition = Q(**{f"{field}__in": [value for value, _ in choices]})
    if nullable:
        condition |= Q(**{f"{field}__isnull": True})
    return CheckConstraint(condition=condition, name=name)
