/** fetchProjectedCommitted: Paseo's projected page from chartr's `projection=projected`. */

import { describe, expect, it } from "vitest";

import { newAgent, store } from "./support/chartr.js";
import { assistant, seed } from "./support/seed.js";

describe("fetchProjectedCommitted", () => {
  it("merges a run of assistant chunks into one entry with its seq range", async () => {
    const agentId = await newAgent();
    await seed(agentId, [
      { type: "user_message", text: "question" },
      assistant("A"),
      assistant("B"),
      { type: "user_message", text: "more" },
      assistant("C"),
    ]);
    const page = await store().fetchProjectedCommitted(agentId);
    expect(page).toMatchObject({
      direction: "tail",
      reset: false,
      staleCursor: false,
      gap: false,
      window: { minSeq: 1, maxSeq: 5, nextSeq: 6 },
      hasOlder: false,
      hasNewer: false,
      startSeq: 1,
      endSeq: 5,
    });
    expect(page.entries.map(({ item, seqStart, seqEnd, collapsed }) => ({ item, seqStart, seqEnd, collapsed }))).toEqual([
      { item: { type: "user_message", text: "question" }, seqStart: 1, seqEnd: 1, collapsed: [] },
      { item: assistant("AB"), seqStart: 2, seqEnd: 3, collapsed: ["assistant_merge"] },
      { item: { type: "user_message", text: "more" }, seqStart: 4, seqEnd: 4, collapsed: [] },
      { item: assistant("C"), seqStart: 5, seqEnd: 5, collapsed: [] },
    ]);
    expect(page.entries[1]?.sourceSeqRanges).toEqual([{ startSeq: 2, endSeq: 3 }]);
    for (const entry of page.entries) expect(entry.timestamp).toMatch(/Z$/);
  });

  it("catches up an after cursor and keeps the epoch", async () => {
    const agentId = await newAgent();
    await seed(agentId, [assistant("one"), { type: "user_message", text: "two" }, assistant("three")]);
    const timelines = store();
    const { epoch } = await timelines.fetchCommitted(agentId, { limit: 1 });
    const page = await timelines.fetchProjectedCommitted(agentId, { direction: "after", cursor: { epoch, seq: 1 } });
    expect(page.epoch).toBe(epoch);
    expect(page.entries.map((entry) => entry.seqStart)).toEqual([2, 3]);
    expect(page).toMatchObject({ startSeq: 2, endSeq: 3, hasOlder: true, hasNewer: false });
  });

  it("answers a message whole when the cursor lies inside it, as Paseo's selectProjectedTimelinePage", async () => {
    // timeline-projection.ts (Paseo): the entries overlapping the page's seq range, each folded over
    // the whole timeline; startSeq/endSeq stay the canonical range the page covers.
    const agentId = await newAgent();
    await seed(agentId, [
      { type: "user_message", text: "question" },
      assistant("A", { messageId: "m-1" }),
      assistant("B", { messageId: "m-1" }),
      { type: "user_message", text: "more" },
    ]);
    const timelines = store();
    const { epoch } = await timelines.fetchCommitted(agentId, { limit: 1 });
    const after = await timelines.fetchProjectedCommitted(agentId, { direction: "after", cursor: { epoch, seq: 2 } });
    expect(after.entries.map(({ item, seqStart, seqEnd }) => ({ item, seqStart, seqEnd }))).toEqual([
      { item: assistant("AB", { messageId: "m-1" }), seqStart: 2, seqEnd: 3 },
      { item: { type: "user_message", text: "more" }, seqStart: 4, seqEnd: 4 },
    ]);
    expect(after).toMatchObject({ startSeq: 3, endSeq: 4, hasOlder: true, hasNewer: false });
    const before = await timelines.fetchProjectedCommitted(agentId, {
      direction: "before",
      cursor: { epoch, seq: 3 },
      limit: 1,
    });
    expect(before.entries.map((entry) => entry.item)).toEqual([assistant("AB", { messageId: "m-1" })]);
    expect(before).toMatchObject({ startSeq: 2, endSeq: 2, hasOlder: true, hasNewer: true });
  });

  it("an empty timeline has no entries and null bounds", async () => {
    const page = await store().fetchProjectedCommitted(await newAgent());
    expect(page).toMatchObject({ entries: [], rows: [], startSeq: null, endSeq: null });
  });
});
