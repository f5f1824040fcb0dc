// Typed errors for Microsoft Graph and the Entra token endpoint; decided from codes and statuses, never from messages.

export type GraphErrorCategory =
  | 'auth' // token endpoint refused the app (invalid_client, unauthorized_client...) or Graph said 401
  | 'forbidden' // 403: no permission (RSC not granted, admin consent missing)
  | 'notFound' // 404 itemNotFound: no such team, or the app cannot see it
  | 'throttled' // 429 (or 503 with Retry-After) that outlasted the retries
  | 'server' // 5xx
  | 'network' // no answer at all (refused, reset, timeout)
  | 'invalidRequest' // the request was wrong before it was sent (e.g. a 19:... thread id instead of a group id)
  | 'unknown';

export class GraphApiError extends Error {
  readonly category: GraphErrorCategory;
  /** Graph's error.code (e.g. itemNotFound), the token endpoint's error (e.g. invalid_client), or ours. */
  readonly code: string;
  /** HTTP status; 0 when no answer came back. */
  readonly status: number;
  /** Graph's innerError request-id, for support cases. */
  readonly requestId: string | undefined;
  /** How long the service asked us to wait (Retry-After), when it did. */
  readonly retryAfterMs: number | undefined;

  constructor(args: {
    category: GraphErrorCategory;
    code: string;
    status: number;
    requestId?: string;
    retryAfterMs?: number;
    message?: string;
    cause?: unknown;
  }) {
    // Logs see the code and status; upstream messages can quote ids, so they stay out of the message.
    super(args.message ?? `Graph ${args.code} (${args.category}, HTTP ${args.status})`, { cause: args.cause });
    this.name = 'GraphApiError';
    this.category = args.category;
    this.code = args.code;
    this.status = args.status;
    this.requestId = args.requestId;
    this.retryAfterMs = args.retryAfterMs;
  }
}
