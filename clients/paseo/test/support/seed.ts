import { api } from "./chartr.js";

export const assistant = (text: string, extra: Record<string, unknown> = {}) => ({
  type: "assistant_message",
  text,
  ...extra,
});

/** Append items in one request over the plain API (fast seeding); answers the head seq. */
export async function seed(agentId: string, items: Record<string, unknown>[]): Promise<number> {
  let head = 0;
  for (let start = 0; start < items.length; start += 500) {
    const batch = items.slice(start, start + 500).map((item) => ({ item }));
    const response = await api(`/api/v1/agents/${agentId}/timeline`, {
      method: "POST",
      body: JSON.stringify({ items: batch }),
    });
    if (response.status !== 201) throw new Error(`seeding ${agentId}: ${response.status} ${await response.text()}`);
    head = ((await response.json()) as { head_seq: number }).head_seq;
  }
  return head;
}
