"""Keyset ("cursor") pagination for every list under /api/.

A page is ``{"results": [...], "next_cursor": "..." | null}``. The cursor is
the ordering key of the last row sent, so the next page is "rows strictly
after that key": rows added meanwhile never shift a page or repeat a row, the
way offsets would, and every page costs one index range scan.

A view chooses its key with ``keyset_ordering`` (fields that are unique
together, e.g. ``("id",)`` or ``("created_at", "name")``; ``-name`` sorts
descending). A view that lets clients choose names its keys in
``keyset_orderings`` (``{"-updated_at": ("-updated_at", "-id"), ...}``,
the first being the default), chosen with ``?ordering=``. Nullable fields
sort their nulls last in either direction, and the "after this key" condition
says so, so paging stays exact over nulls.

The cursor is opaque to clients: base64url of a JSON list of the key values,
followed by the list's scope: a digest of the list's path, its ordering and its
filters (every query parameter but ``cursor`` and ``limit``). A cursor thus
only continues the list, ordering and filters it came from; used anywhere else
it is a 400 ``invalid`` on ``cursor`` saying so, never a page of another list.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
from collections import OrderedDict

from django.db import models
from django.db.models import F, Q
from django.utils.dateparse import parse_datetime
from rest_framework import exceptions
from rest_framework.pagination import BasePagination
from rest_framework.response import Response

from kernel.api.parsers import text_problem
from kernel.api.serializers import INT64_MAX

MAX_CURSOR_CHARS = 2048


def invalid(field: str, message: str) -> exceptions.ValidationError:
    return exceptions.ValidationError({field: [message]})


def parse_limit(raw: str | None, *, default: int, maximum: int) -> int:
    if raw is None or raw == "":
        return default
    if not raw.isascii() or not raw.isdigit() or len(raw) > 6:
        raise invalid("limit", f"Must be an integer from 1 to {maximum}.")
    value = int(raw)
    if not 1 <= value <= maximum:
        raise invalid("limit", f"Must be an integer from 1 to {maximum}.")
    return value


SCOPE_CHARS = 16


def list_scope(path: str, ordering_name: str | None, filters: list[tuple[str, list[str]]]) -> str:
    """The digest a cursor carries of the list it belongs to: the path, the
    ordering's name (None: the default) and the non-empty filter values, in a
    canonical order so that the same list always gives the same scope."""
    canonical = [path, ordering_name, sorted((name, values) for name, values in filters if any(values))]
    digest = hashlib.sha256(json.dumps(canonical, separators=(",", ":")).encode("utf-8"))
    return digest.hexdigest()[:SCOPE_CHARS]


def encode_cursor(values: list, *, scope: str) -> str:
    plain = [v.isoformat() if isinstance(v, dt.datetime) else v for v in values]
    raw = json.dumps([*plain, scope], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, fields: list[models.Field], *, scope: str) -> list:
    """The key values a cursor carries, checked against the fields they belong to
    and against the scope of the list it is used on.

    Anything that is not a cursor this API produced for this list is a 400,
    never a database error.
    """
    bad = invalid("cursor", "The cursor is not valid for this list.")
    if len(cursor) > MAX_CURSOR_CHARS or not cursor.isascii():
        raise bad
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        payload = json.loads(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError, RecursionError):
        raise bad from None
    if not isinstance(payload, list) or len(payload) != len(fields) + 1 or not isinstance(payload[-1], str):
        raise bad
    values = [_decode_value(value, field, bad) for value, field in zip(payload, fields)]
    if payload[-1] != scope:
        raise invalid(
            "cursor",
            "The cursor belongs to another list, or to other filters or another ordering: "
            "use it only with the path and query it came from (omit it to start again).",
        )
    return values


def _decode_value(value, field: models.Field, bad: Exception):
    if value is None and field.null:
        return None
    if isinstance(field, (models.AutoField, models.BigAutoField, models.IntegerField)):
        if isinstance(value, bool) or not isinstance(value, int) or not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise bad
        return value
    if isinstance(field, models.DateTimeField):
        if not isinstance(value, str):
            raise bad
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            raise bad
        return parsed
    if isinstance(field, models.CharField):
        if not isinstance(value, str) or text_problem(value) or len(value) > (field.max_length or 0):
            raise bad
        return value
    raise TypeError(f"keyset pagination does not support {type(field).__name__}")


def _term(term: str) -> tuple[str, bool]:
    """``"-name"`` -> (``"name"``, descending)."""
    return (term[1:], True) if term.startswith("-") else (term, False)


def after_key(ordering: list[str], values: list, *, nullable: list[bool]) -> Q:
    """Rows strictly after ``values`` in ``ordering`` (``-name`` descending;
    nulls of the ``nullable`` fields last in either direction)."""
    condition: Q | None = None
    for index in range(len(ordering) - 1, -1, -1):
        name, descending = _term(ordering[index])
        value = values[index]
        if value is None:
            # Nulls come last: nothing comes after a null in this column.
            after, equal = Q(pk__in=[]), Q(**{f"{name}__isnull": True})
        else:
            after = Q(**{f"{name}__{'lt' if descending else 'gt'}": value})
            if nullable[index]:
                after |= Q(**{f"{name}__isnull": True})
            equal = Q(**{name: value})
        condition = after if condition is None else after | (equal & condition)
    return condition


def key_field(model: type[models.Model], name: str) -> models.Field:
    """The field a key term names: on ``model``, or across one-to-one and foreign keys (``a__b``)."""
    *path, last = name.split("__")
    for step in path:
        model = model._meta.get_field(step).related_model
    return model._meta.get_field(last)


def key_value(record: models.Model, name: str):
    """``record``'s value for a key term (``a__b`` follows ``record.a.b``, read along with it)."""
    value = record
    for step in name.split("__"):
        value = getattr(value, step)
    return value


def order_by_terms(model: type[models.Model], ordering: tuple[str, ...]) -> list:
    """``order_by`` arguments for ``ordering``, nulls last wherever a field is nullable."""
    terms = []
    for term in ordering:
        name, descending = _term(term)
        if key_field(model, name).null:
            terms.append(F(name).desc(nulls_last=True) if descending else F(name).asc(nulls_last=True))
        else:
            terms.append(term)
    return terms


class KeysetCursorPagination(BasePagination):
    default_limit = 50
    max_limit = 500
    cursor_query_param = "cursor"
    limit_query_param = "limit"
    ordering_query_param = "ordering"
    default_ordering: tuple[str, ...] = ("id",)

    def ordering_for(self, view, request) -> tuple[str | None, tuple[str, ...]]:
        """(the name of a non-default ordering or None, the key's terms)."""
        named = getattr(view, "keyset_orderings", None)
        if not named:
            return None, tuple(getattr(view, "keyset_ordering", None) or self.default_ordering)
        default = next(iter(named))
        raw = request.query_params.get(self.ordering_query_param)
        if raw in (None, "", default):
            return None, tuple(named[default])
        if raw not in named:
            raise invalid(self.ordering_query_param, f"Use one of: {', '.join(named)}.")
        return raw, tuple(named[raw])

    def scope_for(self, request, ordering_name: str | None) -> str:
        skipped = {self.cursor_query_param, self.limit_query_param, self.ordering_query_param}
        filters = [(name, values) for name, values in request.query_params.lists() if name not in skipped]
        return list_scope(request.path, ordering_name, filters)

    def paginate_queryset(self, queryset, request, view=None):
        ordering_name, ordering = self.ordering_for(view, request)
        scope = self.scope_for(request, ordering_name)
        limit = parse_limit(
            request.query_params.get(self.limit_query_param), default=self.default_limit, maximum=self.max_limit
        )
        model = queryset.model
        queryset = queryset.order_by(*order_by_terms(model, ordering))
        cursor = request.query_params.get(self.cursor_query_param)
        if cursor:
            model_fields = [key_field(model, _term(term)[0]) for term in ordering]
            values = decode_cursor(cursor, model_fields, scope=scope)
            queryset = queryset.filter(
                after_key(list(ordering), values, nullable=[field.null for field in model_fields])
            )
        rows = list(queryset[: limit + 1])
        page = rows[:limit]
        self.next_cursor = None
        if len(rows) > limit:
            last = page[-1]
            values = [key_value(last, _term(term)[0]) for term in ordering]
            self.next_cursor = encode_cursor(values, scope=scope)
        return page

    def get_paginated_response(self, data):
        return Response(OrderedDict([("results", data), ("next_cursor", self.next_cursor)]))

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["results", "next_cursor"],
            "properties": {
                "results": schema,
                "next_cursor": {
                    "type": ["string", "null"],
                    "description": "Pass as `cursor` to get the next page; null on the last page.",
                },
            },
        }

    def get_schema_operation_parameters(self, view):
        parameters = [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "The `next_cursor` of the previous page, with the same path, filters and "
                "ordering. Omit for the first page. A cursor of another list (or of other filters or "
                "another ordering) is a 400 `invalid` on `cursor`.",
                "schema": {"type": "string"},
            },
            {
                "name": self.limit_query_param,
                "required": False,
                "in": "query",
                "description": f"Page size, 1 to {self.max_limit}.",
                "schema": {"type": "integer", "minimum": 1, "maximum": self.max_limit, "default": self.default_limit},
            },
        ]
        named = getattr(view, "keyset_orderings", None)
        if named:
            ordering = {
                "name": self.ordering_query_param,
                "required": False,
                "in": "query",
                "description": "The order of the list (`-` for descending; nulls last either way). "
                "Keep it the same while paging: a cursor continues only the ordering it came from.",
                "schema": {"type": "string", "enum": list(named), "default": next(iter(named))},
            }
            parameters.insert(0, ordering)
        return parameters
