// The one request path to BILL: undici keep-alive pool, timeouts, the limiter, BDC error arrays -> BillApiError, retries.
//
// Verified facts this file relies on (shared/reference/bill-v3-api.md §3, Postman collection):
// - error bodies are JSON arrays of {timestamp, code, severity, category, message[, params, detail, help]};
//   some validation 400s carry no code; the HTTP status of the rate-limit errors is undocumented, so we
//   classify by the BDC code first and fall back to the status only when there is no known code;
// - BDC_1144 (20,000 requests/hour) resets at the top of the next clock hour; BDC_1322 (3 in flight per org)
//   clears when a request finishes: back off and retry;
// - credentials (devKey, sessionId, apiToken) travel in headers only, never in a query string.
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent } from 'undici';
import type { IncomingHttpHeaders } from 'node:http';
import type { Clock } from '../infra/clock.js';
import { BillApiError, type BillErrorCategory, type BillErrorEntry } from '../errors.js';
import type { Logger } from '../infra/log.js';
import type { Limiter, RunOptions, Upstream } from '../infra/limits/types.js';
import { nextHour, retryAfterMs } from '../infra/limits/windows.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type QueryValue = string | number | boolean | undefined;

export interface BillRequest {
  method: HttpMethod;
  /** API base without the version, e.g. https://gateway.stage.bill.com/connect */
  baseUrl: string;
  /** Starts with /v3/. */
  path: string;
  query?: Record<string, QueryValue>;
  /** Evaluated for every attempt right before sending, inside the limiter slot (a queued call picks up a fresh sessionId). */
  headers: () => Record<string, string>;
  body?: unknown;
  /** GET and other calls that may be repeated safely: network errors and 5xx are retried. */
  idempotent: boolean;
  upstream: Upstream;
  run: RunOptions;
  /** Low-cardinality label for logs, e.g. "GET /v3/bills/{id}"; never ids or values. */
  route: string;
}

export interface RetryPolicy {
  /** Retries of network errors and 5xx for idempotent calls. */
  maxRetries: number;
  /** Retries after BDC_1322 / Spend & Expense 429 (any method: BILL refused the request before doing anything). */
  maxThrottleRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

const DEFAULT_RETRY: RetryPolicy = { maxRetries: 2, maxThrottleRetries: 4, baseDelayMs: 200, maxDelayMs: 4_000 };

export interface BillHttpDeps {
  limiter: Limiter;
  clock: Clock;
  log: Logger;
  /** Connect, headers and body timeout (config.bill.requestTimeoutMs). */
  timeoutMs: number;
  retry?: Partial<RetryPolicy>;
}

const KNOWN_CODES: Record<string, BillErrorCategory> = {
  BDC_1109: 'session',
  BDC_1101: 'credentials',
  BDC_1102: 'credentials',
  BDC_1103: 'credentials',
  BDC_1144: 'hourlyLimit',
  BDC_1322: 'concurrencyLimit',
  BDC_1205: 'notFound',
};

/** Reads BILL's error body: an array of entries, a single entry object, anything else -> []. */
export function parseErrorEntries(text: string): BillErrorEntry[] {
  if (!text.trim()) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const list = Array.isArray(parsed) ? parsed : parsed && typeof parsed === 'object' ? [parsed] : [];
  return list
    .filter((e): e is Record<string, unknown> => !!e && typeof e === 'object')
    .map((e) => {
      const entry: BillErrorEntry = {};
      for (const k of ['code', 'severity', 'category', 'message', 'timestamp'] as const) {
        if (typeof e[k] === 'string') entry[k] = e[k];
      }
      return entry;
    });
}

/** Turns a non-2xx answer into a BillApiError, by BDC code first, then by status. */
export function classifyResponse(status: number, text: string, headers: IncomingHttpHeaders, nowMs: number): BillApiError {
  const entries = parseErrorEntries(text);
  const known = entries.find((e) => e.code && KNOWN_CODES[e.code]);
  const code = known?.code ?? entries.find((e) => e.code)?.code;
  let category: BillErrorCategory;
  const knownCategory = known?.code ? KNOWN_CODES[known.code] : undefined;
  if (knownCategory) category = knownCategory;
  else if (status === 429) category = 'rateLimited';
  else if (status >= 500) category = 'server';
  else if (status === 404) category = 'notFound';
  else if (status === 401 || status === 403) category = 'credentials';
  else if (status >= 400) category = 'validation';
  else category = 'unknown';
  let retryAfter: number | undefined;
  // BILL's hourly budget comes back at the top of the clock hour.
  if (category === 'hourlyLimit') retryAfter = nextHour(nowMs) - nowMs;
  else if (category === 'rateLimited') retryAfter = retryAfterMs(headers['retry-after'], nowMs) ?? 60_000;
  const shape = text.trim() === '' ? 'empty body' : entries.length === 0 ? 'non-JSON body' : undefined;
  return new BillApiError({
    category,
    status,
    code,
    entries,
    retryAfterMs: retryAfter,
    message: `BILL ${code ?? shape ?? 'error'} (${category}, HTTP ${status})`,
  });
}

function networkError(err: unknown): BillApiError {
  const code = (err as { code?: string } | null)?.code;
  return new BillApiError({
    category: 'network',
    status: 0,
    message: `BILL unreachable (${code ?? (err instanceof Error ? err.name : 'error')})`,
    cause: err,
  });
}

function buildPath(path: string, query: Record<string, QueryValue> | undefined): string {
  if (!query) return path;
  const parts: string[] = [];
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === '') continue;
    // %20 rather than '+': both decode, but '+' is ambiguous outside form bodies.
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? `${path}?${parts.join('&')}` : path;
}

export class BillHttp {
  private readonly agent: Agent;
  private readonly retry: RetryPolicy;

  constructor(private readonly deps: BillHttpDeps) {
    this.retry = { ...DEFAULT_RETRY, ...deps.retry };
    this.agent = new Agent({
      connections: 16,
      keepAliveTimeout: 30_000,
      keepAliveMaxTimeout: 120_000,
      connectTimeout: Math.min(deps.timeoutMs, 10_000),
      headersTimeout: deps.timeoutMs,
      bodyTimeout: deps.timeoutMs,
    });
  }

  /** Exponential backoff with jitter: base * 2^n, scaled by a random factor in [0.5, 1). */
  private backoffMs(attempt: number): number {
    const ceiling = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** attempt);
    return Math.round(ceiling * (0.5 + Math.random() * 0.5));
  }

  /** Sends the request through the limiter, retrying what may be retried; resolves with the parsed JSON (undefined for an empty body). */
  async send<T>(req: BillRequest): Promise<T> {
    let failures = 0;
    let throttles = 0;
    for (;;) {
      try {
        return await this.deps.limiter.run(req.upstream, req.run, () => this.once<T>(req));
      } catch (err) {
        if (!(err instanceof BillApiError)) throw err;
        if (err.category === 'concurrencyLimit') {
          this.deps.limiter.throttled(req.upstream, { kind: 'concurrency' });
          if (throttles < this.retry.maxThrottleRetries) {
            const wait = this.backoffMs(throttles++);
            this.deps.log.debug({ route: req.route, wait }, 'BILL concurrency limit (BDC_1322): backing off');
            await sleep(wait);
            continue;
          }
          throw err;
        }
        if (err.category === 'hourlyLimit') {
          this.deps.limiter.throttled(req.upstream, { kind: 'hourly', untilMs: this.deps.clock.now() + (err.retryAfterMs ?? 3_600_000) });
          this.deps.log.warn({ route: req.route, retryAfterMs: err.retryAfterMs }, 'BILL hourly request limit reached (BDC_1144)');
          throw err;
        }
        if (err.category === 'rateLimited') {
          const ms = err.retryAfterMs ?? 60_000;
          this.deps.limiter.throttled(req.upstream, { kind: 'retryAfter', ms });
          throw err;
        }
        const retryable = req.idempotent && (err.category === 'network' || err.category === 'server');
        if (retryable && failures < this.retry.maxRetries) {
          const wait = this.backoffMs(failures++);
          this.deps.log.warn(
            { route: req.route, category: err.category, status: err.status, attempt: failures, wait },
            'BILL call failed; retrying',
          );
          await sleep(wait);
          continue;
        }
        throw err;
      }
    }
  }

  private async once<T>(req: BillRequest): Promise<T> {
    const url = new URL(req.baseUrl);
    const path = url.pathname.replace(/\/+$/, '') + buildPath(req.path, req.query);
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers() };
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    const started = performance.now();
    let res;
    try {
      res = await this.agent.request({ origin: url.origin, path, method: req.method, headers, body });
    } catch (err) {
      this.deps.log.debug(
        { route: req.route, error: (err as { code?: string } | null)?.code ?? String(err) },
        'BILL request failed without an answer',
      );
      throw networkError(err);
    }
    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      throw networkError(err);
    }
    const ms = Math.round(performance.now() - started);
    if (res.statusCode >= 200 && res.statusCode < 300) {
      this.deps.log.debug({ route: req.route, status: res.statusCode, ms }, 'BILL call');
      if (text.trim() === '') return undefined as T;
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new BillApiError({
          category: 'unknown',
          status: res.statusCode,
          message: `BILL answered ${req.route} with a non-JSON body (HTTP ${res.statusCode})`,
        });
      }
    }
    const err = classifyResponse(res.statusCode, text, res.headers, this.deps.clock.now());
    this.deps.log.debug({ route: req.route, status: res.statusCode, ms, code: err.code, category: err.category }, 'BILL call refused');
    return Promise.reject(err);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
