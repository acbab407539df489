/**
 * chartr's error envelope `{"error": {"code", "message", ...}}` as typed errors.
 *
 * - ChartrConflictError: 409 (`seq_conflict`, `item_conflict`, `archived`, `conflict`).
 * - ChartrUnknownAgentError: 404 `not_found` for the agent's timeline.
 * - ChartrAuthError: 401 (missing, unknown or revoked token) and 403 (a read-only token wrote).
 * - ChartrNetworkError: no answer (connection refused or reset, timeout), or 503/429 still
 *   answered after every retry.
 * - ChartrError: anything else (400 `invalid`, 413, 500, ...), and the base of the four.
 */

export interface ChartrErrorDetails {
  status?: number;
  code?: string;
  /** The envelope's other keys (`fields`, `item_id`, `seq`, `version`, ...). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class ChartrError extends Error {
  readonly status: number | undefined;
  readonly code: string | undefined;
  readonly details: Record<string, unknown>;

  constructor(message: string, options: ChartrErrorDetails = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status;
    this.code = options.code;
    this.details = options.details ?? {};
  }
}

export class ChartrConflictError extends ChartrError {}
export class ChartrUnknownAgentError extends ChartrError {}
export class ChartrAuthError extends ChartrError {}
export class ChartrNetworkError extends ChartrError {}

interface Envelope {
  code?: unknown;
  message?: unknown;
  [key: string]: unknown;
}

function envelopeOf(body: unknown): Envelope | null {
  if (typeof body !== "object" || body === null) return null;
  const error = (body as { error?: unknown }).error;
  return typeof error === "object" && error !== null ? (error as Envelope) : null;
}

/** The typed error for an answer that is not a success. */
export function errorFromResponse(status: number, body: unknown, what: string): ChartrError {
  const envelope = envelopeOf(body);
  const code = typeof envelope?.code === "string" ? envelope.code : undefined;
  const text = typeof envelope?.message === "string" ? envelope.message : `HTTP ${status}`;
  const { code: _code, message: _message, ...details } = envelope ?? {};
  const options = { status, code, details };
  const message = `${what}: ${text}${code ? ` (${status} ${code})` : ` (${status})`}`;
  if (status === 409) return new ChartrConflictError(message, options);
  if (status === 401 || status === 403) return new ChartrAuthError(message, options);
  if (status === 404 && (code === "not_found" || code === undefined)) return new ChartrUnknownAgentError(message, options);
  if (status === 503 || status === 429) return new ChartrNetworkError(message, options);
  return new ChartrError(message, options);
}
