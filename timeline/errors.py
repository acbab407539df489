"""The timeline's own refusals (the shared ones are in ``kernel.errors``)."""

from __future__ import annotations

from kernel.errors import Conflict


class SeqConflict(Conflict):
    """An append's expected_head_seq no longer matches; ``extra`` carries the current head."""

    code = "seq_conflict"


class ItemConflict(Conflict):
    """An ``item_id`` already committed with other content; ``extra`` carries its ``item_id`` and ``seq``."""

    code = "item_conflict"
