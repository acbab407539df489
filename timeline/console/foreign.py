"""How the console shows records another program wrote (``timeline.items.FOREIGN_NAMESPACES``).

The app that takes in a program's records (``claude_code``, ``codex``) registers, in its
``AppConfig.ready``, a translator: one stored record in, the chartr items it reads as out
(``user_message``, ``assistant_message``, ``reasoning``, ``tool_call`` with its ``callId`` so a call
pairs with its result, ...; an empty list for a record with nothing to show). The timeline page
renders those items as it renders its own, and keeps the untouched record one click away.
The timeline never imports those apps: they depend on it, not the other way round.
"""

from __future__ import annotations

from collections.abc import Callable

Translator = Callable[[dict], list[dict]]

_translators: dict[str, Translator] = {}


def register_translator(namespace: str, translate: Translator) -> None:
    """``translate`` turns one ``namespace`` record into the items the console shows for it."""
    _translators[namespace] = translate


def shown_items(item: object) -> list[dict] | None:
    """The items the console shows for a foreign ``item``; None for chartr's own items, and for a
    namespace no app translates (the page then shows the record as it is)."""
    if not isinstance(item, dict):
        return None
    item_type = item.get("type")
    if not isinstance(item_type, str) or "." not in item_type:
        return None
    translate = _translators.get(item_type.split(".", 1)[0])
    record = item.get("record")
    if translate is None or not isinstance(record, dict):
        return None
    return translate(record)
