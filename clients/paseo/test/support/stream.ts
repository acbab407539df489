/** A live reader of an agent's timeline stream (Server-Sent Events), as a daemon's UI would hold one. */

import { chartr, type ChartrContext } from "./chartr.js";

export interface StreamEvent {
  event: string;
  id: string | undefined;
  data: unknown;
}

export class TimelineStream {
  private readonly abort = new AbortController();
  private readonly received: StreamEvent[] = [];
  private waiters: Array<() => void> = [];
  private done: Promise<void> = Promise.resolve();

  static async open(agentId: string, query: Record<string, string> = {}, context: ChartrContext = chartr()) {
    const stream = new TimelineStream();
    const url = new URL(`${context.baseUrl}/api/v1/agents/${agentId}/timeline/stream`);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const response = await fetch(url, {
      headers: { Authorization: `Bearer ${context.token}`, Accept: "text/event-stream" },
      signal: stream.abort.signal,
    });
    if (response.status !== 200 || !response.body) throw new Error(`stream: ${response.status}`);
    stream.done = stream.pump(response.body);
    return stream;
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true }).replace(/\r\n/g, "\n");
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          this.parse(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch {
      // aborted by close()
    }
  }

  private parse(block: string): void {
    let event = "message";
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      else if (field === "id") id = value;
      else if (field === "data") data.push(value);
    }
    if (data.length === 0) return;
    const text = data.join("\n");
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    this.received.push({ event, id, data: parsed });
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** The first event (from the start) matching `predicate`, waiting at most `timeoutMs`. */
  async next(predicate: (event: StreamEvent) => boolean, timeoutMs = 10_000): Promise<StreamEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find(predicate);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching stream event; got ${JSON.stringify(this.received)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  events(kind: string): StreamEvent[] {
    return this.received.filter((event) => event.event === kind);
  }

  async close(): Promise<void> {
    this.abort.abort();
    await this.done;
  }
}
