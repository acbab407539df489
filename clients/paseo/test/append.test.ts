import { describe, expect, it } from "vitest";

import { ChartrAgentTimelineStore } from "../src/index.js";
import { chartr, newAgent, store } from "./support/chartr.js";
import { assistant } from "./support/seed.js";

describe("appendCommitted", () => {
  it("commits items with contiguous seqs and answers Paseo's row", async () => {
    const agentId = await newAgent();
    const timelines = store();
    const first = await timelines.appendCommitted(agentId, { type: "user_message", text: "hello" });
    const second = await timelines.appendCommitted(agentId, assistant("hi"));
    expect(first).toMatchObject({ seq: 1, item: { type: "user_message", text: "hello" } });
    expect(second).toMatchObject({ seq: 2, item: assistant("hi") });
    expect(first.timestamp).toMatch(/Z$/);
    expect(Date.parse(second.timestamp)).toBeGreaterThanOrEqual(Date.parse(first.timestamp));

    const rows = await timelines.getCommittedRows(agentId);
    expect(rows.map(({ seq, timestamp, item }) => ({ seq, timestamp, item }))).toEqual([
      { seq: 1, timestamp: first.timestamp, item: first.item },
      { seq: 2, timestamp: second.timestamp, item: second.item },
    ]);
  });

  it("the row answered holds its own copy of the item", async () => {
    const item = { type: "assistant_message", text: "before", meta: { n: 1 } };
    const row = await store().appendCommitted(await newAgent(), item);
    item.meta.n = 2;
    expect(row.item).toEqual({ type: "assistant_message", text: "before", meta: { n: 1 } });
  });

  it("a row read back from another store instance is the same (nothing kept client-side)", async () => {
    const agentId = await newAgent();
    const appended = await store().appendCommitted(agentId, assistant("durable row"));
    const page = await store().fetchCommitted(agentId, { limit: 10 });
    expect(page.rows).toHaveLength(1);
    expect(page.rows[0]).toMatchObject({ seq: appended.seq, timestamp: appended.timestamp, item: appended.item });
  });

  it("concurrent appends get distinct contiguous seqs", async () => {
    const agentId = await newAgent();
    const timelines = store();
    const rows = await Promise.all(
      Array.from({ length: 12 }, (_, index) => timelines.appendCommitted(agentId, assistant(`chunk ${index}`))),
    );
    expect(rows.map((row) => row.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    const stored = await timelines.getCommittedRows(agentId);
    for (const row of rows) {
      expect(stored[row.seq - 1]?.item).toEqual(row.item);
    }
  });
});

describe("bulkInsert", () => {
  it("an empty bulkInsert sends nothing and succeeds", async () => {
    const sent: string[] = [];
    const timelines = new ChartrAgentTimelineStore({
      baseUrl: chartr().baseUrl,
      token: chartr().token,
      fetch: async (input, init) => {
        sent.push(String(input));
        return fetch(input, init);
      },
    });
    await timelines.bulkInsert(await newAgent(), []);
    expect(sent).toEqual([]);
  });

});
