// The one request path for Graph and the Entra token endpoint: undici, the shared limiter, Retry-After, typed errors.
import { request } from 'undici';
import type { Logger } from '../infra/log.js';
import type { Limiter, Priority, Upstream } from '../infra/limits/types.js';
import { backoffMs, retryAfterMs } from '../infra/limits/windows.js';
import { GraphApiError, type GraphErrorCategory } from './errors.js';

const GRAPH_TIMEOUT_MS = 10_000;
/** Retries after a 429/503/504 (so at most three attempts). */
const MAX_RETRIES = 2;

export type Sleep = (ms: number) => Promise<void>;

export const realSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export interface HttpDeps {
  limiter: Limiter;
  log: Logger;
  sleep: Sleep;
  /** Longest Retry-After an interactive call sits through before giving up (a person is waiting). */
  interactiveMaxWaitMs: number;
}

export interface GraphResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: unknown;
}

export interface SendOptions {
  upstream: Upstream;
  priority: Priority;
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  body?: string;
  /** Short name for logs ("token", "getTeam"); the URL is never logged with query or secrets. */
  operation: string;
}

/**
 * Sends one request under the limiter; 429, 503 and 504 are retried after Retry-After (or a short backoff),
 * and a Retry-After is reported to the limiter so every other caller of that budget waits too.
 * Other statuses are returned for the caller to map.
 */
export async function send(deps: HttpDeps, opts: SendOptions): Promise<GraphResponse> {
  for (let attempt = 0; ; attempt++) {
    const res = await deps.limiter.run(opts.upstream, { priority: opts.priority }, () => once(opts));
    const retryable = res.status === 429 || res.status === 503 || res.status === 504;
    if (!retryable) return res;
    const retryAfter = retryAfterMs(res.headers['retry-after'], Date.now());
    if (retryAfter !== undefined) deps.limiter.throttled(opts.upstream, { kind: 'retryAfter', ms: retryAfter });
    const wait = retryAfter ?? backoffMs(attempt, 500, 4_000);
    const tooLong = opts.priority === 'interactive' && wait > deps.interactiveMaxWaitMs;
    deps.log.info(
      { operation: opts.operation, status: res.status, attempt, retryAfterMs: retryAfter, giveUp: attempt >= MAX_RETRIES || tooLong },
      'graph throttled or unavailable',
    );
    if (attempt >= MAX_RETRIES || tooLong) return res;
    await deps.sleep(wait);
  }
}

async function once(opts: SendOptions): Promise<GraphResponse> {
  try {
    const res = await request(opts.url, {
      method: opts.method,
      headers: { accept: 'application/json', ...opts.headers },
      body: opts.body,
      headersTimeout: GRAPH_TIMEOUT_MS,
      bodyTimeout: GRAPH_TIMEOUT_MS,
    });
    const text = await res.body.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, json };
  } catch (err) {
    const code = (err as { code?: string }).code ?? 'NetworkError';
    throw new GraphApiError({ category: 'network', code, status: 0, message: `${opts.operation}: no answer (${code})`, cause: err });
  }
}

function categoryOfStatus(status: number): GraphErrorCategory {
  if (status === 401) return 'auth';
  if (status === 403) return 'forbidden';
  if (status === 404) return 'notFound';
  if (status === 429) return 'throttled';
  if (status >= 500) return 'server';
  return 'unknown';
}

/** Graph's `{error:{code,message,innerError:{'request-id'}}}` -> GraphApiError. */
export function graphError(res: GraphResponse, operation: string): GraphApiError {
  const body = (res.json ?? {}) as { error?: { code?: unknown; innerError?: { 'request-id'?: unknown } } };
  const code = typeof body.error?.code === 'string' ? body.error.code : `HTTP${res.status}`;
  const requestId = typeof body.error?.innerError?.['request-id'] === 'string' ? body.error.innerError['request-id'] : undefined;
  const headerId = res.headers['request-id'];
  return new GraphApiError({
    category: categoryOfStatus(res.status),
    code,
    status: res.status,
    requestId: requestId ?? (typeof headerId === 'string' ? headerId : undefined),
    retryAfterMs: retryAfterMs(res.headers['retry-after'], Date.now()),
    message: `${operation}: Graph ${code} (HTTP ${res.status})`,
  });
}
