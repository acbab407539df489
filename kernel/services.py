"""Helpers every app's services share: UNSET, row locks, field validation, batched deletes."""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.core.management.color import no_style
from django.db import connection, models, transaction

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


def insert_carried_over(model: type[M], records: list[M], *, batch_size: int = 500) -> None:
    """Insert ``records`` exactly as they were carried over (an instance import): their own primary
    keys and their own ``auto_now``/``auto_now_add`` times, inside the caller's transaction.

    ``bulk_create`` stamps those times with the current time, so they are put back with one
    bulk UPDATE per batch; the table's id sequence then moves past the keys inserted
    (``reset_id_sequences``), so the next record made here gets a fresh one."""
    if not records:
        return
    stamped = [
        f.attname
        for f in model._meta.concrete_fields
        if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
    ]
    times = [[getattr(record, name) for name in stamped] for record in records]
    model.objects.bulk_create(records, batch_size=batch_size)
    if stamped:
        for record, values in zip(records, times, strict=True):
            for name, value in zip(stamped, values, strict=True):
                setattr(record, name, value)
        model.objects.bulk_update(records, stamped, batch_size=batch_size)


def reset_id_sequences(*model_classes: type[models.Model]) -> None:
    """Move the id sequences of ``model_classes`` past the largest key they hold (Django's
    ``sqlsequencereset``; nothing to do on SQLite, whose AUTOINCREMENT follows the rows)."""
    statements = connection.ops.sequence_reset_sql(no_style(), list(model_classes))
    if statements:
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
