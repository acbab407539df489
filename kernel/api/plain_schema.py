"""OpenAPI for the plain views (kernel/api/plain.py), generated from their msgspec shapes.

drf-spectacular documents DRF's views; this post-processing hook adds each plain view's
operations at the path ``urls.py`` gives it, with components from
``msgspec.json.schema_components`` (request shapes get drf-spectacular's ``Request``
suffix) and the same error responses every DRF operation gets (kernel/api/schema.py).
A view ``json_view`` cannot serve states its operation beside itself (``DescribedOperation``,
the live stream); this hook only places it, with its path parameters and query parameters.
"""

from __future__ import annotations

import re

import msgspec
from django.urls import URLResolver, get_resolver

from kernel.api.plain import DescribedOperation, Operation
from kernel.api.schema import error_response, error_statuses

COMPONENTS = "#/components/schemas/"
_CONVERTER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def plain_endpoints(patterns=None, prefix: str = "/"):
    """``(OpenAPI path, path parameters, operations)`` of every plain view in the URL configuration."""
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from plain_endpoints(pattern.url_patterns, route)
        elif getattr(pattern.callback, "chartr_operations", None):
            parameters = [
                {
                    "in": "path",
                    "name": match["name"],
                    "schema": {"type": "integer" if match["converter"] == "int" else "string"},
                    "required": True,
                }
                for match in _CONVERTER.finditer(route)
            ]
            yield _CONVERTER.sub(r"{\g<name>}", route), parameters, pattern.callback.chartr_operations


def _components(shapes, suffix: str) -> dict[str, dict]:
    _, components = msgspec.json.schema_components(shapes, ref_template=COMPONENTS + "{name}" + suffix)
    for component in components.values():
        component.pop("title", None)
    return {name + suffix: component for name, component in components.items()}


def query_parameters(shape) -> list[dict]:
    (ref,), components = msgspec.json.schema_components([shape], ref_template=COMPONENTS + "{name}")
    component = components[ref["$ref"].rsplit("/", 1)[1]]
    required = set(component.get("required", ()))
    parameters = []
    for name, schema in component["properties"].items():
        schema = dict(schema)
        parameter = {"in": "query", "name": name, "required": name in required}
        if "anyOf" in schema:  # optional: "absent" is how a query says null
            default = schema.pop("default", None)
            schema = {**next(s for s in schema.pop("anyOf") if s.get("type") != "null"), **schema}
            if default is not None:
                schema["default"] = default
        if "enum" in schema and all(isinstance(value, str) for value in schema["enum"]):
            schema = {"type": "string", **schema}
        if "description" in schema:
            parameter["description"] = schema.pop("description")
        parameter["schema"] = schema
        parameters.append(parameter)
    return parameters


def _operation(operation: Operation, path_parameters: list[dict]) -> dict:
    document: dict = {"operationId": operation.operation_id, "summary": operation.summary}
    if operation.description:
        document["description"] = operation.description
    document["parameters"] = [*path_parameters, *(query_parameters(operation.query) if operation.query else [])]
    document["tags"] = list(operation.tags)
    if operation.body is not None:
        document["requestBody"] = {
            "content": {"application/json": {"schema": {"$ref": f"{COMPONENTS}{operation.body.__name__}Request"}}},
            "required": True,
        }
    document["security"] = [{"bearerAuth": []}]
    responses = {
        str(status): {
            "content": {"application/json": {"schema": {"$ref": COMPONENTS + shape.__name__}}},
            "description": "",
        }
        for status, shape in operation.responses.items()
    }
    for status in error_statuses(operation.method, document, operation.error_statuses):
        responses[str(status)] = error_response(status, {"$ref": COMPONENTS + "Error"})
    document["responses"] = dict(sorted(responses.items()))
    return document


def _described_operation(operation: DescribedOperation, path_parameters: list[dict]) -> dict:
    query = query_parameters(operation.query) if operation.query else []
    document: dict = {"operationId": operation.operation_id, "summary": operation.summary}
    if operation.description:
        document["description"] = operation.description
    document["parameters"] = [*path_parameters, *query, *operation.headers]
    document["tags"] = list(operation.tags)
    document["security"] = list(operation.security)
    document["responses"] = dict(sorted(operation.responses.items()))
    return document


def document_plain_views(result, generator, request, public):
    """drf-spectacular post-processing hook: the plain views' operations and their shapes' components."""
    components = result.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    paths = result.setdefault("paths", {})
    for path, path_parameters, operations in plain_endpoints():
        item = paths.setdefault(path, {})
        for operation in operations:
            if isinstance(operation, DescribedOperation):
                item[operation.method.lower()] = _described_operation(operation, path_parameters)
                schemas.update(operation.schemas)
                components.setdefault("securitySchemes", {}).update(operation.security_schemes)
                continue
            item[operation.method.lower()] = _operation(operation, path_parameters)
            if operation.body is not None:
                schemas.update(_components([operation.body], "Request"))
            schemas.update(_components(list(operation.responses.values()), ""))
            for name, shapes in operation.one_of:
                schemas.update(_components(list(shapes), ""))
                schemas[name] = {"oneOf": [{"$ref": COMPONENTS + shape.__name__} for shape in shapes]}
    result["paths"] = dict(sorted(paths.items()))
    return result
