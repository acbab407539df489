/**
 * ChartrAgentRecords: Paseo's agent records (agent-storage.ts's StoredAgentRecord, f3de5689) kept
 * in chartr's agent snapshots, so a daemon keeps its agent list where its timelines are.
 */

import { randomUUID } from "node:crypto";

import { describe, expect, it } from "vitest";

import { ChartrAgentRecords, type StoredAgentRecord } from "../src/index.js";
import { chartr } from "./support/chartr.js";

function records(): ChartrAgentRecords {
  return new ChartrAgentRecords({ baseUrl: chartr().baseUrl, token: chartr().token });
}

function record(overrides: Partial<StoredAgentRecord> = {}): StoredAgentRecord {
  return {
    id: `paseo-record-${randomUUID()}`,
    provider: "claude",
    cwd: `${chartr().workspaceDir}/app`,
    createdAt: "2026-01-01T00:00:00.000Z",
    updatedAt: "2026-01-01T00:00:00.000Z",
    title: "Fix refund rounding",
    labels: { team: "payments" },
    lastStatus: "running",
    lastModeId: "plan",
    config: { model: "opus", modeId: "plan" },
    runtimeInfo: { provider: "claude", sessionId: "s-1", model: "opus" },
    persistence: { provider: "claude", sessionId: "s-1" },
    requiresAttention: true,
    attentionReason: "permission",
    attentionTimestamp: "2026-01-01T00:00:05.000Z",
    internal: false,
    archivedAt: null,
    ...overrides,
  };
}

const KEPT = [
  "id",
  "provider",
  "cwd",
  "title",
  "labels",
  "lastStatus",
  "lastModeId",
  "config",
  "runtimeInfo",
  "persistence",
  "requiresAttention",
  "attentionReason",
  "attentionTimestamp",
  "internal",
  "archivedAt",
] as const;

const kept = (value: StoredAgentRecord) => Object.fromEntries(KEPT.map((key) => [key, value[key]]));

describe("ChartrAgentRecords", () => {
  it("keeps the fields chartr models and reads them back, in the suite's workspace", async () => {
    const written = record();
    const store = records();
    const answered = await store.upsert(written);
    expect(kept(answered)).toEqual(kept(written));
    expect(kept((await store.get(written.id))!)).toEqual(kept(written));
    expect(answered.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3,}Z$/);
  });

  it("applies upserts of one agent in the order called and is repeatable", async () => {
    const store = records();
    const first = record({ lastStatus: "initializing", requiresAttention: false, attentionReason: null });
    const calls = ["running", "idle", "error", "idle"].map((status) =>
      store.upsert({ ...first, lastStatus: status as StoredAgentRecord["lastStatus"] }),
    );
    await Promise.all(calls);
    await store.upsert({ ...first, lastStatus: "idle" });
    expect((await store.get(first.id))?.lastStatus).toBe("idle");
  });

  it("archives and unarchives with the record, and lists archived records too", async () => {
    const store = records();
    const written = record({ requiresAttention: false, attentionReason: null, attentionTimestamp: null });
    const archived = await store.upsert({ ...written, archivedAt: "2026-01-02T00:00:00.000Z" });
    expect(archived.archivedAt).not.toBeNull();
    expect(archived.lastStatus).toBe("closed");
    expect((await store.list()).map((entry) => entry.id)).toContain(written.id);
    const back = await store.upsert({ ...written, lastStatus: "idle" });
    expect([back.archivedAt, back.lastStatus]).toEqual([null, "idle"]);
  });

  it("sets a title, and answers null for an agent chartr does not hold", async () => {
    const store = records();
    const written = record();
    await store.upsert(written);
    await store.setTitle(written.id, "Renamed");
    expect((await store.get(written.id))?.title).toBe("Renamed");
    expect(await store.get(`missing-${randomUUID()}`)).toBeNull();
  });
});
