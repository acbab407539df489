/** What a live reader of the stream sees of the store's writes. */

import { describe, expect, it } from "vitest";

import { newAgent, store } from "./support/chartr.js";
import { assistant } from "./support/seed.js";
import { TimelineStream } from "./support/stream.js";

describe("a live reader", () => {
  it("sees each appendCommitted as a committed event with the same row", async () => {
    const agentId = await newAgent();
    const { epoch } = await store().fetchCommitted(agentId);
    const stream = await TimelineStream.open(agentId, { after_seq: "0", epoch });
    try {
      const row = await store().appendCommitted(agentId, assistant("live"));
      const event = await stream.next((candidate) => candidate.event === "committed");
      expect(event.id).toBe(String(row.seq));
      expect(event.data).toMatchObject({ seq: row.seq, item: assistant("live"), item_type: "assistant_message" });
    } finally {
      await stream.close();
    }
  });
});
