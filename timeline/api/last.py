"""``GET …/timeline/last-item``, ``GET …/timeline/last-assistant-message`` and
``GET …/timeline/user-messages``: plain views on the API's lean path (kernel/api/plain.py), reading
through timeline/reads/last.py."""

from __future__ import annotations

from typing import Annotated

import msgspec

from kernel.api.plain import Answer, Operation, json_view
from kernel.api.schema_text import NUL_FREE
from timeline.api.shapes import LastAssistantMessage, LastItem, UserMessageMatches
from timeline.items import MAX_ITEM_ID_LENGTH
from timeline.reads import last as last_reads
from tokens.access import authorize


def read_last_item(*, agent_id: str) -> Answer:
    found = last_reads.last_item(agent_id=agent_id)
    return Answer(LastItem(seq=found.seq, item=found.item))


def read_last_assistant_message(*, agent_id: str) -> Answer:
    found = last_reads.last_assistant_message(agent_id=agent_id)
    return Answer(LastAssistantMessage(text=found.text, seq_start=found.seq_start, seq_end=found.seq_end))


class UserMessageQuery(msgspec.Struct, forbid_unknown_fields=True):
    message_id: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            max_length=MAX_ITEM_ID_LENGTH,
            pattern=NUL_FREE + r"[\s\S]*\S",
            description="The user message's id (Paseo's messageId); compared trimmed, as Paseo compares it.",
        ),
    ]


def read_user_messages(*, agent_id: str, query: UserMessageQuery) -> Answer:
    texts = last_reads.user_message_texts(agent_id=agent_id, message_id=query.message_id)
    return Answer(UserMessageMatches(message_id=query.message_id.strip(), texts=texts))


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

user_messages = json_view(
    Operation(
        "GET",
        read_user_messages,
        operation_id="timeline_user_messages",
        summary="The committed user messages with one message id",
        description=(
            "Paseo's hasCommittedUserMessage in one request: the texts of the `user_message` rows whose "
            "`messageId`, trimmed, is `message_id` trimmed, oldest first (at most 100). The message is "
            "committed when one of them equals its text."
        ),
        query=UserMessageQuery,
        responses={200: UserMessageMatches},
        tags=("timeline",),
    ),
    authorize=authorize,
)
