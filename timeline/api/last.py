"""``GET …/timeline/last-item`` and ``GET …/timeline/last-assistant-message``: plain views on the
API's lean path (kernel/api/plain.py), reading through timeline/reads/last.py."""

from __future__ import annotations

from kernel.api.plain import Answer, Operation, json_view
from timeline.api.shapes import LastAssistantMessage, LastItem
from timeline.reads import last as last_reads
from tokens.access import authorize


def read_last_item(*, agent_id: str) -> Answer:
    found = last_reads.last_item(agent_id=agent_id)
    return Answer(LastItem(seq=found.seq, item=found.item))


def read_last_assistant_message(*, agent_id: str) -> Answer:
    found = last_reads.last_assistant_message(agent_id=agent_id)
    return Answer(LastAssistantMessage(text=found.text, seq_start=found.seq_start, seq_end=found.seq_end))


last_item = json_view(
    Operation(
        "GET",
        read_last_item,
        operation_id="timeline_last_item",
        summary="The newest committed row's seq and item",
        description='Paseo\'s getLastItem: `{"seq": null, "item": null}` for a timeline with no row.',
        responses={200: LastItem},
        tags=("timeline",),
    ),
    authorize=authorize,
)

last_assistant_message = json_view(
    Operation(
        "GET",
        read_last_assistant_message,
        operation_id="timeline_last_assistant_message",
        summary="The newest assistant message, its chunks joined",
        description=(
            "Paseo's getLastAssistantMessage: the text of the newest assistant message (the chunks of one "
            "message joined in seq order, never two messages) and the seqs of its first and last chunk; "
            "all null when the timeline has no assistant_message."
        ),
        responses={200: LastAssistantMessage},
        tags=("timeline",),
    ),
    authorize=authorize,
)
