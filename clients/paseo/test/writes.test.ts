/**
 * bulkInsert, replaceCommitted, deleteAgent and the backfill pair, restating Paseo's own store
 * tests (file-agent-timeline-store.test.ts, sqlite-agent-timeline-store.test.ts) where chartr
 * keeps Paseo's semantics, and chartr's contract where it differs (see README).
 */

import { randomUUID } from "node:crypto";

import { describe, expect, it } from "vitest";

import { ChartrAgentTimelineStore, ChartrConflictError, ChartrError, type AgentTimelineRow } from "../src/index.js";
import { api, chartr, newAgent, store } from "./support/chartr.js";
import { row, userRow } from "./support/rows.js";
import { assistant } from "./support/seed.js";
import { TimelineStream } from "./support/stream.js";

const AGENT_ROWS = [row(1, "one"), row(2, "two"), row(3, "three")];

describe("bulkInsert", () => {
  it("serves inserted rows, as given, to a store that never saw them written", async () => {
    const agentId = await newAgent();
    await store().bulkInsert(agentId, AGENT_ROWS);
    const page = await store().fetchCommitted(agentId, { direction: "tail", limit: 2 });
    expect(page.rows).toEqual(AGENT_ROWS.slice(1));
    expect(page).toMatchObject({ hasOlder: true, hasNewer: false, window: { minSeq: 1, maxSeq: 3, nextSeq: 4 } });
    expect(await store().getCommittedRows(agentId)).toEqual(AGENT_ROWS);
  });

  it("ignores rows whose seq was already committed with the same content", async () => {
    const agentId = await newAgent();
    const timelines = store();
    await timelines.bulkInsert(agentId, [row(1, "one"), row(2, "two")]);
    // Provider hydration can re-stream history the log already holds.
    await timelines.bulkInsert(agentId, [row(1, "one"), row(2, "two"), row(3, "three")]);
    expect((await timelines.getCommittedRows(agentId)).map((entry) => entry.seq)).toEqual([1, 2, 3]);
  });

  it("answers the same rows again with 200 and nothing inserted", async () => {
    const agentId = await newAgent();
    const body = JSON.stringify({
      rows: [{ seq: 1, item: { type: "assistant_message", text: "one" }, committed_at: "2026-01-01T00:00:01Z" }],
    });
    const first = await api(`/api/v1/agents/${agentId}/timeline/rows`, { method: "POST", body });
    const again = await api(`/api/v1/agents/${agentId}/timeline/rows`, { method: "POST", body });
    expect(first.status).toBe(201);
    expect(await first.json()).toMatchObject({ inserted: 1, head_seq: 1 });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ inserted: 0, head_seq: 1 });
  });

  it("a different row at a taken seq is a ChartrConflictError and the batch inserts nothing", async () => {
    const agentId = await newAgent();
    const timelines = store();
    await timelines.bulkInsert(agentId, [row(1, "one")]);
    const error = await timelines
      .bulkInsert(agentId, [row(1, "another one"), row(2, "two")])
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrConflictError);
    expect(error).toMatchObject({ status: 409, code: "seq_conflict" });
    expect(await timelines.getCommittedRows(agentId)).toEqual([row(1, "one")]);
  });

  it("commits a batch atomically: a refused row keeps the valid ones out too", async () => {
    const agentId = await newAgent();
    const bad = { seq: 2, timestamp: "2026-01-01T00:00:02.000Z", item: { type: "tool_call" } } as AgentTimelineRow;
    const error = await store().bulkInsert(agentId, [row(1, "one"), bad]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrError);
    expect(error).toMatchObject({ status: 400, code: "invalid" });
    expect(await store().getCommittedRows(agentId)).toEqual([]);
  });

  it("a retried bulkInsert whose answer was lost succeeds and stores the rows once", async () => {
    const agentId = await newAgent();
    let attempts = 0;
    const timelines = new ChartrAgentTimelineStore({
      baseUrl: chartr().baseUrl,
      token: chartr().token,
      retryDelayMs: 10,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        attempts += 1;
        if (attempts === 1) throw new TypeError("fetch failed (the answer was lost)");
        return response;
      },
    });
    await timelines.bulkInsert(agentId, AGENT_ROWS);
    expect(attempts).toBe(2);
    expect(await store().getCommittedRows(agentId)).toEqual(AGENT_ROWS);
  });

  it("keeps turnId, providerMessageId, providerTimelineItemId and revertToken, and tells a null token from none", async () => {
    const agentId = await newAgent();
    const rows: AgentTimelineRow[] = [
      row(1, "with everything", {
        turnId: "turn-1",
        providerMessageId: "msg-1",
        providerTimelineItemId: "item-1",
        revertToken: { checkpoint: "abc", offsets: [1, 2] },
      }),
      row(2, "null token", { revertToken: null }),
      row(3, "no token"),
    ];
    await store().bulkInsert(agentId, rows);
    const read = await store().getCommittedRows(agentId);
    expect(read).toEqual(rows);
    expect(read[1]).toHaveProperty("revertToken", null);
    expect(read[2]).not.toHaveProperty("revertToken");
  });
});

describe("appendCommitted with Paseo's options", () => {
  it("stores the timestamp and turnId it is given", async () => {
    const agentId = await newAgent();
    const appended = await store().appendCommitted(agentId, assistant("timed"), {
      timestamp: "2026-03-04T05:06:07.890Z",
      turnId: "turn-7",
    });
    expect(appended).toEqual({ seq: 1, timestamp: "2026-03-04T05:06:07.890Z", item: assistant("timed"), turnId: "turn-7" });
    expect(await store().getCommittedRows(agentId)).toEqual([appended]);
  });
});

describe("replaceCommitted", () => {
  const priorRows: AgentTimelineRow[] = [{ ...userRow(1, "prior complete timeline"), turnId: "turn-prior" }];
  const replacementRows: AgentTimelineRow[] = [
    { ...userRow(1, "replacement row one"), turnId: "turn-replacement" },
    { ...row(2, "replacement row two"), turnId: "turn-replacement" },
  ];

  it("atomically keeps prior truth after a refused replacement, then replaces under a new epoch", async () => {
    const agentId = await newAgent();
    const timelines = store();
    await timelines.bulkInsert(agentId, priorRows);
    const prior = await timelines.fetchCommitted(agentId, { limit: 0 });

    const refused = [...replacementRows, { seq: 3, timestamp: "2026-01-01T00:00:03.000Z", item: { type: "todo" } }];
    await expect(timelines.replaceCommitted(agentId, refused as AgentTimelineRow[])).rejects.toMatchObject({
      status: 400,
    });
    expect(await store().getCommittedRows(agentId)).toEqual(priorRows);
    expect((await store().fetchCommitted(agentId, { limit: 0 })).epoch).toBe(prior.epoch);

    const result = await timelines.replaceCommitted(agentId, replacementRows);
    expect(Object.keys(result)).toEqual(["epoch"]);
    expect(result.epoch).not.toBe(prior.epoch);
    const after = await store().fetchCommitted(agentId, { limit: 0 });
    expect(after).toMatchObject({ epoch: result.epoch, window: { minSeq: 1, maxSeq: 2, nextSeq: 3 } });
    expect(after.rows).toEqual(replacementRows);
  });

  it("an old cursor gets a reset with staleCursor, and a live reader gets a reset event", async () => {
    const agentId = await newAgent();
    await store().bulkInsert(agentId, priorRows);
    const { epoch } = await store().fetchCommitted(agentId);
    const stream = await TimelineStream.open(agentId, { after_seq: "1", epoch });
    try {
      const { epoch: replaced } = await store().replaceCommitted(agentId, replacementRows);
      const page = await store().fetchCommitted(agentId, { direction: "after", cursor: { epoch, seq: 1 } });
      expect(page).toMatchObject({ epoch: replaced, reset: true, staleCursor: true });
      expect(page.rows).toEqual(replacementRows);
      await stream.next((event) => event.event === "reset");
    } finally {
      await stream.close();
    }
  });
});

describe("deleteAgent", () => {
  it("drops the rows and mints a new epoch; the next append is seq 1", async () => {
    const agentId = await newAgent();
    const timelines = store();
    const empty = await timelines.fetchCommitted(agentId, { limit: 0 });
    expect(empty).toMatchObject({ rows: [], window: { nextSeq: 1 } });
    await timelines.bulkInsert(agentId, [row(1, "durable row")]);
    expect(await store().fetchCommitted(agentId, { limit: 0 })).toMatchObject({
      epoch: empty.epoch,
      rows: [{ seq: 1, item: { type: "assistant_message", text: "durable row" } }],
      window: { nextSeq: 2 },
    });

    await timelines.deleteAgent(agentId);
    const deleted = await timelines.fetchCommitted(agentId, { limit: 0 });
    expect(deleted).toMatchObject({ rows: [], window: { nextSeq: 1 } });
    expect(deleted.epoch).not.toBe(empty.epoch);
    expect(await timelines.getLatestCommittedSeq(agentId)).toBe(0);
    expect((await timelines.appendCommitted(agentId, assistant("again"))).seq).toBe(1);
  });

  it("a live reader gets a reset event", async () => {
    const agentId = await newAgent();
    await store().bulkInsert(agentId, [row(1, "one")]);
    const { epoch } = await store().fetchCommitted(agentId);
    const stream = await TimelineStream.open(agentId, { after_seq: "1", epoch });
    try {
      await store().deleteAgent(agentId);
      await stream.next((event) => event.event === "reset");
    } finally {
      await stream.close();
    }
  });
});

describe("beginBackfill and completeBackfill", () => {
  it("begin drops every row and keeps the epoch; pages say backfilling until complete", async () => {
    const agentId = await newAgent();
    const timelines = store();
    await timelines.bulkInsert(agentId, [row(1, "truncated prefix"), row(2, "of an earlier try")]);
    const { epoch } = await timelines.fetchCommitted(agentId);

    await timelines.beginBackfill(agentId);
    const during = await timelines.fetchCommitted(agentId, { limit: 0 });
    expect(during).toMatchObject({ epoch, rows: [] });
    const raw = (await (await api(`/api/v1/agents/${agentId}/timeline`)).json()) as { backfilling: boolean };
    expect(raw.backfilling).toBe(true);

    // Replay assigns seqs from 1 again.
    await timelines.bulkInsert(agentId, AGENT_ROWS);
    await timelines.completeBackfill(agentId);
    const done = (await (await api(`/api/v1/agents/${agentId}/timeline`)).json()) as { backfilling: boolean };
    expect(done.backfilling).toBe(false);
    expect(await timelines.getCommittedRows(agentId)).toEqual(AGENT_ROWS);
  });

  it("both are safe to repeat", async () => {
    const agentId = await newAgent();
    const timelines = store();
    await timelines.beginBackfill(agentId);
    await timelines.beginBackfill(agentId);
    await timelines.bulkInsert(agentId, [row(1, "one")]);
    await timelines.completeBackfill(agentId);
    await timelines.completeBackfill(agentId);
    expect(await timelines.getCommittedRows(agentId)).toEqual([row(1, "one")]);
  });
});

// Needs storereads too (a gap answers a fresh tail; the window of a history starting past 1).
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

describe("bulkInsert and replaceCommitted with more than 1000 rows", () => {
  function countingStore(writes: string[]): ChartrAgentTimelineStore {
    return new ChartrAgentTimelineStore({
      baseUrl: chartr().baseUrl,
      token: chartr().token,
      fetch: (input, init) => {
        if (init?.method === "POST" || init?.method === "PUT") writes.push(`${init.method} ${String(input)}`);
        return fetch(input, init);
      },
    });
  }

  function paseoRows(count: number, turn: string): AgentTimelineRow[] {
    return Array.from({ length: count }, (_, index) =>
      row(index + 1, `${turn} chunk ${index + 1}`, {
        turnId: `${turn}-${Math.floor(index / 10)}`,
        providerMessageId: randomUUID(),
        providerTimelineItemId: `item-${index + 1}`,
      }),
    );
  }

  it("sends every row in one call, all or nothing, and reads them back whole", async () => {
    const agentId = await newAgent();
    const writes: string[] = [];
    const rows = paseoRows(2500, "turn");
    await countingStore(writes).bulkInsert(agentId, rows);
    expect(writes).toHaveLength(1);
    expect(await store().getCommittedRows(agentId)).toEqual(rows);

    const conflicting = [...rows, row(2501, "new")];
    conflicting[2498] = { ...conflicting[2498]!, turnId: "another-turn" };
    await expect(countingStore(writes).bulkInsert(agentId, conflicting)).rejects.toBeInstanceOf(ChartrConflictError);
    expect(writes).toHaveLength(2);
    expect((await store().fetchCommitted(agentId, { direction: "tail", limit: 1 })).window.maxSeq).toBe(2500);
  });

  it("replaces a history with 2500 rows in one call under a new epoch", async () => {
    const agentId = await newAgent();
    await store().bulkInsert(agentId, paseoRows(5, "old"));
    const before = (await store().fetchCommitted(agentId, { limit: 1 })).epoch;
    const writes: string[] = [];
    const rows = paseoRows(2500, "new");
    const { epoch } = await countingStore(writes).replaceCommitted(agentId, rows);
    expect(writes).toHaveLength(1);
    expect(epoch).not.toBe(before);
    expect(await store().getCommittedRows(agentId)).toEqual(rows);
  });
});
