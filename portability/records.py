"""Each kind of record of the instance format, to and from its model: every column, by the field's name.

A record holds every concrete field of its model (a foreign key by the field's name, holding the
key: ``"project": 3``), times as ISO 8601 in UTC, UUIDs as text, JSON as it is; only what the
database derives is left out (``directory_hash``). An API token names its creator by username.
Reading a record checks its keys (none missing, none unknown) and each value's type, then the
field's own validation (choices, lengths); the database's constraints hold the rest.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import models

from claude_code.models import ClaudeCodeSession
from legacy.models import ImportRun
from portability.format import parse_time, time_text
from registry.models import Project, Workspace
from snapshots.models import AgentSnapshot
from timeline.models import TimelineHead
from tokens.models import ApiToken

#: Columns that are derived, not carried: the importer's models compute them.
DERIVED = {"directory_hash"}


@dataclass(frozen=True)
class Kind:
    type: str
    model: type[models.Model]
    #: Nullable columns added since version 1 of the format: a file written before them leaves their
    #: keys out, and they read as null (an agent's ``parent``, a token's ``expires_at``). An agent's
    #: content hash covers its record as the file wrote it, with or without them.
    added: frozenset[str] = frozenset()

    @property
    def fields(self) -> list[models.Field]:
        return [f for f in self.model._meta.concrete_fields if f.name not in DERIVED]


PROJECT = Kind("project", Project)
WORKSPACE = Kind("workspace", Workspace)
AGENT = Kind("agent", AgentSnapshot, added=frozenset({"parent"}))
API_TOKEN = Kind("api_token", ApiToken, added=frozenset({"expires_at"}))
IMPORT_RUN = Kind("import_run", ImportRun)
#: A Claude Code session key and its agent, with the summary sidecar (added since the first files).
CLAUDE_CODE_SESSION = Kind("claude_code_session", ClaudeCodeSession)
#: The timeline head: its agent is named ``agent_id``.
TIMELINE = Kind("timeline", TimelineHead)


def _to_json(field: models.Field, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(field, models.DateTimeField):
        return time_text(value)
    if isinstance(field, models.UUIDField):
        return str(value)
    return value


def record_of(kind: Kind, obj: models.Model, **overrides: Any) -> dict:
    """``obj`` as a record of ``kind`` (``overrides`` replace fields: the token's creator)."""
    record = {"type": kind.type}
    for field in kind.fields:
        record[_key(kind, field)] = _to_json(field, getattr(obj, field.attname))
    record.update(overrides)
    return record


def _key(kind: Kind, field: models.Field) -> str:
    return "agent_id" if kind is TIMELINE and field.name == "agent" else field.name


def record_keys(kind: Kind) -> set[str]:
    return {"type", *(_key(kind, f) for f in kind.fields)}


class RecordInvalid(ValueError):
    """What is wrong with one record (the reader adds its file and line)."""


_TYPES: list[tuple[type[models.Field], tuple[type, ...], str]] = [
    (models.BooleanField, (bool,), "true or false"),
    (models.JSONField, (dict, list, str, int, float, bool), "JSON"),
    (models.DateTimeField, (str,), "an ISO 8601 time"),
    (models.UUIDField, (str,), "a UUID"),
    (models.IntegerField, (int,), "an integer"),
    (models.ForeignKey, (int, str), "a key"),
    (models.CharField, (str,), "a string"),
]


def _from_json(field: models.Field, name: str, value: Any) -> Any:
    if value is None:
        if not field.null:
            raise RecordInvalid(f"{name} cannot be null")
        return None
    expected = next(((types, what) for cls, types, what in _TYPES if isinstance(field, cls)), None)
    if expected is not None:
        types, what = expected
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise RecordInvalid(f"{name} must be {what}, not {value!r}")
    try:
        if isinstance(field, models.DateTimeField):
            return parse_time(value)
        if isinstance(field, models.UUIDField):
            return uuid.UUID(value)
    except ValueError as exc:
        raise RecordInvalid(f"{name}: {exc}") from None
    return value


def check_keys(record: dict, expected: set[str], *, optional: frozenset[str] = frozenset()) -> None:
    missing, unknown = sorted(expected - optional - set(record)), sorted(set(record) - expected)
    if missing:
        raise RecordInvalid("missing key(s): " + ", ".join(missing))
    if unknown:
        raise RecordInvalid("unknown key(s): " + ", ".join(unknown))


def object_of(kind: Kind, record: dict, *, exclude: frozenset[str] = frozenset()) -> models.Model:
    """The unsaved model instance a record of ``kind`` holds (``exclude``: keys the caller reads itself)."""
    check_keys(
        record, record_keys(kind), optional=frozenset(_key(kind, kind.model._meta.get_field(n)) for n in kind.added)
    )
    values = {}
    for field in kind.fields:
        if field.name in exclude:
            continue
        values[field.attname] = _from_json(field, _key(kind, field), record.get(_key(kind, field)))
    obj = kind.model(**values)
    skip = [f.name for f in kind.fields if f.is_relation or f.name in exclude]
    try:
        obj.full_clean(exclude=skip, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        problems = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
        raise RecordInvalid(problems) from None
    return obj
