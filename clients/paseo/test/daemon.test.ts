/**
 * Paseo's daemon as it really calls the store (getpaseo/paseo f3de5689,
 * packages/server/src/server/agent/agent-manager.ts): each committed row handed to bulkInsert on
 * its own and never awaited (enqueueDurableTimelineAppend, ~2855), hasCommittedUserMessage
 * whenever a durable store is set (~1800), and agents the daemon owns registered on first use.
 */

import { randomUUID } from "node:crypto";

import { describe, expect, it } from "vitest";

import { ChartrAgentTimelineStore, ChartrUnknownAgentError } from "../src/index.js";
import { api, chartr, newAgent, store } from "./support/chartr.js";
import { row } from "./support/rows.js";
import { seed } from "./support/seed.js";
import { TimelineStream } from "./support/stream.js";

const AGENTS = 20;
const ROWS = 10;

describe("the daemon's write pattern", () => {
  it("applies fire-and-forget single-row bulkInserts of many agents in the order issued", async () => {
    const agentIds = await Promise.all(Array.from({ length: AGENTS }, () => newAgent()));
    const timelines = store();
    const calls: Promise<void>[] = [];
    // As AgentManager does: one bulkInsert per committed row, never awaiting the previous one,
    // the agents' rows interleaved as their turns stream in.
    for (let seq = 1; seq <= ROWS; seq += 1) {
      for (const agentId of agentIds) calls.push(timelines.bulkInsert(agentId, [row(seq, `${agentId} ${seq}`)]));
    }
    const outcomes = await Promise.allSettled(calls);

    expect(outcomes.filter((outcome) => outcome.status === "rejected")).toEqual([]);
    for (const agentId of agentIds) {
      const rows = await store().getCommittedRows(agentId);
      expect(rows.map((entry) => entry.seq)).toEqual(Array.from({ length: ROWS }, (_, index) => index + 1));
      expect(rows.map((entry) => entry.item.text)).toEqual(
        Array.from({ length: ROWS }, (_, index) => `${agentId} ${index + 1}`),
      );
    }
  });

  it("keeps appends, inserts and row updates of one agent in the order they were called", async () => {
    const agentId = await newAgent();
    const timelines = store();
    const live = await TimelineStream.open(agentId, { after_seq: "0" });
    const calls: Promise<unknown>[] = [];
    let seq = 0;
    for (let round = 0; round < 8; round += 1) {
      calls.push(timelines.bulkInsert(agentId, [row(++seq, `inserted ${seq}`)]));
      calls.push(timelines.appendCommitted(agentId, { type: "assistant_message", text: `appended ${++seq}` }));
      calls.push(timelines.updateCommittedRow(agentId, row(seq - 1, `updated ${seq - 1}`)));
    }
    const outcomes = await Promise.allSettled(calls);
    expect(outcomes.filter((outcome) => outcome.status === "rejected")).toEqual([]);

    const rows = await timelines.getCommittedRows(agentId);
    const expected = Array.from({ length: seq }, (_, index) =>
      index % 2 === 0 ? `updated ${index + 1}` : `appended ${index + 1}`,
    );
    expect(rows.map((entry) => entry.item.text)).toEqual(expected);
    // A live reader missed none of them, in seq order.
    await live.next((event) => event.event === "committed" && (event.data as { seq: number }).seq === seq);
    const streamed = live.events("committed").map((event) => (event.data as { seq: number }).seq);
    await live.close();
    expect(streamed).toEqual(Array.from({ length: seq }, (_, index) => index + 1));
  });

  it("a read waits for the writes queued before it", async () => {
    const agentId = await newAgent();
    const timelines = store();
    void timelines.bulkInsert(agentId, [row(1, "one")]);
    void timelines.bulkInsert(agentId, [row(2, "two")]);
    expect(await timelines.getLatestCommittedSeq(agentId)).toBe(2);
  });

  it("refuses a row below the head on the wire: the client's order is the whole guarantee", async () => {
    const agentId = await newAgent();
    await store().bulkInsert(agentId, [row(2, "two")]);
    const late = await api(`/api/v1/agents/${agentId}/timeline/rows`, {
      method: "POST",
      body: JSON.stringify({
        rows: [{ seq: 1, item: { type: "assistant_message", text: "one" }, committed_at: "2026-01-01T00:00:01Z" }],
      }),
    });
    expect(late.status).toBe(409);
    expect(((await late.json()) as { error: { code: string } }).error.code).toBe("seq_conflict");
    expect((await store().getCommittedRows(agentId)).map((entry) => entry.seq)).toEqual([2]);
  });
});

describe("Paseo's own store cases on the interface alone", () => {
  // agent-timeline-store.test.ts (f3de5689), InMemoryAgentTimelineStore: "returns a bounded reset
  // window when an after cursor is behind retained history". Its store is seeded with
  // `initialize`; here the same rows 5..7 arrive through bulkInsert, which the interface has.
  it("returns a bounded reset window when an after cursor is behind retained history", async () => {
    const agentId = await newAgent();
    const timelines = store();
    await timelines.bulkInsert(agentId, [row(5, "five"), row(6, "six"), row(7, "seven")]);
    const { epoch } = await timelines.fetchCommitted(agentId, { limit: 1 });

    const result = await timelines.fetchCommitted(agentId, { direction: "after", cursor: { epoch, seq: 1 }, limit: 1 });

    expect(result).toEqual({
      epoch,
      direction: "after",
      reset: true,
      staleCursor: false,
      gap: true,
      window: { minSeq: 5, maxSeq: 7, nextSeq: 8 },
      hasOlder: true,
      hasNewer: false,
      rows: [row(7, "seven")],
    });
  });
});

describe("hasCommittedUserMessage", () => {
  // Paseo's InMemoryAgentTimelineStore.hasCommittedUserMessage (agent-timeline-store.ts, f3de5689):
  // a user_message whose messageId matches once both are trimmed, and whose text is the same.
  it("matches a user message by trimmed id and exact text", async () => {
    const agentId = await newAgent();
    await seed(agentId, [
      { type: "user_message", text: "fix the build", messageId: "  msg-1 " },
      { type: "assistant_message", text: "on it", messageId: "msg-2" },
      { type: "user_message", text: "no id" },
    ]);
    const timelines = store();
    expect(await timelines.hasCommittedUserMessage(agentId, { messageId: "msg-1", text: "fix the build" })).toBe(true);
    expect(await timelines.hasCommittedUserMessage(agentId, { messageId: " msg-1\n", text: "fix the build" })).toBe(
      true,
    );
    expect(await timelines.hasCommittedUserMessage(agentId, { messageId: "msg-1", text: "fix the build " })).toBe(
      false,
    );
    expect(await timelines.hasCommittedUserMessage(agentId, { messageId: "msg-3", text: "fix the build" })).toBe(false);
    expect(await timelines.hasCommittedUserMessage(agentId, { messageId: "msg-2", text: "on it" })).toBe(false);
    expect(await timelines.hasCommittedUserMessage(agentId, { messageId: "   ", text: "no id" })).toBe(false);
  });

  it("asks chartr once, whatever the history's length", async () => {
    const agentId = await newAgent();
    await seed(
      agentId,
      Array.from({ length: 1500 }, (_, index) => ({ type: "user_message", text: `t${index}`, messageId: `m${index}` })),
    );
    let requests = 0;
    const counting = new ChartrAgentTimelineStore({
      baseUrl: chartr().baseUrl,
      token: chartr().token,
      fetch: (input, init) => {
        requests += 1;
        return fetch(input, init);
      },
    });
    expect(await counting.hasCommittedUserMessage(agentId, { messageId: "m3", text: "t3" })).toBe(true);
    expect(requests).toBe(1);
  });
});

describe("agents the daemon owns", () => {
  it("registers an unknown agent on first use where chartr places its cwd, then writes", async () => {
    const agentId = `daemon-${randomUUID()}`;
    const cwd = `${chartr().workspaceDir}/packages/web`;
    const asked: string[] = [];
    const timelines = new ChartrAgentTimelineStore({
      baseUrl: chartr().baseUrl,
      token: chartr().token,
      registerAgent: (id) => {
        asked.push(id);
        return { cwd, provider: "claude", title: "Fix the web build" };
      },
    });
    await timelines.bulkInsert(agentId, [row(1, "one")]);
    await timelines.bulkInsert(agentId, [row(2, "two")]);

    expect(asked).toEqual([agentId]);
    const agent = (await (await api(`/api/v1/agents/${agentId}`)).json()) as Record<string, unknown>;
    expect(agent).toMatchObject({ workspace_id: chartr().workspaceId, cwd, provider: "claude", title: "Fix the web build" });
    expect((await timelines.getCommittedRows(agentId)).map((entry) => entry.seq)).toEqual([1, 2]);
  });

  it("leaves an agent the daemon does not name unknown", async () => {
    const timelines = new ChartrAgentTimelineStore({
      baseUrl: chartr().baseUrl,
      token: chartr().token,
      registerAgent: () => null,
    });
    await expect(timelines.bulkInsert(`nobody-${randomUUID()}`, [row(1, "one")])).rejects.toBeInstanceOf(
      ChartrUnknownAgentError,
    );
  });

  it("registerAgent is idempotent and places a new directory in a workspace of its own", async () => {
    const agentId = `daemon-${randomUUID()}`;
    const cwd = `/tmp/paseo-scratch-${randomUUID()}`;
    expect(await store().registerAgent(agentId, { cwd, provider: "codex" })).toBe(true);
    expect(await store().registerAgent(agentId, { cwd: "/elsewhere", provider: "claude" })).toBe(false);
    const agent = (await (await api(`/api/v1/agents/${agentId}`)).json()) as { workspace_id: number; cwd: string };
    const workspace = (await (await api(`/api/v1/workspaces/${agent.workspace_id}`)).json()) as { directory: string };
    expect([agent.cwd, workspace.directory]).toEqual([cwd, cwd]);
  });
});
