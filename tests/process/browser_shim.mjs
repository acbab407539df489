// What a browser would do for the page in tests/process/test_stream_ticket_client.py, in Node
// (which has fetch but neither EventSource nor CORS): a cross-origin `fetch` (the preflight, then
// the request with `Origin`, each answer checked as a browser checks it) and an `EventSource`
// (named events, `open`/`error`, its own reconnect with `Last-Event-ID` unless closed; a non-200
// answer or a missing Access-Control-Allow-Origin fails it for good).
const ORIGIN = process.env.PAGE_ORIGIN;
const nodeFetch = globalThis.fetch;

function allowed(response) {
  return response.headers.get("access-control-allow-origin") === ORIGIN;
}

globalThis.fetch = async (url, init = {}) => {
  const headers = Object.keys(init.headers || {}).map((name) => name.toLowerCase());
  const preflight = await nodeFetch(url, {
    method: "OPTIONS",
    headers: {
      Origin: ORIGIN,
      "Access-Control-Request-Method": init.method || "GET",
      "Access-Control-Request-Headers": headers.join(","),
    },
  });
  const allowedHeaders = (preflight.headers.get("access-control-allow-headers") || "").toLowerCase();
  if (!preflight.ok || !allowed(preflight) || !headers.every((name) => allowedHeaders.includes(name))) {
    throw new TypeError("Failed to fetch (CORS preflight)");
  }
  const response = await nodeFetch(url, { ...init, headers: { ...init.headers, Origin: ORIGIN } });
  if (!allowed(response)) throw new TypeError("Failed to fetch (CORS)");
  return response;
};

globalThis.EventSource = class EventSource extends EventTarget {
  constructor(url) {
    super();
    this.url = String(url);
    this.readyState = 0;
    this.lastEventId = "";
    console.log("OPEN " + this.url);
    this.connect();
  }

  async connect() {
    this.controller = new AbortController();
    const headers = { Accept: "text/event-stream", Origin: ORIGIN };
    if (this.lastEventId) headers["Last-Event-ID"] = this.lastEventId;
    let response;
    try {
      response = await nodeFetch(this.url, { headers, signal: this.controller.signal });
    } catch {
      return this.lost();
    }
    if (response.status !== 200 || !allowed(response)) {
      this.readyState = 2;
      this.dispatchEvent(new Event("error"));
      return;
    }
    this.readyState = 1;
    this.dispatchEvent(new Event("open"));
    try {
      await this.read(response.body);
    } catch {
      // the connection dropped
    }
    this.lost();
  }

  async read(body) {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        this.frame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
      }
    }
  }

  frame(text) {
    let type = "message";
    const data = [];
    for (const line of text.split("\n")) {
      if (line.startsWith("event: ")) type = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
      else if (line.startsWith("id: ")) this.lastEventId = line.slice(4);
    }
    if (!data.length) return;
    const event = new Event(type);
    event.data = data.join("\n");
    this.dispatchEvent(event);
  }

  lost() {
    if (this.readyState === 2) return;
    this.readyState = 0;
    this.dispatchEvent(new Event("error"));
    if (this.readyState === 0) setTimeout(() => this.readyState === 0 && this.connect(), 1000);
  }

  close() {
    this.readyState = 2;
    if (this.controller) this.controller.abort();
  }
};
