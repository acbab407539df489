/**
 * Paseo's AgentTimelineStore kept in chartr: every method is one (or, for getCommittedRows,
 * a few) requests to `/api/v1/agents/{agentId}/timeline`.
 *
 * Writes of one agent are applied in the order they were called, whether or not the caller awaits
 * them (Paseo's AgentManager hands each committed row to bulkInsert and moves on): each agent has
 * a queue, as Paseo's own file stores have, and a read of an agent waits for its queued writes.
 *
 * Where chartr answers differently from Paseo's own stores, this store says so rather than hide it:
 * - an agent chartr does not know is a ChartrUnknownAgentError (Paseo's stores start an empty
 *   timeline), unless the `registerAgent` option names it: the store then registers it
 *   (PUT /api/v1/agents/{id}/registration) and carries on.
 * - bulkInsert of a different row at a seq already taken is a ChartrConflictError and inserts
 *   nothing (Paseo's SQLite store ignores it, its file store overwrites it); the same rows
 *   again insert nothing and succeed.
 * - updateCommittedRow of a seq chartr does not hold changes nothing and resolves, as Paseo's
 *   SQLite store does (chartr answers 404 `row_not_found`).
 * - fetchProjectedCommitted's `rows` is empty: chartr answers the projected entries only.
 */

import { ChartrError, ChartrUnknownAgentError } from "./errors.js";
import { Http, type HttpOptions } from "./http.js";
import type {
  AgentTimelineFetchOptions,
  AgentTimelineFetchResult,
  AgentTimelineItem,
  AgentTimelineReplacementResult,
  AgentTimelineRow,
  AgentTimelineStore,
  ProjectedTimelineFetchResult,
} from "./paseo-types.js";
import {
  pageFromWire,
  paseoTimestamp,
  projectedPageFromWire,
  rowFieldsToWire,
  rowToWire,
  type WireEntry,
  type WirePage,
  type WireRow,
} from "./wire.js";

/** What a daemon knows of an agent it owns: enough for chartr to create and place it. */
export interface AgentRegistration {
  cwd: string;
  provider: string;
  title?: string;
  labels?: Record<string, string>;
}

export interface ChartrAgentTimelineStoreOptions extends HttpOptions {
  /**
   * Called when chartr does not know an agent the store was asked about: answer its registration
   * and the store registers it and retries, or null/undefined to leave it a ChartrUnknownAgentError.
   */
  registerAgent?: (agentId: string) => AgentRegistration | null | undefined | Promise<AgentRegistration | null | undefined>;
}

/** The most rows one read answers (chartr's MAX_READ_LIMIT); getCommittedRows pages by it. */
const PAGE_LIMIT = 1000;

interface AppendAnswer {
  rows: { seq: number; committed_at: string; item_id: string | null }[];
  head_seq: number;
  epoch: string;
}

export class ChartrAgentTimelineStore<Item = AgentTimelineItem> implements AgentTimelineStore<Item> {
  private readonly http: Http;
  private readonly resolveRegistration: ChartrAgentTimelineStoreOptions["registerAgent"];
  /** Per agent: the promise of its last queued write, settled (never rejected). */
  private readonly writeTails = new Map<string, Promise<void>>();

  constructor(options: ChartrAgentTimelineStoreOptions) {
    this.http = new Http(options);
    this.resolveRegistration = options.registerAgent;
  }

  /** Create the agent in chartr if it is not there yet (placed by its cwd); true when it was created. */
  async registerAgent(agentId: string, registration: AgentRegistration): Promise<boolean> {
    const answer = await this.http.send({
      method: "PUT",
      path: `/api/v1/agents/${encodeURIComponent(agentId)}/registration`,
      body: registration,
    });
    return answer.status === 201;
  }

  /** Resolves when every write queued for the agent so far has been answered. */
  async flush(agentId?: string): Promise<void> {
    const tails = agentId === undefined ? [...this.writeTails.values()] : [this.writeTails.get(agentId)];
    await Promise.all(tails);
  }

  /** Paseo's hasCommittedUserMessage: a user_message row with this messageId (trimmed) and this text. */
  async hasCommittedUserMessage(agentId: string, options: { messageId: string; text: string }): Promise<boolean> {
    const messageId = typeof options.messageId === "string" ? options.messageId.trim() : "";
    if (!messageId) return false;
    const answer = await this.reading(agentId, () =>
      this.http.send({ method: "GET", path: `${timeline(agentId)}/user-messages`, query: { message_id: messageId } }),
    );
    return (answer.body as { texts: string[] }).texts.includes(options.text);
  }

  async appendCommitted(
    agentId: string,
    item: Item,
    options?: { timestamp?: string; turnId?: string },
  ): Promise<AgentTimelineRow<Item>> {
    // One key for every attempt: a retry after a lost answer finds the row already committed.
    const entry: Record<string, unknown> = { item, item_id: crypto.randomUUID() };
    if (options?.turnId !== undefined) entry.turn_id = options.turnId;
    if (options?.timestamp !== undefined) entry.committed_at = options.timestamp;
    const answer = await this.writing(agentId, () =>
      this.http.send({ method: "POST", path: timeline(agentId), body: { items: [entry] } }),
    );
    const committed = (answer.body as AppendAnswer).rows[0];
    if (!committed) throw new ChartrError(`POST ${timeline(agentId)}: the answer holds no row`);
    return {
      seq: committed.seq,
      timestamp: paseoTimestamp(committed.committed_at),
      item: structuredClone(item),
      ...(options?.turnId !== undefined ? { turnId: options.turnId } : {}),
    };
  }

  async fetchCommitted(agentId: string, options?: AgentTimelineFetchOptions): Promise<AgentTimelineFetchResult<Item>> {
    const page = await this.read<WireRow>(agentId, options, "canonical");
    return pageFromWire<Item>(page);
  }

  /** Paseo's projected page: assistant (and reasoning) chunks merged into one entry each. */
  async fetchProjectedCommitted(
    agentId: string,
    options?: AgentTimelineFetchOptions,
  ): Promise<ProjectedTimelineFetchResult<Item>> {
    const page = await this.read<WireEntry>(agentId, options, "projected");
    return projectedPageFromWire<Item>(page);
  }

  async getLatestCommittedSeq(agentId: string): Promise<number> {
    const page = await this.read<WireRow>(agentId, { direction: "tail", limit: 1 }, "canonical");
    return page.window.max_seq;
  }

  async getCommittedRows(agentId: string): Promise<AgentTimelineRow<Item>[]> {
    // Pages forward from the start within one epoch; a replacement meanwhile starts it again.
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const rows: AgentTimelineRow<Item>[] = [];
      let epoch: string | undefined;
      let after = 0;
      let replaced = false;
      for (;;) {
        const page = await this.readQuery<WireRow>(agentId, {
          direction: "after",
          seq: after,
          limit: PAGE_LIMIT,
          epoch,
        });
        if (epoch !== undefined && (page.reset || page.epoch !== epoch)) {
          replaced = true;
          break;
        }
        epoch = page.epoch;
        rows.push(...pageFromWire<Item>(page).rows);
        const last = page.rows.at(-1);
        if (!page.has_newer || !last) break;
        after = last.seq;
      }
      if (!replaced) return rows;
    }
    throw new ChartrError(`GET ${timeline(agentId)}: the history kept being replaced while it was read`);
  }

  async getLastItem(agentId: string): Promise<Item | null> {
    const answer = await this.reading(agentId, () =>
      this.http.send({ method: "GET", path: `${timeline(agentId)}/last-item` }),
    );
    return ((answer.body as { item: Item | null }).item ?? null) as Item | null;
  }

  async getLastAssistantMessage(agentId: string): Promise<string | null> {
    const answer = await this.reading(agentId, () =>
      this.http.send({ method: "GET", path: `${timeline(agentId)}/last-assistant-message` }),
    );
    return (answer.body as { text: string | null }).text ?? null;
  }

  async deleteAgent(agentId: string): Promise<void> {
    await this.writing(agentId, () => this.http.send({ method: "DELETE", path: timeline(agentId) }));
  }

  async bulkInsert(agentId: string, rows: readonly AgentTimelineRow<Item>[]): Promise<void> {
    if (rows.length === 0) return;
    const body = { rows: rows.map(rowToWire) };
    await this.writing(agentId, () => this.http.send({ method: "POST", path: `${timeline(agentId)}/rows`, body }));
  }

  async updateCommittedRow(agentId: string, row: AgentTimelineRow<Item>): Promise<void> {
    const body = rowFieldsToWire(row);
    try {
      await this.writing(agentId, () =>
        this.http.send({ method: "PUT", path: `${timeline(agentId)}/rows/${encodeURIComponent(String(row.seq))}`, body }),
      );
    } catch (error) {
      if (error instanceof ChartrError && error.code === "row_not_found") return;
      throw error;
    }
  }

  async replaceCommitted(agentId: string, rows: readonly AgentTimelineRow<Item>[]): Promise<AgentTimelineReplacementResult> {
    const body = { rows: rows.map(rowToWire) };
    const answer = await this.writing(agentId, () => this.http.send({ method: "PUT", path: timeline(agentId), body }));
    return { epoch: (answer.body as { epoch: string }).epoch };
  }

  async beginBackfill(agentId: string): Promise<void> {
    await this.writing(agentId, () => this.http.send({ method: "POST", path: `${timeline(agentId)}/backfill` }));
  }

  async completeBackfill(agentId: string): Promise<void> {
    await this.writing(agentId, () =>
      this.http.send({ method: "POST", path: `${timeline(agentId)}/backfill/complete` }),
    );
  }

  private read<Row>(
    agentId: string,
    options: AgentTimelineFetchOptions | undefined,
    projection: "canonical" | "projected",
  ): Promise<WirePage<Row>> {
    const direction = options?.direction ?? "tail";
    return this.readQuery<Row>(agentId, {
      direction,
      seq: direction === "tail" ? undefined : options?.cursor?.seq,
      epoch: options?.cursor?.epoch,
      limit: options?.limit,
      projection: projection === "projected" ? projection : undefined,
    });
  }

  private async readQuery<Row>(agentId: string, query: Record<string, string | number | undefined>) {
    const answer = await this.reading(agentId, () => this.http.send({ method: "GET", path: timeline(agentId), query }));
    return answer.body as WirePage<Row>;
  }

  /** ``send`` queued behind the agent's earlier writes; later writes wait for it in turn. */
  private writing<T>(agentId: string, send: () => Promise<T>): Promise<T> {
    const previous = this.writeTails.get(agentId) ?? Promise.resolve();
    const result = previous.then(() => this.registeringOnce(agentId, send));
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.writeTails.set(agentId, tail);
    void tail.then(() => {
      if (this.writeTails.get(agentId) === tail) this.writeTails.delete(agentId);
    });
    return result;
  }

  /** ``send`` once the agent's queued writes are answered, so a read sees what was written before it. */
  private async reading<T>(agentId: string, send: () => Promise<T>): Promise<T> {
    await this.writeTails.get(agentId);
    return this.registeringOnce(agentId, send);
  }

  /** ``send``; when chartr does not know the agent and ``registerAgent`` names it, register it and send again. */
  private async registeringOnce<T>(agentId: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (!(error instanceof ChartrUnknownAgentError) || !this.resolveRegistration) throw error;
      const registration = await this.resolveRegistration(agentId);
      if (!registration) throw error;
      await this.registerAgent(agentId, registration);
      return send();
    }
  }
}

function timeline(agentId: string): string {
  return `/api/v1/agents/${encodeURIComponent(agentId)}/timeline`;
}
