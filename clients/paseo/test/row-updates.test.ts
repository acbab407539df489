/** updateCommittedRow: the row changes in place, and a live reader sees it as an `updated` event. */

import { describe, expect, it } from "vitest";

import type { AgentTimelineRow } from "../src/index.js";
import { api, newAgent, store } from "./support/chartr.js";
import { assistant, seed } from "./support/seed.js";
import { TimelineStream } from "./support/stream.js";

const runningTool = { type: "tool_call", callId: "call-1", name: "shell", status: "running" };
const completedTool = { ...runningTool, status: "completed", output: "done" };

describe("updateCommittedRow", () => {
  it("rewrites a committed row in place, keeping its seq", async () => {
    const agentId = await newAgent();
    await seed(agentId, [{ type: "user_message", text: "run it" }, runningTool, assistant("after")]);
    const timelines = store();
    const [, committed] = await timelines.getCommittedRows(agentId);
    await timelines.updateCommittedRow(agentId, { ...(committed as AgentTimelineRow), item: completedTool });
    const rows = await store().getCommittedRows(agentId);
    expect(rows.map((row) => row.seq)).toEqual([1, 2, 3]);
    expect(rows[1]).toMatchObject({ seq: 2, item: completedTool });
    expect(rows[2]?.item).toEqual(assistant("after"));
  });

  it("is seen by a live reader as an updated event", async () => {
    const agentId = await newAgent();
    await seed(agentId, [runningTool]);
    const { epoch, rows } = await store().fetchCommitted(agentId);
    const stream = await TimelineStream.open(agentId, { after_seq: "1", epoch, updates: "1" });
    try {
      await store().updateCommittedRow(agentId, { ...(rows[0] as AgentTimelineRow), item: completedTool });
      const event = await stream.next((candidate) => candidate.event === "updated");
      expect(event.data).toMatchObject({ seq: 1, item: completedTool });
      expect(stream.events("committed")).toEqual([]);
    } finally {
      await stream.close();
    }
  });

  it("the same content again stores no new revision", async () => {
    const agentId = await newAgent();
    await seed(agentId, [runningTool]);
    const [row] = await store().getCommittedRows(agentId);
    const update = { ...(row as AgentTimelineRow), item: completedTool };
    await store().updateCommittedRow(agentId, update);
    const revision = async () => {
      const page = (await (await api(`/api/v1/agents/${agentId}/timeline`)).json()) as { rows: { revision: number }[] };
      return page.rows[0]?.revision;
    };
    const first = await revision();
    const { epoch } = await store().fetchCommitted(agentId);
    const stream = await TimelineStream.open(agentId, { after_seq: "1", epoch, updates: "1" });
    try {
      await store().updateCommittedRow(agentId, update);
      expect(await revision()).toBe(first);
      // A later, different update is the first event the stream sends: the repeat sent none.
      await store().updateCommittedRow(agentId, { ...update, item: { ...completedTool, output: "again" } });
      await stream.next((event) => event.event === "updated");
      expect(stream.events("updated").map((event) => (event.data as { item: unknown }).item)).toEqual([
        { ...completedTool, output: "again" },
      ]);
    } finally {
      await stream.close();
    }
  });

  it("a seq chartr does not hold changes nothing, as in Paseo's SQLite store", async () => {
    const agentId = await newAgent();
    await seed(agentId, [assistant("only")]);
    await store().updateCommittedRow(agentId, {
      seq: 9,
      timestamp: "2026-01-01T00:00:09.000Z",
      item: assistant("not there"),
    });
    expect((await store().getCommittedRows(agentId)).map((row) => row.item)).toEqual([assistant("only")]);
  });
});
