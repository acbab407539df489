import type { AgentTimelineRow } from "../../src/index.js";

/** Paseo's test row: an assistant chunk at `seq` with a whole-second timestamp. */
export function row(seq: number, text: string, extra: Partial<AgentTimelineRow> = {}): AgentTimelineRow {
  return {
    seq,
    timestamp: `2026-01-01T00:${String(Math.floor(seq / 60) % 60).padStart(2, "0")}:${String(seq % 60).padStart(2, "0")}.000Z`,
    item: { type: "assistant_message", text },
    ...extra,
  };
}

export function userRow(seq: number, text: string): AgentTimelineRow {
  return { ...row(seq, text), item: { type: "user_message", text } };
}
