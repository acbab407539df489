/** The mapping of chartr's wire shapes to Paseo's, on answers written out by hand. */

import { describe, expect, it } from "vitest";

import { entryFromWire, paseoTimestamp, rowFromWire, rowToWire, windowFromWire } from "../src/wire.js";

const wireRow = {
  seq: 3,
  committed_at: "2026-01-01T10:00:00.123456+00:00",
  item_type: "assistant_message",
  item: { type: "assistant_message", text: "hi" },
  item_id: "k",
  turn_id: null,
  provider_message_id: null,
  provider_timeline_item_id: null,
};

describe("timestamps", () => {
  it("are written as toISOString() writes them, in UTC, digits past the millisecond kept", () => {
    expect(paseoTimestamp("2026-01-01T10:00:00+00:00")).toBe("2026-01-01T10:00:00.000Z");
    expect(paseoTimestamp("2026-01-01T10:00:00.5+00:00")).toBe("2026-01-01T10:00:00.500Z");
    expect(paseoTimestamp("2026-01-01T10:00:00.123456+00:00")).toBe("2026-01-01T10:00:00.123456Z");
    expect(paseoTimestamp("2026-01-01T10:00:00.120000+00:00")).toBe("2026-01-01T10:00:00.120Z");
    expect(paseoTimestamp("2026-01-01T11:30:00.250+01:30")).toBe("2026-01-01T10:00:00.250Z");
    expect(paseoTimestamp("2026-01-01T00:30:00-02:00")).toBe("2026-01-01T02:30:00.000Z");
    expect(paseoTimestamp("2026-01-01T10:00:00.000Z")).toBe("2026-01-01T10:00:00.000Z");
  });
});

describe("rows", () => {
  it("leave out null keys and the wire-only ones", () => {
    expect(rowFromWire(wireRow)).toEqual({
      seq: 3,
      timestamp: "2026-01-01T10:00:00.123456Z",
      item: { type: "assistant_message", text: "hi" },
    });
  });

  it("keep an absent revert token absent and a null one null", () => {
    expect(rowFromWire(wireRow)).not.toHaveProperty("revertToken");
    expect(rowFromWire({ ...wireRow, revert_token: null })).toHaveProperty("revertToken", null);
    expect(rowFromWire({ ...wireRow, revert_token: { a: [1] } })).toHaveProperty("revertToken", { a: [1] });
  });

  it("map Paseo's keys to chartr's and back", () => {
    const row = {
      seq: 7,
      timestamp: "2026-01-01T10:00:00.000Z",
      item: { type: "user_message", text: "q" },
      turnId: "t",
      providerMessageId: "m",
      providerTimelineItemId: "p",
      revertToken: null,
    };
    const wire = rowToWire(row);
    expect(wire).toEqual({
      seq: 7,
      committed_at: "2026-01-01T10:00:00.000Z",
      item: { type: "user_message", text: "q" },
      turn_id: "t",
      provider_message_id: "m",
      provider_timeline_item_id: "p",
      revert_token: null,
    });
    expect(rowToWire({ seq: 1, timestamp: "2026-01-01T10:00:00.000Z", item: { type: "x" } })).toEqual({
      seq: 1,
      committed_at: "2026-01-01T10:00:00.000Z",
      item: { type: "x" },
    });
    expect(
      rowFromWire({ ...wire, committed_at: "2026-01-01T10:00:00+00:00", item_type: "user_message", item_id: null } as never),
    ).toEqual(row);
  });
});

describe("windows and projected entries", () => {
  it("an empty window has minSeq 0, whichever way chartr says nothing is retained", () => {
    expect(windowFromWire({ min_seq: 1, max_seq: 0, next_seq: 1 })).toEqual({ minSeq: 0, maxSeq: 0, nextSeq: 1 });
    expect(windowFromWire({ min_seq: 0, max_seq: 0, next_seq: 1 })).toEqual({ minSeq: 0, maxSeq: 0, nextSeq: 1 });
    expect(windowFromWire({ min_seq: 5, max_seq: 7, next_seq: 8 })).toEqual({ minSeq: 5, maxSeq: 7, nextSeq: 8 });
  });

  it("take chartr's source ranges, turn and collapse kinds when it answers them", () => {
    const entry = {
      seq_start: 1,
      seq_end: 3,
      committed_at: "2026-01-01T10:00:00+00:00",
      item_type: "assistant_message",
      item: { type: "assistant_message", text: "AB" },
      item_ids: [null, null],
      source_seq_ranges: [[1, 1], [3, 3]] as [number, number][],
      turn_id: "turn-1",
      collapsed: ["assistant_merge" as const],
    };
    expect(entryFromWire(entry)).toEqual({
      item: { type: "assistant_message", text: "AB" },
      turnId: "turn-1",
      timestamp: "2026-01-01T10:00:00.000Z",
      seqStart: 1,
      seqEnd: 3,
      sourceSeqRanges: [
        { startSeq: 1, endSeq: 1 },
        { startSeq: 3, endSeq: 3 },
      ],
      collapsed: ["assistant_merge"],
    });
  });
});
