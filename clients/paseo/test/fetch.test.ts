/**
 * fetchCommitted and the reads built on it, against a live chartr. The paging cases restate
 * Paseo's own (sqlite-agent-timeline-store.test.ts "matches the in-memory store": each request
 * shape over the rows 1..5, with the flags Paseo's in-memory store answers).
 */

import { beforeAll, describe, expect, it } from "vitest";

import type { AgentTimelineFetchOptions } from "../src/index.js";
import { newAgent, store } from "./support/chartr.js";
import { assistant, seed } from "./support/seed.js";

describe("fetchCommitted over rows 1..5", () => {
  let agentId: string;
  let epoch: string;
  const texts = ["one", "two", "three", "four", "five"];

  beforeAll(async () => {
    agentId = await newAgent();
    await seed(agentId, texts.map((text) => assistant(text)));
    epoch = (await store().fetchCommitted(agentId)).epoch;
  });

  const cases: Array<{ name: string; options: () => AgentTimelineFetchOptions; seqs: number[]; flags: object }> = [
    { name: "tail default limit", options: () => ({ direction: "tail" }), seqs: [1, 2, 3, 4, 5], flags: { hasOlder: false, hasNewer: false } },
    { name: "tail limit 2", options: () => ({ direction: "tail", limit: 2 }), seqs: [4, 5], flags: { hasOlder: true, hasNewer: false } },
    { name: "tail limit beyond size", options: () => ({ direction: "tail", limit: 99 }), seqs: [1, 2, 3, 4, 5], flags: { hasOlder: false, hasNewer: false } },
    { name: "after seq 0", options: () => ({ direction: "after", cursor: { epoch, seq: 0 } }), seqs: [1, 2, 3, 4, 5], flags: { hasOlder: false, hasNewer: false } },
    { name: "after seq 2 limit 2", options: () => ({ direction: "after", cursor: { epoch, seq: 2 }, limit: 2 }), seqs: [3, 4], flags: { hasOlder: true, hasNewer: true } },
    { name: "after last seq", options: () => ({ direction: "after", cursor: { epoch, seq: 5 }, limit: 2 }), seqs: [], flags: { hasOlder: true, hasNewer: false } },
    { name: "before without cursor", options: () => ({ direction: "before", limit: 2 }), seqs: [4, 5], flags: { hasOlder: true, hasNewer: false } },
    { name: "before seq 4 limit 2", options: () => ({ direction: "before", cursor: { epoch, seq: 4 }, limit: 2 }), seqs: [2, 3], flags: { hasOlder: true, hasNewer: true } },
    { name: "before seq 1", options: () => ({ direction: "before", cursor: { epoch, seq: 1 }, limit: 2 }), seqs: [], flags: { hasOlder: false, hasNewer: true } },
  ];

  for (const { name, options, seqs, flags } of cases) {
    it(`agrees with Paseo on ${name}`, async () => {
      const request = options();
      const page = await store().fetchCommitted(agentId, request);
      expect(page).toMatchObject({
        epoch,
        direction: request.direction,
        reset: false,
        staleCursor: false,
        gap: false,
        window: { minSeq: 1, maxSeq: 5, nextSeq: 6 },
        ...flags,
      });
      expect(page.rows.map((row) => row.seq)).toEqual(seqs);
      expect(page.rows.map((row) => row.item)).toEqual(seqs.map((seq) => assistant(texts[seq - 1] as string)));
    });
  }

  it("answers a stale cursor epoch with a reset tail", async () => {
    const page = await store().fetchCommitted(agentId, {
      direction: "after",
      cursor: { epoch: "other-epoch", seq: 2 },
      limit: 2,
    });
    expect(page).toMatchObject({
      epoch,
      reset: true,
      staleCursor: true,
      gap: false,
      window: { minSeq: 1, maxSeq: 5, nextSeq: 6 },
      hasOlder: true,
      hasNewer: false,
    });
    expect(page.rows.map((row) => row.seq)).toEqual([4, 5]);
  });

  it("maps each row to Paseo's camelCase row with an ISO timestamp", async () => {
    const [row] = (await store().fetchCommitted(agentId, { limit: 1 })).rows;
    expect(row).toMatchObject({ seq: 5, item: assistant("five") });
    expect(row?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3,6}Z$/);
    expect(Date.parse(row?.timestamp as string)).toBeGreaterThan(Date.parse("2020-01-01T00:00:00Z"));
    expect(Object.keys(row as object)).not.toContain("item_id");
    expect(row).not.toHaveProperty("turnId");
  });
});

describe("reads of a whole timeline", () => {
  it("reads only the requested page of a long conversation", async () => {
    const agentId = await newAgent();
    await seed(agentId, Array.from({ length: 500 }, (_, index) => assistant(`row ${index}`)));
    const page = await store().fetchCommitted(agentId, { direction: "tail", limit: 10 });
    expect(page.rows).toHaveLength(10);
    expect(page.rows[0]?.seq).toBe(491);
    expect(page.window).toEqual({ minSeq: 1, maxSeq: 500, nextSeq: 501 });
  });

  it("getCommittedRows answers every row in seq order, past one page", async () => {
    const agentId = await newAgent();
    await seed(agentId, Array.from({ length: 1203 }, (_, index) => assistant(`row ${index + 1}`)));
    const rows = await store().getCommittedRows(agentId);
    expect(rows).toHaveLength(1203);
    expect(rows.map((row) => row.seq)).toEqual(Array.from({ length: 1203 }, (_, index) => index + 1));
    expect(rows[1202]?.item).toEqual(assistant("row 1203"));
  });

  it("getLatestCommittedSeq is 0 for an empty timeline and the head after appends", async () => {
    const agentId = await newAgent();
    const timelines = store();
    expect(await timelines.getLatestCommittedSeq(agentId)).toBe(0);
    expect(await timelines.getCommittedRows(agentId)).toEqual([]);
    await seed(agentId, [assistant("a"), assistant("b"), assistant("c")]);
    expect(await timelines.getLatestCommittedSeq(agentId)).toBe(3);
  });

  it("an empty timeline has Paseo's empty window and an epoch", async () => {
    const agentId = await newAgent();
    const page = await store().fetchCommitted(agentId);
    expect(page).toMatchObject({
      rows: [],
      window: { minSeq: 0, maxSeq: 0, nextSeq: 1 },
      hasOlder: false,
      hasNewer: false,
      reset: false,
    });
    expect(page.epoch).toEqual(expect.any(String));
    expect(page.epoch.length).toBeGreaterThan(0);
  });
});
