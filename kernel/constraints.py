"""Database-level building blocks shared by the apps' Meta constraints."""

from __future__ import annotations

from django.db.models import CheckConstraint, Q


def choices_check(field: str, choices, name: str, *, nullable: bool = False):
    condition = Q(**{f"{field}__in": [value for value, _ in choices]})
    if nullable:
        condition |= Q(**{f"{field}__isnull": True})
    return CheckConstraint(condition=condition, name=name)
