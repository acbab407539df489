"""Plain Django JSON views, for the endpoints where DRF's per-request work is too heavy.

``json_view(*operations)`` builds one view for one URL; each request takes one path:

1. content negotiation: only ``application/json`` is rendered (406 otherwise);
2. the caller (``authorize``: for the API, ``tokens.access.authorize``: token, permission, throttle),
   handed to the handlers that ask for it (``Operation.with_caller``);
3. the method (405 with ``Allow``; ``OPTIONS`` answers ``Allow``; ``HEAD`` is ``GET``);
4. the query and the body, each into its msgspec ``Struct`` (``forbid_unknown_fields=True``).
   The body is parsed first by the API's one strict JSON parser (kernel/api/parsers.py: size,
   duplicate keys, NaN, NUL, depth), since msgspec keeps the last of duplicate keys;
5. the handler, whose answer msgspec encodes.

Every refusal goes through ``kernel.api.errors.api_error``, the mapping DRF's views use too.
``kernel.api.plain_schema`` documents the operations from the same shapes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from kernel.api.errors import Invalid, MethodNotAllowed, NotAcceptable, UnsupportedMediaType, error_json_response
from kernel.api.parsers import limited_body, parse_json_body, text_problem

JSON = "application/json"
#: The longest decimal a query integer can be spelt with (INT64_MAX has 19 digits).
MAX_INT_DIGITS = 19
_AT = re.compile(r"^(?P<message>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_FIELD_NAMED = re.compile(r"field `(?P<name>[^`]*)`")


@dataclass(frozen=True)
class Answer:
    """A handler's result: the document (a ``Struct`` or plain JSON values) and its status."""

    document: Any
    status: int = 200


@dataclass(frozen=True)
class Operation:
    """One method of a plain view, and what the OpenAPI document says of it."""

    method: str
    handler: Callable[..., Answer]
    operation_id: str
    summary: str
    body: type[msgspec.Struct] | None = None
    query: type[msgspec.Struct] | None = None
    responses: dict[int, type] = field(default_factory=dict)
    description: str = ""
    tags: tuple[str, ...] = ()
    #: ``(component name, shapes)``: a ``oneOf`` component for a field msgspec cannot describe itself.
    one_of: tuple[tuple[str, tuple[type, ...]], ...] = ()
    #: Whether the handler is given ``caller``: what ``authorize`` returned (for the API, the token).
    with_caller: bool = False
    #: Error statuses the operation answers besides those ``kernel.api.schema.error_statuses`` derives
    #: from what it takes (a 404 for a key given in the query, a 412 of a compare-and-swap).
    error_statuses: tuple[int, ...] = ()


@dataclass(frozen=True)
class DescribedOperation:
    """One method of a view ``json_view`` cannot serve (the live stream: a coroutine answering
    text/event-stream), with its OpenAPI written beside the view: the responses, security and
    components by hand, the query parameters from the ``Struct`` the view reads its query with
    (``read_query``). ``documents`` attaches it to the view; ``kernel.api.plain_schema`` places it
    at the path ``urls.py`` gives that view, with the path parameters."""

    method: str
    operation_id: str
    summary: str
    #: status → the OpenAPI response object.
    responses: dict[str, dict]
    description: str = ""
    tags: tuple[str, ...] = ()
    query: type[msgspec.Struct] | None = None
    #: Header parameters (OpenAPI parameter objects), after the query's.
    headers: tuple[dict, ...] = ()
    security: tuple[dict, ...] = ({"bearerAuth": []},)
    #: Schemas and security schemes the operation refers to, by name.
    schemas: dict[str, dict] = field(default_factory=dict)
    security_schemes: dict[str, dict] = field(default_factory=dict)


def documents(*operations: DescribedOperation):
    """Attach ``operations`` to a view not built by ``json_view``, for the OpenAPI document."""

    def decorate(view):
        view.chartr_operations = operations
        return view

    return decorate


def json_view(*operations: Operation, authorize: Callable):
    """The view serving ``operations`` (one per method) at one URL; ``authorize(request)`` checks the
    caller (the app's: the kernel names no app), raising a refusal."""
    by_method = {operation.method: operation for operation in operations}
    if "GET" in by_method:
        by_method.setdefault("HEAD", by_method["GET"])
    allowed = sorted({*by_method, "OPTIONS"})

    @csrf_exempt  # bearer tokens, no cookies: CSRF protects sessions
    def view(request, **kwargs) -> HttpResponse:
        try:
            return _serve(request, by_method, allowed, authorize, kwargs)
        except Exception as exc:  # noqa: BLE001 - the one mapping answers everything, unknown errors a logged 500
            return error_json_response(exc, where=operations[0].operation_id)

    view.chartr_operations = operations
    return view


def _serve(request, by_method: dict[str, Operation], allowed: list[str], authorize, kwargs: dict) -> HttpResponse:
    if not accepts_json(request):
        raise NotAcceptable("Could not satisfy the request Accept header.")
    caller = authorize(request)
    operation = by_method.get(request.method)
    if operation is None:
        if request.method == "OPTIONS":
            response = HttpResponse(status=200)
            response["Allow"] = ", ".join(allowed)
            return response
        raise MethodNotAllowed(request.method, allowed)
    arguments = dict(kwargs)
    if operation.with_caller:
        arguments["caller"] = caller
    if operation.query is not None:
        arguments["query"] = read_query(request, operation.query)
    if operation.body is not None:
        arguments["body"] = read_body(request, operation.body)
    answer = operation.handler(**arguments)
    return HttpResponse(msgspec.json.encode(answer.document), status=answer.status, content_type=JSON)


def accepts_json(request) -> bool:
    """Whether ``Accept`` (absent or empty means anything) admits ``application/json``."""
    if not request.META.get("HTTP_ACCEPT", "").strip():
        return True
    return request.accepts(JSON)


def read_body(request, shape: type[msgspec.Struct]):
    """The request body as ``shape``: 415 unless JSON, 413 past the limit, 400 if it is not ``shape``."""
    raw = limited_body(request.META, request.read)
    if not raw:
        document: Any = {}
    else:
        content_type = request.content_type or ""
        if content_type != JSON:
            raise UnsupportedMediaType(f'Unsupported media type "{request.META.get("CONTENT_TYPE", "")}" in request.')
        document = parse_json_body(raw)
    return convert(_integral_floats_as_ints(document, shape), shape)


def read_query(request, shape: type[msgspec.Struct]):
    """The query string as ``shape``: each parameter once; empty means not given; integers are ASCII digits."""
    integers = _integer_fields(shape)
    values: dict[str, Any] = {}
    for name, given in request.GET.lists():
        if len(given) != 1:
            raise Invalid({name[:100]: ["Give this parameter once."]})
        value = given[0]
        if value == "":
            continue
        problem = text_problem(value)
        if problem:
            raise Invalid({name[:100]: [problem]})
        if name in integers:
            if not (value.isascii() and value.isdigit() and len(value) <= MAX_INT_DIGITS):
                raise Invalid({name: ["A valid integer is required."]})
            values[name] = int(value)
        else:
            values[name] = value
    return convert(values, shape)


def convert(document: Any, shape: type[msgspec.Struct]):
    """``document`` as ``shape``, or ``Invalid`` naming each field msgspec refused."""
    try:
        return msgspec.convert(document, shape, strict=True)
    except msgspec.ValidationError as exc:
        raise Invalid(validation_fields(str(exc))) from None


def validation_fields(text: str) -> dict[str, list[str]]:
    """msgspec's ``"<message> - at `$.items[0]`"`` as the envelope's ``{"items[0]...": [message]}``."""
    match = _AT.match(text)
    message, path = match["message"], (match["path"] or "").lstrip(".").replace("[...]", "")
    named = _FIELD_NAMED.search(message) if message.startswith("Object ") else None
    if named is not None:
        path = f"{path}.{named['name']}" if path else named["name"]
    return {path or "non_field_errors": [message]}


@functools.cache
def _integer_fields(shape: type[msgspec.Struct]) -> frozenset[str]:
    """The fields of ``shape`` that take an integer (alone or with null)."""
    names = set()
    for info in msgspec.inspect.type_info(shape).fields:
        kinds = info.type.types if isinstance(info.type, msgspec.inspect.UnionType) else (info.type,)
        # A description or schema note wraps the type in ``Metadata``.
        kinds = [kind.type if isinstance(kind, msgspec.inspect.Metadata) else kind for kind in kinds]
        if any(isinstance(kind, msgspec.inspect.IntType) for kind in kinds):
            names.add(info.encode_name)
    return frozenset(names)


@functools.cache
def _nested_structs(shape: type[msgspec.Struct]) -> dict[str, type[msgspec.Struct]]:
    """The fields of ``shape`` that hold a list of ``Struct`` (a row write's ``rows``), by their shape.

    Cached per shape, as ``_integer_fields`` is: ``msgspec.inspect.type_info`` walks the whole
    type and its annotations, and uncached it cost a 1-item append more CPU than the append itself."""
    nested = {}
    for info in msgspec.inspect.type_info(shape).fields:
        kind = info.type.type if isinstance(info.type, msgspec.inspect.Metadata) else info.type
        if isinstance(kind, msgspec.inspect.ListType):
            entry = kind.item_type.type if isinstance(kind.item_type, msgspec.inspect.Metadata) else kind.item_type
            if isinstance(entry, msgspec.inspect.StructType):
                nested[info.encode_name] = entry.cls
    return nested


def _integral_floats_as_ints(document: Any, shape: type[msgspec.Struct]) -> Any:
    """JSON Schema (and so the OpenAPI document) counts ``7.0`` as an integer; JSON parsers make it a float.
    Also in the entries of a list of ``Struct`` (``rows[].seq``)."""
    if not isinstance(document, dict):
        return document
    for name in _integer_fields(shape):
        value = document.get(name)
        if isinstance(value, float) and value.is_integer():
            document[name] = int(value)
    for name, entry_shape in _nested_structs(shape).items():
        entries = document.get(name)
        for entry in entries if isinstance(entries, list) else ():
            _integral_floats_as_ints(entry, entry_shape)
    return document
