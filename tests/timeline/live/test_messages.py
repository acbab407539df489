"""Live messages: their wire encoding and chunking under PostgreSQL's NOTIFY limit."""

from __future__ import annotations

import json

import pytest

from timeline.live.messages import (
    PG_NOTIFY_LIMIT,
    AgentsChanged,
    ChunkAssembler,
    Committed,
    Provisional,
    decode_message,
    encode_message,
    split_payload,
)


def test_messages_survive_encoding():
    for message in (
        Committed("a-1", 7, "e1"),
        AgentsChanged(("a-1", "a-2"), "archived"),
        Provisional("a-1", {"type": "assistant_message", "text": "hé\n"}, "k"),
    ):
        assert decode_message(encode_message(message, "origin1")) == ("origin1", message)
    for bad in ("", "{}", '{"k": "z", "o": "x"}', '{"k": "p", "o": "x", "a": "a", "i": [1], "d": null}'):
        with pytest.raises(ValueError):
            decode_message(bad)


def test_a_committed_message_is_the_json_of_its_fields():
    # Committed is written without json.dumps (it goes with every append); the text must stay the same.
    for message, origin in ((Committed("a-1", 7, "e1"), "o"), (Committed('agé"\\x\n', 12345678901, ""), "orïgin")):
        fields = {"k": "c", "a": message.agent_id, "s": message.head_seq, "e": message.epoch, "o": origin}
        assert encode_message(message, origin) == json.dumps(fields, separators=(",", ":"), ensure_ascii=True)


def test_large_payloads_are_chunked_under_the_notify_limit_and_reassembled():
    big = encode_message(Provisional("a", {"type": "x", "text": "é" * 20_000}), "o")
    small = encode_message(Committed("a", 1, "e"), "o")
    chunks = split_payload(big, "o.1")
    assert len(chunks) > 1
    assert all(len(chunk.encode()) <= PG_NOTIFY_LIMIT for chunk in chunks)
    assert split_payload(small, "o.2") == [small]

    assembler = ChunkAssembler()
    other = split_payload(big.replace("é", "e"), "o.3")
    # Interleaved with another chunked message and a whole one; out of order within a message.
    results = [assembler.feed(p) for p in [chunks[1], other[0], small, chunks[0], *other[1:], *chunks[2:]]]
    completed = [r for r in results if r is not None]
    assert completed == [small, big.replace("é", "e"), big]
    assert assembler.feed("#broken") is None
