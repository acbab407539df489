/**
 * chartr's snake_case wire shapes and their mapping to Paseo's camelCase ones.
 *
 * - Paseo `timestamp` is chartr `committed_at`. chartr writes times with an offset
 *   (`2026-01-01T00:00:00.123456+00:00`); they come back in the form Paseo writes them,
 *   `Date#toISOString()`'s (`2026-01-01T00:00:00.123Z`), keeping digits past the millisecond.
 * - `revert_token` may be any JSON value: a row without one answers without the key, a stored
 *   null answers null, and the row keeps that difference (`revertToken` absent, or null).
 * - Optional strings answered as null (`turn_id`, `provider_*`) are left out of the row.
 */

import type {
  AgentTimelineFetchResult,
  AgentTimelineRow,
  AgentTimelineWindow,
  JsonValue,
  ProjectedTimelineFetchResult,
  TimelineProjectionEntry,
  TimelineProjectionKind,
  TimelineSeqRange,
} from "./paseo-types.js";

export interface WireRow {
  seq: number;
  committed_at: string;
  item_type: string;
  item: unknown;
  item_id: string | null;
  turn_id?: string | null;
  provider_message_id?: string | null;
  provider_timeline_item_id?: string | null;
  revert_token?: JsonValue;
  revision?: number;
}

export interface WireEntry {
  seq_start: number;
  seq_end: number;
  committed_at: string;
  item_type: string;
  item: unknown;
  item_ids: (string | null)[];
  // Answered since chartr's Paseo projection; derived from seq_start/seq_end/item_type before it.
  source_seq_ranges?: [number, number][];
  turn_id?: string | null;
  collapsed?: TimelineProjectionKind[];
}

export interface WirePage<Row> {
  epoch: string;
  direction: "tail" | "before" | "after";
  rows: Row[];
  window: { min_seq: number; max_seq: number; next_seq: number };
  has_older: boolean;
  has_newer: boolean;
  reset: boolean;
  stale_cursor: boolean;
  gap: boolean;
  /** The first and last seq of the canonical rows the page covers (null when none). */
  start_seq?: number | null;
  end_seq?: number | null;
}

const OFFSET_TIME = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/;

/** chartr's time as `toISOString()` writes it (UTC, `Z`, at least milliseconds). */
export function paseoTimestamp(value: string): string {
  const match = OFFSET_TIME.exec(value);
  if (!match) return value;
  const [, seconds, fraction = "", offset] = match;
  const whole = new Date(`${seconds}${offset}`);
  if (Number.isNaN(whole.getTime())) return value;
  const digits = fraction.replace(/0+$/, "").padEnd(3, "0");
  return `${whole.toISOString().slice(0, 19)}.${digits}Z`;
}

export function rowFromWire<Item>(row: WireRow): AgentTimelineRow<Item> {
  const out: {
    seq: number;
    timestamp: string;
    item: Item;
    turnId?: string;
    providerMessageId?: string;
    providerTimelineItemId?: string;
    revertToken?: JsonValue;
  } = { seq: row.seq, timestamp: paseoTimestamp(row.committed_at), item: row.item as Item };
  if (typeof row.turn_id === "string") out.turnId = row.turn_id;
  if (typeof row.provider_message_id === "string") out.providerMessageId = row.provider_message_id;
  if (typeof row.provider_timeline_item_id === "string") out.providerTimelineItemId = row.provider_timeline_item_id;
  if ("revert_token" in row && row.revert_token !== undefined) out.revertToken = row.revert_token;
  return out;
}

/** The row's optional fields as chartr takes them (only those the row has). */
export function rowFieldsToWire<Item>(row: AgentTimelineRow<Item>): Record<string, unknown> {
  const out: Record<string, unknown> = { item: row.item, committed_at: row.timestamp };
  if (row.turnId !== undefined) out.turn_id = row.turnId;
  if (row.providerMessageId !== undefined) out.provider_message_id = row.providerMessageId;
  if (row.providerTimelineItemId !== undefined) out.provider_timeline_item_id = row.providerTimelineItemId;
  if ("revertToken" in row && row.revertToken !== undefined) out.revert_token = row.revertToken;
  return out;
}

export function rowToWire<Item>(row: AgentTimelineRow<Item>): Record<string, unknown> {
  return { seq: row.seq, ...rowFieldsToWire(row) };
}

export function windowFromWire(window: WirePage<unknown>["window"]): AgentTimelineWindow {
  // Paseo's stores answer minSeq 0 when no row is there; chartr answers 0 too, or (before its
  // Paseo reads) head_seq + 1 for "nothing retained".
  const minSeq = window.min_seq > window.max_seq ? 0 : window.min_seq;
  return { minSeq, maxSeq: window.max_seq, nextSeq: window.next_seq };
}

export function pageFromWire<Item>(page: WirePage<WireRow>): AgentTimelineFetchResult<Item> {
  return {
    epoch: page.epoch,
    direction: page.direction,
    reset: page.reset,
    staleCursor: page.stale_cursor,
    gap: page.gap,
    window: windowFromWire(page.window),
    hasOlder: page.has_older,
    hasNewer: page.has_newer,
    rows: page.rows.map((row) => rowFromWire<Item>(row)),
  };
}

function collapsedOf(entry: WireEntry): TimelineProjectionKind[] {
  if (entry.seq_end === entry.seq_start) return [];
  if (entry.item_type === "assistant_message") return ["assistant_merge"];
  if (entry.item_type === "reasoning") return ["reasoning_merge"];
  return [];
}

export function entryFromWire<Item>(entry: WireEntry): TimelineProjectionEntry<Item> {
  const ranges: TimelineSeqRange[] = entry.source_seq_ranges
    ? entry.source_seq_ranges.map(([startSeq, endSeq]) => ({ startSeq, endSeq }))
    : [{ startSeq: entry.seq_start, endSeq: entry.seq_end }];
  return {
    item: entry.item as Item,
    ...(typeof entry.turn_id === "string" ? { turnId: entry.turn_id } : {}),
    timestamp: paseoTimestamp(entry.committed_at),
    seqStart: entry.seq_start,
    seqEnd: entry.seq_end,
    sourceSeqRanges: ranges,
    collapsed: entry.collapsed ?? collapsedOf(entry),
  };
}

export function projectedPageFromWire<Item>(page: WirePage<WireEntry>): ProjectedTimelineFetchResult<Item> {
  const entries = page.rows.map((entry) => entryFromWire<Item>(entry));
  return {
    epoch: page.epoch,
    direction: page.direction,
    reset: page.reset,
    staleCursor: page.stale_cursor,
    gap: page.gap,
    window: windowFromWire(page.window),
    hasOlder: page.has_older,
    hasNewer: page.has_newer,
    rows: [],
    entries,
    // The canonical rows the page covers (an entry overlapping them is whole, so it may reach past them).
    startSeq: page.start_seq ?? entries[0]?.seqStart ?? null,
    endSeq: page.end_seq ?? entries.at(-1)?.seqEnd ?? null,
  };
}
