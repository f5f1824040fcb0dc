// The one request path for Graph and the Entra token endpoint: undici, the shared limiter, Retry-After, typed errors.
import { request } from 'undici';
import type { Logger } from '../infra/log.js';
import type { Limiter, Upstream } from '../infra/limits/types.js';
import { backoffMs, retryAfterMs } from '../infra/limits/windows.js';
import { GraphApiError, type GraphErrorCategory } from './errors.js';

const GRAPH_TIMEOUT_MS = 10_000;
/** Retries after a 429/503/504 (so at most three attempts). */
const MAX_RETRIES = 2;

export interface HttpDeps {
  limiter: Limiter;
  log: Logger;
  sleep: (ms: number) => Promise<unknown>;
  /** Longest Retry-After a call sits through before giving up (a person is waiting for every Graph call). */
  maxWaitMs: number;
}

interface GraphResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: unknown;
}

/**
 * Sends one request under the limiter; 429, 503 and 504 are retried after Retry-After (or a short backoff),
 * and a Retry-After is reported to the limiter so every other caller of that budget waits too.
 * Other statuses are returned for the caller to map.
 */
export async function send(
  deps: HttpDeps,
  opts: {
    upstream: Upstream;
    method: 'GET' | 'POST';
    url: string;
    headers: Record<string, string>;
    body?: string;
    /** Short name for logs ("token", "getTeam"); the URL is never logged with query or secrets. */
    operation: string;
  },
): Promise<GraphResponse> {
  for (let attempt = 0; ; attempt++) {
    const res = await deps.limiter.run(opts.upstream, { priority: 'interactive' }, async (): Promise<GraphResponse> => {
      try {
        const answer = await request(opts.url, {
          method: opts.method,
          headers: { accept: 'application/json', ...opts.headers },
          body: opts.body,
          headersTimeout: GRAPH_TIMEOUT_MS,
          bodyTimeout: GRAPH_TIMEOUT_MS,
        });
        const text = await answer.body.text();
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        return { status: answer.statusCode, headers: answer.headers, json };
      } catch (err) {
        const code = (err as { code?: string }).code ?? 'NetworkError';
        throw new GraphApiError({ category: 'network', code, status: 0, message: `${opts.operation}: no answer (${code})`, cause: err });
      }
    });
    if (res.status !== 429 && res.status !== 503 && res.status !== 504) return res;
    const retryAfter = retryAfterMs(res.headers['retry-after'], Date.now());
    if (retryAfter !== undefined) deps.limiter.throttled(opts.upstream, { kind: 'retryAfter', ms: retryAfter });
    const wait = retryAfter ?? backoffMs(attempt, 500, 4_000);
    const giveUp = attempt >= MAX_RETRIES || wait > deps.maxWaitMs;
    deps.log.info(
      { operation: opts.operation, status: res.status, attempt, retryAfterMs: retryAfter, giveUp },
      'graph throttled or unavailable',
    );
    if (giveUp) return res;
    await deps.sleep(wait);
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
  const requestId = body.error?.innerError?.['request-id'] ?? res.headers['request-id'];
  return new GraphApiError({
    category: categoryOfStatus(res.status),
    code,
    status: res.status,
    requestId: typeof requestId === 'string' ? requestId : undefined,
    retryAfterMs: retryAfterMs(res.headers['retry-after'], Date.now()),
    message: `${operation}: Graph ${code} (HTTP ${res.status})`,
  });
}
