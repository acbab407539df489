/**
 * Retries against chartr's own refusals for now: 429 `throttled` (a server with a tight
 * CHARTR_API_THROTTLE_RATE) and, on SQLite, 503 `busy` (another process holds the write lock
 * past CHARTR_SQLITE_TIMEOUT). Both carry Retry-After; the store waits it and sends the same
 * request again, so every append lands once.
 */

import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { ChartrAgentTimelineStore } from "../src/index.js";
import { chartr, newAgent } from "./support/chartr.js";
import { assistant } from "./support/seed.js";
import { ChartrServer, PYTHON } from "./support/server.js";

function recordingStore(baseUrl: string) {
  const statuses: number[] = [];
  const bodies: string[] = [];
  const timelines = new ChartrAgentTimelineStore({
    baseUrl,
    token: chartr().token,
    retries: 20,
    fetch: async (input, init) => {
      if (typeof init?.body === "string") bodies.push(init.body);
      const response = await fetch(input, init);
      statuses.push(response.status);
      return response;
    },
  });
  return { timelines, statuses, bodies };
}

/** Holds SQLite's write lock from another process for `seconds`; resolves once it is held. */
function holdWriteLock(database: string, seconds: number): Promise<{ released: Promise<void> }> {
  const script = [
    "import sqlite3, sys, time",
    "db = sqlite3.connect(sys.argv[1], isolation_level=None)",
    "db.execute('BEGIN IMMEDIATE')",
    "print('locked', flush=True)",
    "time.sleep(float(sys.argv[2]))",
    "db.execute('ROLLBACK')",
  ].join("\n");
  const child = spawn(PYTHON, ["-c", script, database, String(seconds)], { stdio: ["ignore", "pipe", "inherit"] });
  const released = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      // Wrapped: resolving with the promise itself would wait for it.
      if (chunk.toString().includes("locked")) resolve({ released });
    });
    child.once("exit", (code) => reject(new Error(`the lock holder exited with ${code}`)));
  });
}

describe("refused for now, then served", () => {
  let server: ChartrServer;

  beforeAll(async () => {
    const env = { ...chartr().env, CHARTR_API_THROTTLE_RATE: "4/s", CHARTR_SQLITE_TIMEOUT: "1" };
    server = await new ChartrServer(env, path.join(chartr().root, "refusals.log")).start();
  });

  afterAll(async () => {
    await server.stop();
  });

  it("appends throttled with 429 are retried after Retry-After and each lands once", async () => {
    const agentId = await newAgent();
    const { timelines, statuses } = recordingStore(server.baseUrl);
    const rows = await Promise.all(
      Array.from({ length: 10 }, (_, index) => timelines.appendCommitted(agentId, assistant(`burst ${index}`))),
    );
    expect(statuses).toContain(429);
    expect(rows.map((row) => row.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    const stored = await timelines.getCommittedRows(agentId);
    expect(stored.map((row) => row.item)).toEqual(
      rows.sort((a, b) => a.seq - b.seq).map((row) => row.item),
    );
  });

  it.skipIf(Boolean(process.env.DATABASE_URL))(
    "on SQLite, an append refused with 503 busy is retried with the same item_id and lands once",
    async () => {
      const agentId = await newAgent();
      await new Promise((resolve) => setTimeout(resolve, 1100)); // a fresh throttle window
      const { timelines, statuses, bodies } = recordingStore(server.baseUrl);
      const database = path.join(chartr().env.CHARTR_DATA_DIR as string, "chartr.sqlite3");
      const { released } = await holdWriteLock(database, 2.5);
      const row = await timelines.appendCommitted(agentId, assistant("while locked"));
      await released;
      expect(statuses).toContain(503);
      expect(new Set(bodies).size).toBe(1);
      expect(row.seq).toBe(1);
      const stored = await timelines.getCommittedRows(agentId);
      expect(stored.map((entry) => entry.item)).toEqual([assistant("while locked")]);
    },
  );
});
