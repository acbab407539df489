/**
 * Paseo's AgentTimelineStore kept in chartr: every method is one (or, for getCommittedRows,
 * a few) requests to `/api/v1/agents/{agentId}/timeline`.
 *
 * Where chartr answers differently from Paseo's own stores, this store says so rather than hide it:
 * - an agent chartr does not know is a ChartrUnknownAgentError (Paseo's stores start an empty
 *   timeline); create the agent in chartr first (POST /api/v1/agents).
 * - bulkInsert of a different row at a seq already taken is a ChartrConflictError and inserts
 *   nothing (Paseo's SQLite store ignores it, its file store overwrites it); the same rows
 *   again insert nothing and succeed.
 * - updateCommittedRow of a seq chartr does not hold changes nothing and resolves, as Paseo's
 *   SQLite store does (chartr answers 404 `row_not_found`).
 * - fetchProjectedCommitted's `rows` is empty: chartr answers the projected entries only.
 */

import { ChartrError } from "./errors.js";
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

export type ChartrAgentTimelineStoreOptions = HttpOptions;

/** The most rows one read answers (chartr's MAX_READ_LIMIT); getCommittedRows pages by it. */
const PAGE_LIMIT = 1000;

interface AppendAnswer {
  rows: { seq: number; committed_at: string; item_id: string | null }[];
  head_seq: number;
  epoch: string;
}

export class ChartrAgentTimelineStore<Item = AgentTimelineItem> implements AgentTimelineStore<Item> {
  private readonly http: Http;

  constructor(options: ChartrAgentTimelineStoreOptions) {
    this.http = new Http(options);
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
    const answer = await this.http.send({ method: "POST", path: timeline(agentId), body: { items: [entry] } });
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
    const answer = await this.http.send({ method: "GET", path: `${timeline(agentId)}/last-item` });
    return ((answer.body as { item: Item | null }).item ?? null) as Item | null;
  }

  async getLastAssistantMessage(agentId: string): Promise<string | null> {
    const answer = await this.http.send({ method: "GET", path: `${timeline(agentId)}/last-assistant-message` });
    return (answer.body as { text: string | null }).text ?? null;
  }

  async deleteAgent(agentId: string): Promise<void> {
    await this.http.send({ method: "DELETE", path: timeline(agentId) });
  }

  async bulkInsert(agentId: string, rows: readonly AgentTimelineRow<Item>[]): Promise<void> {
    if (rows.length === 0) return;
    await this.http.send({ method: "POST", path: `${timeline(agentId)}/rows`, body: { rows: rows.map(rowToWire) } });
  }

  async updateCommittedRow(agentId: string, row: AgentTimelineRow<Item>): Promise<void> {
    try {
      await this.http.send({
        method: "PUT",
        path: `${timeline(agentId)}/rows/${encodeURIComponent(String(row.seq))}`,
        body: rowFieldsToWire(row),
      });
    } catch (error) {
      if (error instanceof ChartrError && error.code === "row_not_found") return;
      throw error;
    }
  }

  async replaceCommitted(agentId: string, rows: readonly AgentTimelineRow<Item>[]): Promise<AgentTimelineReplacementResult> {
    const answer = await this.http.send({ method: "PUT", path: timeline(agentId), body: { rows: rows.map(rowToWire) } });
    return { epoch: (answer.body as { epoch: string }).epoch };
  }

  async beginBackfill(agentId: string): Promise<void> {
    await this.http.send({ method: "POST", path: `${timeline(agentId)}/backfill` });
  }

  async completeBackfill(agentId: string): Promise<void> {
    await this.http.send({ method: "POST", path: `${timeline(agentId)}/backfill/complete` });
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
    const answer = await this.http.send({ method: "GET", path: timeline(agentId), query });
    return answer.body as WirePage<Row>;
  }
}

function timeline(agentId: string): string {
  return `/api/v1/agents/${encodeURIComponent(agentId)}/timeline`;
}
