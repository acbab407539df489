/**
 * limit=0, getLastItem, getLastAssistantMessage and projected source ranges, restating Paseo's
 * tests (sqlite-agent-timeline-store.test.ts, agent-timeline-store.test.ts) over a live chartr.
 * Seeded with plain appends, so they need storereads alone.
 */

import { describe, expect, it } from "vitest";

import { api, newAgent, store } from "./support/chartr.js";
import { assistant, seed } from "./support/seed.js";

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
    await seed(agentId, [assistant("ignored"), { type: "user_message", text: "hi" }, assistant("hello "), assistant("world")]);
    expect(await store().getLastAssistantMessage(agentId)).toBe("hello world");
  });

  // Paseo's stores disagree here: its SQLite store answers null when the tail is not assistant
  // text; its file store (and the in-memory one) answer the newest assistant message before it.
  // chartr answers as the file store does.
  it("is the newest assistant message even when other rows follow it, and null for an empty timeline", async () => {
    const agentId = await newAgent();
    expect(await store().getLastAssistantMessage(agentId)).toBeNull();
    await seed(agentId, [{ type: "user_message", text: "question" }]);
    expect(await store().getLastAssistantMessage(agentId)).toBeNull();
    await seed(agentId, [assistant("ans"), assistant("wer"), { type: "user_message", text: "later question" }]);
    expect(await store().getLastAssistantMessage(agentId)).toBe("answer");
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
