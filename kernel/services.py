"""Helpers every app's services share: UNSET, row locks, field validation, batched deletes."""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import models, transaction

from kernel.errors import NotFound

M = TypeVar("M", bound=models.Model)


class _Unset:
    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: Marks a keyword argument the caller did not pass, as opposed to passing None.
UNSET: Any = _Unset()


def lock_for_update(model: type[M], pk: Any) -> M:
    """Re-read ``pk`` under a row lock (a no-op on SQLite, where the IMMEDIATE
    transaction already serialises writers). Must run inside a transaction."""
    try:
        return model.objects.select_for_update().get(pk=pk)
    except model.DoesNotExist:
        raise NotFound(f"{model._meta.verbose_name.capitalize()} {pk} does not exist.") from None


def validate_fields(instance: models.Model, *, exclude: list[str] | None = None) -> None:
    """Field-level validation (choices, lengths, validators) without queries.

    Uniqueness and check constraints are left to the database, which holds
    them anyway; the services turn the rare IntegrityError into a clean error.
    """
    instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)


def require_json_object(value: Any, field: str) -> dict:
    if not isinstance(value, dict):
        raise ValidationError({field: ["Must be a JSON object."]}, code="invalid")
    return value


def delete_in_batches(queryset: models.QuerySet, *, batch_size: int) -> int:
    """Delete what ``queryset`` selects, ``batch_size`` rows per transaction, re-reading it for each
    batch (a row that stopped matching meanwhile is left alone); how many rows went.

    Each batch is short, so writers queue behind one batch at most (on SQLite, every writer).
    """
    deleted = 0
    while True:
        with transaction.atomic():
            batch = list(queryset.order_by().values_list("pk", flat=True)[:batch_size])
            if not batch:
                return deleted
            queryset.model.objects.filter(pk__in=batch).delete()
        deleted += len(batch)
