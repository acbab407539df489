/**
 * Paseo's timeline store types, copied so that this package needs no Paseo dependency.
 *
 * Source: getpaseo/paseo at f3de5689, packages/server/src/server/agent/agent-timeline-store-types.ts
 * (AgentTimelineRow ... AgentTimelineStore, hasCommittedUserMessage included) and agent-storage.ts
 * (StoredAgentRecord); and, from Paseo's later durable stores, the row's optional fields
 * (turnId, providerMessageId, providerTimelineItemId, revertToken), updateCommittedRow, the file and SQLite stores beside it
 * (file-agent-timeline-store.ts: replaceCommitted's AgentTimelineReplacementResult;
 * sqlite-agent-timeline-store.ts: beginBackfill, completeBackfill) and timeline-projection.ts
 * (the projected page of fetchProjectedCommitted). Keep them as Paseo has them: a Paseo daemon
 * passes its own objects in and reads these shapes back.
 *
 * Two stand-ins, since Paseo's own live in modules this package cannot import:
 * - `JsonValue` (Paseo: @getpaseo/protocol/agent-types) is any JSON value.
 * - `AgentTimelineItem` (Paseo: agent-sdk-types.ts, a union of item types) is any object with
 *   a string `type`. The store is generic over the item type, so a Paseo daemon writes
 *   `new ChartrAgentTimelineStore<AgentTimelineItem>(...)` and gets its own union back.
 */

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export type AgentTimelineItem = { type: string; [key: string]: unknown };

export interface AgentTimelineRow<Item = AgentTimelineItem> {
  seq: number;
  timestamp: string;
  item: Item;
  readonly turnId?: string;
  readonly providerMessageId?: string;
  /** Private provider-boundary identity. Never projected onto the wire. */
  readonly providerTimelineItemId?: string;
  /** Private opaque token returned unchanged when reverting from this item. */
  readonly revertToken?: JsonValue;
}

export interface AgentTimelineCursor {
  epoch: string;
  seq: number;
}

export type AgentTimelineFetchDirection = "tail" | "before" | "after";

export interface AgentTimelineFetchOptions {
  direction?: AgentTimelineFetchDirection;
  cursor?: AgentTimelineCursor;
  /**
   * Number of canonical rows to return.
   * - undefined: store default
   * - 0: all rows in the selected window
   */
  limit?: number;
}

export interface AgentTimelineWindow {
  minSeq: number;
  maxSeq: number;
  nextSeq: number;
}

export interface AgentTimelineFetchResult<Item = AgentTimelineItem> {
  epoch: string;
  direction: AgentTimelineFetchDirection;
  reset: boolean;
  staleCursor: boolean;
  gap: boolean;
  window: AgentTimelineWindow;
  hasOlder: boolean;
  hasNewer: boolean;
  rows: AgentTimelineRow<Item>[];
}

export interface AgentTimelineStore<Item = AgentTimelineItem> {
  appendCommitted(
    agentId: string,
    item: Item,
    options?: { timestamp?: string; turnId?: string },
  ): Promise<AgentTimelineRow<Item>>;
  fetchCommitted(agentId: string, options?: AgentTimelineFetchOptions): Promise<AgentTimelineFetchResult<Item>>;
  getLatestCommittedSeq(agentId: string): Promise<number>;
  getCommittedRows(agentId: string): Promise<AgentTimelineRow<Item>[]>;
  getLastItem(agentId: string): Promise<Item | null>;
  getLastAssistantMessage(agentId: string): Promise<string | null>;
  hasCommittedUserMessage(agentId: string, options: { messageId: string; text: string }): Promise<boolean>;
  deleteAgent(agentId: string): Promise<void>;
  bulkInsert(agentId: string, rows: readonly AgentTimelineRow<Item>[]): Promise<void>;
  updateCommittedRow(agentId: string, row: AgentTimelineRow<Item>): Promise<void>;
}

/** file-agent-timeline-store.ts: what replaceCommitted resolves to. */
export interface AgentTimelineReplacementResult {
  epoch: string;
}

/** timeline-projection.ts */
export interface TimelineSeqRange {
  startSeq: number;
  endSeq: number;
}

export type TimelineProjectionKind = "assistant_merge" | "reasoning_merge" | "tool_lifecycle";

export interface TimelineProjectionEntry<Item = AgentTimelineItem> {
  item: Item;
  turnId?: string;
  timestamp: string;
  seqStart: number;
  seqEnd: number;
  sourceSeqRanges: TimelineSeqRange[];
  collapsed: TimelineProjectionKind[];
}

export interface ProjectedTimelinePageSelection<Item = AgentTimelineItem> {
  entries: TimelineProjectionEntry<Item>[];
  startSeq: number | null;
  endSeq: number | null;
  hasOlder: boolean;
  hasNewer: boolean;
}

export type ProjectedTimelineFetchResult<Item = AgentTimelineItem> = AgentTimelineFetchResult<Item> &
  ProjectedTimelinePageSelection<Item>;

/** agent-storage.ts (f3de5689): the status an agent record keeps (AgentStatusSchema). */
export type AgentStatus = "initializing" | "idle" | "running" | "error" | "closed";

/** agent-storage.ts (f3de5689): STORED_AGENT_SCHEMA, the record a daemon keeps per agent. */
export interface StoredAgentRecord {
  id: string;
  provider: string;
  cwd: string;
  createdAt: string;
  updatedAt: string;
  lastActivityAt?: string;
  lastUserMessageAt?: string | null;
  title?: string | null;
  labels: Record<string, string>;
  lastStatus: AgentStatus;
  lastModeId?: string | null;
  config?: { [key: string]: unknown } | null;
  runtimeInfo?: {
    provider: string;
    sessionId: string | null;
    model?: string | null;
    thinkingOptionId?: string | null;
    modeId?: string | null;
    extra?: Record<string, unknown>;
  };
  features?: unknown[];
  persistence?: { provider: string; sessionId: string; nativeHandle?: unknown; metadata?: Record<string, unknown> } | null;
  lastError?: string | null;
  requiresAttention?: boolean;
  attentionReason?: "finished" | "error" | "permission" | null;
  attentionTimestamp?: string | null;
  internal?: boolean;
  archivedAt?: string | null;
}
