/**
 * One request to chartr, retried when it may not have arrived or was refused for a moment.
 *
 * A retry sends the very same request (method, path, body), so a write the server did commit
 * before the answer was lost is recognised on the retry: appends carry the `item_id` the store
 * generated once, bulk inserts answer 200 for rows already there, and row updates with the same
 * content store no new revision.
 *
 * Retried: no answer at all (fetch rejected: refused, reset, timed out), and 503 `busy`,
 * `database_unavailable`, `maintenance` or `shutting_down` and 429 `throttled` after their `Retry-After`.
 */

import { ChartrError, ChartrNetworkError, errorFromResponse } from "./errors.js";

export interface HttpOptions {
  baseUrl: string;
  token: string;
  /** Defaults to the global fetch (Node 20's). */
  fetch?: typeof fetch;
  /** Further attempts after the first (default 5). */
  retries?: number;
  /** The first back-off after a failed connection, doubled each time (default 200 ms). */
  retryDelayMs?: number;
  /** The longest wait between attempts, Retry-After included (default 10 s). */
  maxRetryDelayMs?: number;
  /** How long one attempt may take (default 30 s). */
  timeoutMs?: number;
}

export interface Request {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
}

export interface Answer {
  status: number;
  body: unknown;
}

// database_unavailable may follow a commit whose answer was lost: every request this client sends
// repeats safely (item ids, the same rows again, the same row update), so it is retried too.
const RETRIED_CODES = new Set(["busy", "database_unavailable", "maintenance", "shutting_down", "throttled"]);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class Http {
  private readonly baseUrl: string;
  private readonly token: string;
  private readonly fetchImpl: typeof fetch;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly timeoutMs: number;

  constructor(options: HttpOptions) {
    if (!options.baseUrl) throw new TypeError("baseUrl is required");
    if (!options.token) throw new TypeError("token is required");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.token = options.token;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.retries = options.retries ?? 5;
    this.retryDelayMs = options.retryDelayMs ?? 200;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 10_000;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  url(path: string, query?: Request["query"]): string {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return { Authorization: `Bearer ${this.token}`, Accept: "application/json", ...extra };
  }

  async send(request: Request): Promise<Answer> {
    const url = this.url(request.path, request.query);
    const what = `${request.method} ${request.path}`;
    const init: RequestInit = {
      method: request.method,
      headers: this.headers(request.body === undefined ? {} : { "Content-Type": "application/json" }),
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
    };
    let failure: ChartrError | undefined;
    for (let attempt = 0; attempt <= this.retries; attempt += 1) {
      let response: Response;
      try {
        response = await this.fetchImpl(url, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (cause) {
        failure = new ChartrNetworkError(`${what}: no answer from chartr (${describe(cause)})`, { cause });
        if (attempt < this.retries) await sleep(Math.min(this.retryDelayMs * 2 ** attempt, this.maxRetryDelayMs));
        continue;
      }
      const body = await readBody(response);
      if (response.ok) return { status: response.status, body };
      const error = errorFromResponse(response.status, body, what);
      if (!(error instanceof ChartrNetworkError && RETRIED_CODES.has(error.code ?? ""))) throw error;
      failure = error;
      if (attempt < this.retries) await sleep(this.retryAfter(response, attempt));
    }
    throw failure ?? new ChartrNetworkError(`${what}: no answer from chartr`);
  }

  private retryAfter(response: Response, attempt: number): number {
    const header = response.headers.get("Retry-After");
    const seconds = header === null ? Number.NaN : Number(header);
    const ms = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : this.retryDelayMs * 2 ** attempt;
    return Math.min(ms, this.maxRetryDelayMs);
  }
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === "") return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    const code = typeof inner === "object" && inner !== null ? (inner as { code?: unknown }).code : undefined;
    return typeof code === "string" ? `${cause.message}: ${code}` : cause.message;
  }
  return String(cause);
}
