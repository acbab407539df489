"""OpenAPI for timeline items: one component per known type, built from the declaration the
server validates with (``timeline.items.KNOWN_ITEM_TYPES``), plus ``OtherItem`` for the types
it accepts without knowing them. (The live stream's operation is declared beside its view:
timeline/live/openapi.py.)
"""

from __future__ import annotations

from timeline.items import KNOWN_ITEM_TYPES, MAX_ITEM_TYPE_LENGTH


def schema_ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def item_component_name(item_type: str) -> str:
    return "".join(part.capitalize() for part in item_type.split("_")) + "Item"


def item_components() -> dict[str, dict]:
    """``TimelineItem`` (a ``oneOf`` keyed by ``type``), one component per known type, and ``OtherItem``."""
    components: dict[str, dict] = {}
    for item_type, fields in KNOWN_ITEM_TYPES.items():
        components[item_component_name(item_type)] = {
            "type": "object",
            "description": f"A `{item_type}` item. Further keys are kept as sent.",
            "properties": {"type": {"type": "string", "const": item_type}, **fields},
            "required": ["type", *fields],
            "additionalProperties": True,
        }
    components["OtherItem"] = {
        "type": "object",
        "description": "An item of a type this server does not know: only `type` is checked, "
        "so newer agents can store new kinds. Further keys are kept as sent.",
        "properties": {
            "type": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_ITEM_TYPE_LENGTH,
                "not": {"enum": list(KNOWN_ITEM_TYPES)},
            }
        },
        "required": ["type"],
        "additionalProperties": True,
    }
    known = ", ".join(f"`{item_type}`" for item_type in KNOWN_ITEM_TYPES)
    components["TimelineItem"] = {
        "description": f"A timeline item, discriminated by its `type`: {known} each have their own schema "
        "with their required fields; any other `type` is `OtherItem`. (No `discriminator` object: the set of "
        "types is open, and a discriminator mapping would call every other type an error.)",
        "oneOf": [schema_ref(name) for name in components],
    }
    return components


def document_item_types(result, generator, request, public):
    result.setdefault("components", {}).setdefault("schemas", {}).update(item_components())
    return result
