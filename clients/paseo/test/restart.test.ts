/**
 * Durability: rows the store was told are committed are there after the server stops
 * (SIGTERM) or crashes (SIGKILL) and starts again, with the same epoch, so Paseo's cursors
 * stay valid; and an append sent while the server is down lands once it is back.
 */

import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { ChartrAgentTimelineStore, ChartrNetworkError } from "../src/index.js";
import { chartr, newAgent } from "./support/chartr.js";
import { assistant } from "./support/seed.js";
import { ChartrServer } from "./support/server.js";

describe("a restarted chartr", () => {
  let server: ChartrServer;
  let bind: string;
  const storeOn = (options: { retries?: number } = {}) =>
    new ChartrAgentTimelineStore({
      baseUrl: server.baseUrl,
      token: chartr().token,
      retryDelayMs: 100,
      maxRetryDelayMs: 300,
      ...options,
    });

  beforeAll(async () => {
    server = await new ChartrServer(chartr().env, path.join(chartr().root, "restart.log")).start();
    bind = `127.0.0.1:${server.port}`;
  });

  afterAll(async () => {
    await server.stop();
  });

  it("keeps every committed row and the epoch across a stop and a crash", async () => {
    const agentId = await newAgent();
    const before = storeOn();
    const written = [
      await before.appendCommitted(agentId, { type: "user_message", text: "question" }),
      await before.appendCommitted(agentId, assistant("answer, part one")),
      await before.appendCommitted(agentId, assistant("answer, part two")),
    ];
    const { epoch } = await before.fetchCommitted(agentId);

    await server.stop();
    await expect(storeOn({ retries: 0 }).getLatestCommittedSeq(agentId)).rejects.toBeInstanceOf(ChartrNetworkError);
    await server.start(bind);
    const afterStop = storeOn();
    const rows = await afterStop.getCommittedRows(agentId);
    expect(rows.map(({ seq, timestamp, item }) => ({ seq, timestamp, item }))).toEqual(
      written.map(({ seq, timestamp, item }) => ({ seq, timestamp, item })),
    );
    const page = await afterStop.fetchCommitted(agentId, { direction: "after", cursor: { epoch, seq: 2 } });
    expect(page).toMatchObject({ epoch, reset: false, staleCursor: false });
    expect(page.rows.map((row) => row.seq)).toEqual([3]);

    const last = await afterStop.appendCommitted(agentId, assistant("just before the crash"));
    await server.kill();
    await server.start(bind);
    const afterCrash = storeOn();
    expect(await afterCrash.getLatestCommittedSeq(agentId)).toBe(4);
    expect((await afterCrash.fetchCommitted(agentId, { limit: 1 })).rows[0]).toMatchObject({
      seq: 4,
      timestamp: last.timestamp,
      item: assistant("just before the crash"),
    });
  });

  it("an append sent while the server is down is retried until it lands, once", async () => {
    const agentId = await newAgent();
    const timelines = storeOn({ retries: 40 });
    await timelines.appendCommitted(agentId, assistant("before"));
    await server.stop();
    const pending = timelines.appendCommitted(agentId, assistant("while down"));
    await new Promise((resolve) => setTimeout(resolve, 500));
    await server.start(bind);
    const row = await pending;
    expect(row).toMatchObject({ seq: 2, item: assistant("while down") });
    const rows = await storeOn().getCommittedRows(agentId);
    expect(rows.map((entry) => entry.item)).toEqual([assistant("before"), assistant("while down")]);
  });
});
