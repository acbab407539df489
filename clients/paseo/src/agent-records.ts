/**
 * Paseo's agent records kept in chartr: a daemon's StoredAgentRecord (agent-storage.ts) is the
 * agent snapshot `/api/v1/agents/{id}`, so its agent list lives beside the timelines.
 *
 * What chartr keeps: id, provider, cwd, title, labels, lastStatus (lifecycle), lastModeId, config,
 * runtimeInfo, persistence, requiresAttention, attentionReason, attentionTimestamp, internal and
 * archivedAt; createdAt, updatedAt, lastActivityAt and lastUserMessageAt are chartr's own clocks
 * (read back, never written). Not kept: `features` and `lastError`. An agent's cwd is fixed once
 * it is registered (its workspace follows from it).
 *
 * Upserts of one agent are applied in the order they were called.
 */

import { ChartrUnknownAgentError } from "./errors.js";
import { Http, type HttpOptions } from "./http.js";
import type { AgentStatus, StoredAgentRecord } from "./paseo-types.js";
import { paseoTimestamp } from "./wire.js";

/** An agent as chartr's API answers it (the fields this client reads). */
interface WireAgent {
  agent_id: string;
  provider: string;
  cwd: string;
  title: string;
  labels: Record<string, string>;
  lifecycle: AgentStatus;
  last_mode_id: string;
  config: Record<string, unknown>;
  runtime_info: Record<string, unknown>;
  persistence: Record<string, unknown>;
  requires_attention: boolean;
  attention_reason: "finished" | "error" | "permission" | null;
  attention_at: string | null;
  internal: boolean;
  created_at: string;
  updated_at: string;
  last_activity_at: string | null;
  last_user_message_at: string | null;
  archived_at: string | null;
}

const PAGE_LIMIT = 500;

export class ChartrAgentRecords {
  private readonly http: Http;
  private readonly tails = new Map<string, Promise<void>>();

  constructor(options: HttpOptions) {
    this.http = new Http(options);
  }

  /** Every agent record chartr holds, archived ones included, oldest first. */
  async list(): Promise<StoredAgentRecord[]> {
    const records: StoredAgentRecord[] = [];
    let cursor: string | undefined;
    do {
      const answer = await this.http.send({
        method: "GET",
        path: "/api/v1/agents",
        query: { archived: "all", limit: PAGE_LIMIT, cursor },
      });
      const page = answer.body as { results: WireAgent[]; next_cursor: string | null };
      records.push(...page.results.map(recordFromWire));
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    return records;
  }

  async get(agentId: string): Promise<StoredAgentRecord | null> {
    try {
      const answer = await this.http.send({ method: "GET", path: agentPath(agentId) });
      return recordFromWire(answer.body as WireAgent);
    } catch (error) {
      if (error instanceof ChartrUnknownAgentError) return null;
      throw error;
    }
  }

  /**
   * Create the agent where chartr places its cwd, or change it to match the record; the record as
   * chartr keeps it. An archived agent changes only by being unarchived (chartr refuses changes to
   * archived records), so a record that stays archived keeps what it had.
   */
  upsert(record: StoredAgentRecord): Promise<StoredAgentRecord> {
    return this.queued(record.id, async () => {
      const path = agentPath(record.id);
      const registered = await this.http.send({
        method: "PUT",
        path: `${path}/registration`,
        body: { cwd: record.cwd, provider: record.provider },
      });
      let agent = registered.body as WireAgent;
      if (agent.archived_at && !record.archivedAt) {
        agent = await this.move(path, "unarchive");
      }
      if (!agent.archived_at) {
        const changed = await this.http.send({ method: "PATCH", path, body: changesOf(record) });
        agent = changed.body as WireAgent;
        if (record.archivedAt) agent = await this.move(path, "archive");
      }
      return recordFromWire(agent);
    });
  }

  private async move(path: string, action: "archive" | "unarchive"): Promise<WireAgent> {
    const answer = await this.http.send({ method: "POST", path: `${path}/${action}` });
    return (answer.body as { agent: WireAgent }).agent;
  }

  async setTitle(agentId: string, title: string): Promise<void> {
    await this.queued(agentId, () => this.http.send({ method: "PATCH", path: agentPath(agentId), body: { title } }));
  }

  private queued<T>(agentId: string, run: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(agentId) ?? Promise.resolve()).then(run);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(agentId, tail);
    void tail.then(() => {
      if (this.tails.get(agentId) === tail) this.tails.delete(agentId);
    });
    return result;
  }
}

function agentPath(agentId: string): string {
  return `/api/v1/agents/${encodeURIComponent(agentId)}`;
}

function changesOf(record: StoredAgentRecord): Record<string, unknown> {
  return {
    provider: record.provider,
    title: record.title ?? null,
    labels: record.labels ?? {},
    lifecycle: record.lastStatus,
    last_mode_id: record.lastModeId ?? null,
    config: record.config ?? null,
    runtime_info: record.runtimeInfo ?? null,
    persistence: record.persistence ?? null,
    requires_attention: record.requiresAttention ?? false,
    attention_reason: record.requiresAttention ? (record.attentionReason ?? null) : null,
    attention_at: record.requiresAttention ? (record.attentionTimestamp ?? null) : null,
    internal: record.internal ?? false,
  };
}

const time = (value: string | null): string | null => (value === null ? null : paseoTimestamp(value));
const orNull = (value: Record<string, unknown>) => (Object.keys(value).length === 0 ? null : value);

export function recordFromWire(agent: WireAgent): StoredAgentRecord {
  return {
    id: agent.agent_id,
    provider: agent.provider,
    cwd: agent.cwd,
    createdAt: paseoTimestamp(agent.created_at),
    updatedAt: paseoTimestamp(agent.updated_at),
    ...(agent.last_activity_at ? { lastActivityAt: paseoTimestamp(agent.last_activity_at) } : {}),
    lastUserMessageAt: time(agent.last_user_message_at),
    title: agent.title === "" ? null : agent.title,
    labels: agent.labels,
    lastStatus: agent.lifecycle,
    lastModeId: agent.last_mode_id === "" ? null : agent.last_mode_id,
    config: orNull(agent.config),
    ...(Object.keys(agent.runtime_info).length > 0
      ? { runtimeInfo: agent.runtime_info as unknown as StoredAgentRecord["runtimeInfo"] }
      : {}),
    persistence: orNull(agent.persistence) as StoredAgentRecord["persistence"],
    requiresAttention: agent.requires_attention,
    attentionReason: agent.attention_reason,
    attentionTimestamp: time(agent.attention_at),
    internal: agent.internal,
    archivedAt: time(agent.archived_at),
  };
}
