/** Typed errors from chartr's envelope, and the retries that send the same request again. */

import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";

import {
  ChartrAgentTimelineStore,
  ChartrAuthError,
  ChartrConflictError,
  ChartrError,
  ChartrNetworkError,
  ChartrUnknownAgentError,
} from "../src/index.js";
import { api, chartr, newAgent, store } from "./support/chartr.js";
import { assistant } from "./support/seed.js";

interface Sent {
  method: string;
  url: string;
  body: string | undefined;
}

/** The global fetch, recording each attempt; `answer(attempt)` may answer or fail one instead. */
function recordingFetch(answer: (attempt: number, response: () => Promise<Response>) => Promise<Response>) {
  const sent: Sent[] = [];
  const wrapped: typeof fetch = async (input, init) => {
    sent.push({ method: init?.method ?? "GET", url: String(input), body: init?.body as string | undefined });
    return answer(sent.length, () => fetch(input, init));
  };
  return { sent, fetch: wrapped };
}

describe("typed errors", () => {
  it("an agent chartr does not know is a ChartrUnknownAgentError", async () => {
    const missing = `missing-${randomUUID()}`;
    const error = await store().fetchCommitted(missing).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrUnknownAgentError);
    expect(error).toMatchObject({ status: 404, code: "not_found" });
    await expect(store().appendCommitted(missing, assistant("x"))).rejects.toBeInstanceOf(ChartrUnknownAgentError);
    await expect(store().getLatestCommittedSeq(missing)).rejects.toBeInstanceOf(ChartrUnknownAgentError);
  });

  it("an unknown token is a ChartrAuthError (401) and is not retried", async () => {
    const recorder = recordingFetch((_attempt, response) => response());
    const timelines = new ChartrAgentTimelineStore({
      baseUrl: chartr().baseUrl,
      token: "chartr_not-a-token",
      fetch: recorder.fetch,
    });
    const error = await timelines.fetchCommitted(await newAgent()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrAuthError);
    expect(error).toMatchObject({ status: 401, code: "not_authenticated" });
    expect(recorder.sent).toHaveLength(1);
  });

  it("a read-only token reads, and its write is a ChartrAuthError (403)", async () => {
    const context = chartr();
    const token = context.readOnlyToken;
    const agentId = await newAgent();
    const readOnly = new ChartrAgentTimelineStore({ baseUrl: context.baseUrl, token });
    expect(await readOnly.getLatestCommittedSeq(agentId)).toBe(0);
    const error = await readOnly.appendCommitted(agentId, assistant("no")).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrAuthError);
    expect(error).toMatchObject({ status: 403, code: "permission_denied" });
    expect(await store().getLatestCommittedSeq(agentId)).toBe(0);
  });

  it("an item chartr refuses is a ChartrError 400 invalid carrying the envelope's fields", async () => {
    const agentId = await newAgent();
    const error = await store()
      .appendCommitted(agentId, { type: "assistant_message" } as never)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrError);
    expect(error).not.toBeInstanceOf(ChartrConflictError);
    expect(error).toMatchObject({ status: 400, code: "invalid" });
    expect((error as ChartrError).details.fields).toBeTypeOf("object");
    expect(await store().getLatestCommittedSeq(agentId)).toBe(0);
  });

  it("an append to an archived agent is a ChartrConflictError (409 archived)", async () => {
    const agentId = await newAgent();
    const archived = await api(`/api/v1/agents/${agentId}/archive`, { method: "POST" });
    expect(archived.status).toBe(200);
    const error = await store().appendCommitted(agentId, assistant("late")).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrConflictError);
    expect(error).toMatchObject({ status: 409, code: "archived" });
  });
});

describe("retries", () => {
  it("an append whose answer was lost is retried with the same item_id and stored once", async () => {
    const agentId = await newAgent();
    const recorder = recordingFetch(async (attempt, response) => {
      const answer = await response();
      if (attempt === 1) throw new TypeError("fetch failed (the answer was lost)");
      return answer;
    });
    const timelines = new ChartrAgentTimelineStore({
      baseUrl: chartr().baseUrl,
      token: chartr().token,
      fetch: recorder.fetch,
      retryDelayMs: 10,
    });
    const row = await timelines.appendCommitted(agentId, assistant("once"));
    expect(recorder.sent).toHaveLength(2);
    expect(recorder.sent[1]?.body).toBe(recorder.sent[0]?.body);
    const itemId = JSON.parse(recorder.sent[0]?.body as string).items[0].item_id;
    expect(itemId).toMatch(/^[0-9a-f-]{36}$/);
    expect(row).toMatchObject({ seq: 1, item: assistant("once") });
    const rows = await store().getCommittedRows(agentId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ seq: 1, timestamp: row.timestamp, item: assistant("once") });
  });

  it("each append has its own item_id", async () => {
    const agentId = await newAgent();
    const recorder = recordingFetch((_attempt, response) => response());
    const timelines = new ChartrAgentTimelineStore({ baseUrl: chartr().baseUrl, token: chartr().token, fetch: recorder.fetch });
    await timelines.appendCommitted(agentId, assistant("same"));
    await timelines.appendCommitted(agentId, assistant("same"));
    const ids = recorder.sent.map((sent) => JSON.parse(sent.body as string).items[0].item_id);
    expect(new Set(ids).size).toBe(2);
    expect(await store().getLatestCommittedSeq(agentId)).toBe(2);
  });

  it("a 503 busy is retried after its Retry-After with the same request", async () => {
    const agentId = await newAgent();
    const recorder = recordingFetch(async (attempt, response) => {
      if (attempt === 1) {
        return new Response(JSON.stringify({ error: { code: "busy", message: "The database is busy." } }), {
          status: 503,
          headers: { "Content-Type": "application/json", "Retry-After": "0" },
        });
      }
      return response();
    });
    const timelines = new ChartrAgentTimelineStore({ baseUrl: chartr().baseUrl, token: chartr().token, fetch: recorder.fetch });
    const row = await timelines.appendCommitted(agentId, assistant("after busy"));
    expect(row.seq).toBe(1);
    expect(recorder.sent).toHaveLength(2);
    expect(recorder.sent[1]?.body).toBe(recorder.sent[0]?.body);
  });

  it("a 503 that does not clear is a ChartrNetworkError after the retries", async () => {
    const recorder = recordingFetch(async () => {
      return new Response(JSON.stringify({ error: { code: "maintenance", message: "A restore is running." } }), {
        status: 503,
        headers: { "Content-Type": "application/json", "Retry-After": "0" },
      });
    });
    const timelines = new ChartrAgentTimelineStore({ baseUrl: chartr().baseUrl, token: chartr().token, fetch: recorder.fetch, retries: 2 });
    const error = await timelines.getLatestCommittedSeq("any").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrNetworkError);
    expect(error).toMatchObject({ status: 503, code: "maintenance" });
    expect(recorder.sent).toHaveLength(3);
  });

  it("a server that does not answer is a ChartrNetworkError after the retries", async () => {
    const recorder = recordingFetch((_attempt, response) => response());
    // Port 9 on loopback: nothing listens there, so every connection is refused.
    const timelines = new ChartrAgentTimelineStore({
      baseUrl: "http://127.0.0.1:9",
      token: "chartr_x",
      fetch: recorder.fetch,
      retries: 2,
      retryDelayMs: 5,
    });
    const error = await timelines.getCommittedRows("agent").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ChartrNetworkError);
    expect((error as ChartrNetworkError).status).toBeUndefined();
    expect(recorder.sent).toHaveLength(3);
  });

  it("a 400 is not retried", async () => {
    const recorder = recordingFetch((_attempt, response) => response());
    const timelines = new ChartrAgentTimelineStore({ baseUrl: chartr().baseUrl, token: chartr().token, fetch: recorder.fetch });
    await expect(
      timelines.appendCommitted(await newAgent(), { type: "tool_call" } as never),
    ).rejects.toMatchObject({ status: 400, code: "invalid" });
    expect(recorder.sent).toHaveLength(1);
  });
});
