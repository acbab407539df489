/**
 * limit=0, getLastItem, getLastAssistantMessage and projected source ranges, restating Paseo's
 * tests (sqlite-agent-timeline-store.test.ts, agent-timeline-store.test.ts) over a live chartr.
 * The histories are seeded with bulkInsert (storewrites).
 */

import { describe, expect, it } from "vitest";

import { api, newAgent, store } from "../support/chartr.js";
import { row, userRow } from "../support/rows.js";
import { assistant, seed } from "../support/seed.js";

describe("limit 0", () => {
  it("answers every row in the window, past the largest page", async () => {
    const agentId = await newAgent();
    await seed(agentId, Array.from({ length: 1203 }, (_, index) => assistant(`row ${index + 1}`)));
    const timelines = store();
    const all = await timelines.fetchCommitted(agentId, { direction: "tail", limit: 0 });
    expect(all.rows).toHaveLength(1203);
    expect(all).toMatchObject({ hasOlder: false, hasNewer: false, window: { minSeq: 1, maxSeq: 1203 } });
    const { epoch } = all;
    const after = await timelines.fetchCommitted(agentId, { direction: "after", cursor: { epoch, seq: 1000 }, limit: 0 });
    expect(after.rows.map((entry) => entry.seq)).toEqual(Array.from({ length: 203 }, (_, index) => index + 1001));
    const before = await timelines.fetchCommitted(agentId, { direction: "before", cursor: { epoch, seq: 4 }, limit: 0 });
    expect(before.rows.map((entry) => entry.seq)).toEqual([1, 2, 3]);
  });
});

describe("getLastItem", () => {
  it("is the last row's item, and null for an empty timeline", async () => {
    const agentId = await newAgent();
    expect(await store().getLastItem(agentId)).toBeNull();
    await seed(agentId, [assistant("first"), { type: "user_message", text: "last" }]);
    expect(await store().getLastItem(agentId)).toEqual({ type: "user_message", text: "last" });
  });
});

describe("getLastAssistantMessage", () => {
  it("reconstructs the last assistant message from committed chunks", async () => {
    const agentId = await newAgent();
    await store().bulkInsert(agentId, [row(1, "ignored"), userRow(2, "hi"), row(3, "hello "), row(4, "world")]);
    expect(await store().getLastAssistantMessage(agentId)).toBe("hello world");
  });

  it("is null when the tail is not assistant text, and for an empty timeline", async () => {
    const agentId = await newAgent();
    expect(await store().getLastAssistantMessage(agentId)).toBeNull();
    await store().bulkInsert(agentId, [row(1, "answer"), userRow(2, "later question")]);
    expect(await store().getLastAssistantMessage(agentId)).toBeNull();
  });

  it("does not join different messages", async () => {
    const agentId = await newAgent();
    await seed(agentId, [
      assistant("First", { messageId: "first" }),
      assistant("Sec", { messageId: "second" }),
      assistant("ond", { messageId: "second" }),
    ]);
    expect(await store().getLastAssistantMessage(agentId)).toBe("Second");
  });
});

describe("cursors over a history that does not start at seq 1", () => {
  const trimmed = [row(5, "five"), row(6, "six"), row(7, "seven")];

  it("an after cursor behind the retained history is a reset with gap", async () => {
    const agentId = await newAgent();
    await store().bulkInsert(agentId, trimmed);
    const { epoch } = await store().fetchCommitted(agentId);
    const page = await store().fetchCommitted(agentId, { direction: "after", cursor: { epoch, seq: 1 }, limit: 1 });
    expect(page).toMatchObject({
      epoch,
      direction: "after",
      reset: true,
      staleCursor: false,
      gap: true,
      window: { minSeq: 5, maxSeq: 7, nextSeq: 8 },
      hasOlder: true,
      hasNewer: false,
    });
    expect(page.rows).toEqual([row(7, "seven")]);
  });

  it("an overshooting before cursor is clamped into the tail", async () => {
    const agentId = await newAgent();
    await store().bulkInsert(agentId, trimmed);
    const { epoch } = await store().fetchCommitted(agentId);
    const page = await store().fetchCommitted(agentId, { direction: "before", cursor: { epoch, seq: 100 }, limit: 2 });
    expect(page).toMatchObject({ reset: false, gap: false, hasOlder: true, hasNewer: false });
    expect(page.rows).toEqual([row(6, "six"), row(7, "seven")]);
  });
});

describe("projected source ranges", () => {
  it("each entry carries the seq ranges it was merged from", async () => {
    const agentId = await newAgent();
    await seed(agentId, [assistant("A", { messageId: "m" }), assistant("B", { messageId: "m" })]);
    const page = await store().fetchProjectedCommitted(agentId);
    expect(page.entries).toMatchObject([
      { item: { text: "AB" }, seqStart: 1, seqEnd: 2, sourceSeqRanges: [{ startSeq: 1, endSeq: 2 }] },
    ]);
    // On the wire, not only derived by the client from seq_start/seq_end.
    const wire = (await (await api(`/api/v1/agents/${agentId}/timeline?projection=projected`)).json()) as {
      rows: { source_seq_ranges?: number[][] }[];
    };
    expect(wire.rows[0]?.source_seq_ranges).toEqual([[1, 2]]);
  });
});
