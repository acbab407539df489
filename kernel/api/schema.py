"""OpenAPI for /api/: the error envelope, error responses on every operation, bearer auth.

Every operation documents the error statuses it can return, each pointing at
the one ``Error`` component, so the schema states the whole contract and the
fuzz test can hold the app to it.
"""

from __future__ import annotations

from functools import cache

from django.utils.module_loading import autodiscover_modules
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers

from kernel.api.parsers import NOT_ONLY_WHITESPACE
from kernel.errors import ChartrError

#: status → (the generic codes, when). Each app's refusals (``ChartrError`` subclasses in its
#: ``errors`` module) add their own codes, so the kernel names none of them: ``error_codes()``.
STATUS_MEANINGS: dict[int, tuple[tuple[str, ...], str]] = {
    400: (("invalid",), "The request is malformed or fails validation; `fields` names what is wrong."),
    401: (("not_authenticated",), "The bearer token is missing, malformed, unknown or revoked."),
    403: (("permission_denied",), "The token is read-only."),
    404: ((), "Nothing exists at this address."),
    406: (("not_acceptable",), "The `Accept` header names nothing this operation can send."),
    409: ((), "The change conflicts with the current state."),
    412: ((), "`If-Match` does not hold."),
    413: ((), "The request body is larger than the server's limit (1 MiB by default)."),
    415: (("unsupported_media_type",), "The request body is not `application/json`."),
    422: ((), "The request cannot be taken as sent."),
    429: (("throttled",), "Too many requests for this token; retry after `Retry-After` seconds."),
    500: (("server_error",), "An unexpected failure. The response carries no internals."),
}


def _refusals(base: type[ChartrError]) -> list[type[ChartrError]]:
    found = []
    for error in base.__subclasses__():
        found += [error, *_refusals(error)]
    return found


@cache
def error_codes() -> dict[int, tuple[tuple[str, ...], str]]:
    """status → (codes, when), for the docs and the tests: STATUS_MEANINGS with every app's refusals."""
    autodiscover_modules("errors")
    codes = {status: dict.fromkeys(generic) for status, (generic, _) in STATUS_MEANINGS.items()}
    meanings = {status: [when] for status, (_, when) in STATUS_MEANINGS.items()}
    for error in _refusals(ChartrError):
        if error.in_api and error.status in codes and error.code not in codes[error.status]:
            codes[error.status][error.code] = None
            if error.__doc__:
                meanings[error.status].append(f"`{error.code}`: {error.__doc__.split(chr(10))[0].strip()}")
    return {status: (tuple(codes[status]), " ".join(meanings[status])) for status in STATUS_MEANINGS}


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField(help_text="A stable, machine-readable code, e.g. `not_found`.")
    message = serializers.CharField(help_text="A readable sentence.")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Only on validation errors: the messages for each offending field.",
    )


class ErrorSerializer(serializers.Serializer):
    """``{"error": {"code", "message", "fields"?}}``, the shape of every error response."""

    error = ErrorBodySerializer()


def documents_errors(*statuses: int):
    """Add error statuses the generic rules cannot infer (e.g. 412) to one view method."""

    def decorate(func):
        func.chartr_error_statuses = tuple(statuses)
        return func

    return decorate


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema plus the error responses each operation can give: those
    ``error_statuses`` derives from the finished operation (so no view repeats them), 412 on the
    viewsets' operations (``If-Match``), and whatever a method adds with ``@documents_errors``."""

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return operation
        error_ref = self.resolve_serializer(ErrorSerializer, "response").ref
        responses = operation.setdefault("responses", {})
        for status in self.error_statuses(operation):
            responses.setdefault(str(status), error_response(status, error_ref))
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        result = super()._map_serializer_field(field, direction, bypass_extensions)
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and field.trim_whitespace
            and not field.allow_blank
            and result.get("type") in ("string", ["string", "null"])
            and not {"pattern", "format", "enum"} & set(result)
        ):
            # Trimmed text that may not be blank: whitespace alone is refused, so the schema says so.
            result["pattern"] = NOT_ONLY_WHITESPACE
        return result

    def error_statuses(self, operation: dict) -> list[int]:
        handler = getattr(self.view, getattr(self.view, "action", None) or self.method.lower(), None)
        extra = set(getattr(handler, "chartr_error_statuses", ()))
        if getattr(self.view, "if_match_actions", None) is not None:
            extra.add(412)  # ApiViewSet: If-Match is evaluated or refused, never ignored
        return error_statuses(self.method, operation, extra)


def error_statuses(method: str, operation: dict, extra=()) -> list[int]:
    """The error statuses an operation can answer, from what it takes (for DRF's views and the plain ones).

    Every operation can answer 400 (an unknown or broken query parameter is
    refused everywhere), 406 (a wrong ``Accept``), 401, 429 and 500; every
    write 413 and 415 too, with a body or without one (an archive that is
    sent a body still parses it), and 403 and 409; one with a path parameter 404.
    """
    locations = {parameter.get("in") for parameter in operation.get("parameters", [])}
    statuses = {400, 401, 406, 429, 500}
    if "requestBody" in operation or method not in ("GET", "HEAD", "OPTIONS"):
        statuses |= {413, 415}
    if method not in ("GET", "HEAD", "OPTIONS"):
        statuses |= {403, 409}
    if "path" in locations:
        statuses.add(404)
    return sorted(statuses | set(extra))


def error_response(status: int, error_ref) -> dict:
    codes, when = error_codes()[status]
    listed = ", ".join(f"`{code}`" for code in codes)
    return {"description": f"{when} Code: {listed}.", "content": {"application/json": {"schema": error_ref}}}


def forbid_unknown_request_fields(result, generator, request, public):
    """State two API-wide rules in the schema.

    Request bodies refuse unknown keys (StrictInputSerializer). An empty query
    parameter (``?kind=``) means the parameter was not given, as with HTML forms.
    """
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object":
            component.setdefault("additionalProperties", False)
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "query" and not parameter.get("required"):
                    parameter.setdefault("allowEmptyValue", True)
    return result
