"""Retry-safe creates: the ``Idempotency-Key`` header.

A create (``POST /projects``, ``/workspaces``, ``/agents``) sent with
``Idempotency-Key: <key>`` is remembered per token for ``KEY_LIFETIME``: a
retry with the same key and the same request (method, path and body, compared
as parsed JSON) gets the first answer again, status, body and ``Location``/
``ETag`` alike, and creates nothing; the same key with another request is a
422 ``idempotency_key_reused``. Only a success is remembered: a refused create
changes nothing, so its retry is evaluated again.

The key's row is inserted before the create runs, in the create's own
transaction, so two racing retries queue on the unique (token, key) constraint:
one creates, the other waits for its commit and replays it. The rows and that
service live in ``tokens`` (keys belong to a token), which registers the
service in its ``AppConfig.ready()``: the kernel and the domain views never
import it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ImproperlyConfigured
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.response import Response

#: How long a key replays its first answer.
KEY_LIFETIME = dt.timedelta(hours=24)
KEY_MAX_CHARS = 255
#: Visible ASCII: what clients put in keys (UUIDs, ULIDs, hashes).
KEY_PATTERN = r"^[!-~]{1,255}$"
REPLAYED_HEADERS = ("Location", "ETag")


@dataclass(frozen=True)
class Answer:
    """A response as it is replayed: status, JSON body, the headers that name what was created."""

    status: int
    body: object
    headers: dict


#: (token, key, fingerprint, lifetime, create) -> the answer to replay (tokens.services.create_idempotently).
IdempotentCreator = Callable[..., Answer]

_creator: IdempotentCreator | None = None


def register_idempotent_creator(creator: IdempotentCreator) -> None:
    global _creator
    _creator = creator


IDEMPOTENCY_KEY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "pattern": KEY_PATTERN},
    OpenApiParameter.HEADER,
    required=False,
    description="Makes the create retry-safe: a retry with the same key and the same body gets the first "
    "answer (status and body) and creates nothing; the same key with another body is a 422 "
    "`idempotency_key_reused`. Keys are per token and replay for 24 hours. 1 to 255 visible ASCII "
    "characters, e.g. a UUID.",
)


def idempotency_key(request) -> str | None:
    raw = request.headers.get("Idempotency-Key")
    if raw is None:
        return None
    key = raw.strip(" \t")
    if not 1 <= len(key) <= KEY_MAX_CHARS or not all("!" <= char <= "~" for char in key):
        raise serializers.ValidationError(
            {"Idempotency-Key": [f"Expected 1 to {KEY_MAX_CHARS} visible ASCII characters, e.g. a UUID."]}
        )
    return key


def fingerprint(request) -> str:
    canonical = json.dumps(
        [request.method, request.path, request.data], sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def create_once(request, create: Callable[[], Response]) -> Response:
    """``create()``'s answer, or with an ``Idempotency-Key`` the first answer to this key."""
    key = idempotency_key(request)
    if key is None:
        return create()
    if _creator is None:
        raise ImproperlyConfigured("No idempotent creator is registered: is the tokens app installed?")
    stored = _creator(
        token=request.auth,
        key=key,
        fingerprint=fingerprint(request),
        lifetime=KEY_LIFETIME,
        create=lambda: answer_of(create()),
    )
    return Response(stored.body, status=stored.status, headers=stored.headers)


def answer_of(response: Response) -> Answer:
    headers = {name: response[name] for name in REPLAYED_HEADERS if response.has_header(name)}
    return Answer(status=response.status_code, body=response.data, headers=headers)
