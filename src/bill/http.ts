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
import { backoffMs, HOUR_MS, nextHour, retryAfterMs } from '../infra/limits/windows.js';
import { readCapped } from '../infra/bodies.js';

export interface BillRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** API base without the version, e.g. https://gateway.stage.bill.com/connect */
  baseUrl: string;
  /** Starts with /v3/. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
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

/** Retries of network errors and 5xx for idempotent calls. */
const MAX_RETRIES = 2;
/** A BILL answer larger than this is refused unread: a page of 100 records is well under 1 MB. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;
const DEFAULT_RETRY = {
  /** Retries after BDC_1322 / Spend & Expense 429 (any method: BILL refused the request before doing anything). */
  maxThrottleRetries: 4,
  baseDelayMs: 200,
  maxDelayMs: 4_000,
};
export type RetryPolicy = typeof DEFAULT_RETRY;

/** A Map: a code in BILL's answer is never looked up among the properties every object inherits. */
const KNOWN_CODES = new Map<string, BillErrorCategory>([
  ['BDC_1109', 'session'],
  ['BDC_1101', 'credentials'],
  ['BDC_1102', 'credentials'],
  ['BDC_1103', 'credentials'],
  ['BDC_1144', 'hourlyLimit'],
  ['BDC_1322', 'concurrencyLimit'],
  ['BDC_1205', 'notFound'],
]);

const CODE_SHAPE = /^[A-Za-z0-9_.-]{1,64}$/;

/** Reads BILL's error body: an array of entries, a single entry object, anything else -> []. */
export function parseErrorEntries(text: string): BillErrorEntry[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const list: unknown[] = Array.isArray(parsed) ? parsed : [parsed];
  return list
    .filter((e): e is Record<string, unknown> => !!e && typeof e === 'object')
    .map((e) => {
      const entry: BillErrorEntry = {};
      for (const k of ['code', 'severity', 'category', 'message', 'timestamp'] as const) {
        if (typeof e[k] === 'string') entry[k] = e[k];
      }
      // The code is named in log lines and on the status card: only what looks like a code (BDC_1109).
      if (entry.code !== undefined && !CODE_SHAPE.test(entry.code)) delete entry.code;
      return entry;
    });
}

function categoryOfStatus(status: number): BillErrorCategory {
  if (status === 429) return 'rateLimited';
  if (status >= 500) return 'server';
  if (status === 404) return 'notFound';
  if (status === 401 || status === 403) return 'credentials';
  return status >= 400 ? 'validation' : 'unknown';
}

/** Turns a non-2xx answer into a BillApiError, by BDC code first, then by status; `api`: which BILL API answered. */
export function classifyResponse(
  status: number,
  text: string,
  headers: IncomingHttpHeaders,
  nowMs: number,
  api: BillApiError['api'] = 'bill',
): BillApiError {
  const entries = parseErrorEntries(text);
  // A known code decides the category wherever it is in the array; otherwise the first code is named.
  const code = entries.find((e) => e.code && KNOWN_CODES.has(e.code))?.code ?? entries.find((e) => e.code)?.code;
  const category = (code ? KNOWN_CODES.get(code) : undefined) ?? categoryOfStatus(status);
  let wait: number | undefined;
  // BILL's hourly budget comes back at the top of the clock hour.
  if (category === 'hourlyLimit') wait = nextHour(nowMs) - nowMs;
  // The limiter pauses at most an hour for a Retry-After (a broken header must not stop a budget for a day): say so too.
  else if (category === 'rateLimited') wait = Math.min(HOUR_MS, retryAfterMs(headers['retry-after'], nowMs) ?? 60_000);
  const shape = text.trim() === '' ? 'empty body' : entries.length === 0 ? 'non-JSON body' : undefined;
  const message = `BILL ${code ?? shape ?? 'error'} (${category}, HTTP ${status})`;
  return new BillApiError({ category, status, code, entries, retryAfterMs: wait, message, api });
}

/** The request path to BILL: `send` (through the limiter, with retries) and `close` (the connection pool). */
export function billHttp(deps: {
  limiter: Limiter;
  clock: Clock;
  log: Logger;
  /** A request's whole time, body included, connecting at most 10 s of it (config.bill.requestTimeoutMs). */
  timeoutMs: number;
  retry?: Partial<RetryPolicy>;
}) {
  const retry = { ...DEFAULT_RETRY, ...deps.retry };
  const agent = new Agent({
    connections: 16,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
    connectTimeout: Math.min(deps.timeoutMs, 10_000),
  });

  /** One attempt; `endBy`: when the person's turn needs it ended (app clock), if sooner than the request timeout. */
  async function once<T>(req: BillRequest, endBy: number | undefined): Promise<T> {
    const url = new URL(req.baseUrl);
    // %20 rather than '+' for spaces: both decode, but '+' is ambiguous outside form bodies.
    const query = Object.entries(req.query ?? {})
      .filter(([, v]) => v !== undefined && v !== '')
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
      .join('&');
    const path = url.pathname.replace(/\/+$/, '') + req.path + (query ? `?${query}` : '');
    const headers: Record<string, string> = { accept: 'application/json', ...req.headers() };
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    if (body !== undefined) headers['content-type'] = 'application/json';
    const started = performance.now();
    // undici's body timeout is between chunks: a body trickling a byte at a time would hold the slot for ever. The
    // timeout is the whole request's, body included, and ends with the person's turn when that comes first.
    const left = endBy === undefined ? deps.timeoutMs : Math.min(deps.timeoutMs, Math.max(0, endBy - deps.clock.now()));
    const signal = AbortSignal.timeout(left);
    const { status, resHeaders, text } = await agent
      .request({ origin: url.origin, path, method: req.method, headers, body, signal })
      .then(async (res) => ({
        status: res.statusCode,
        resHeaders: res.headers,
        text: await readCapped(res.body, res.headers['content-length'], MAX_BODY_BYTES),
      }))
      .catch((err: unknown) => {
        const code = signal.aborted ? 'timed out' : (err as { code?: unknown } | null)?.code;
        deps.log.debug({ route: req.route, error: code ?? String(err) }, 'BILL request failed without an answer');
        const message = `BILL unreachable (${typeof code === 'string' ? code : err instanceof Error ? err.name : 'error'})`;
        throw new BillApiError({ category: 'network', status: 0, message, cause: err });
      });
    const ms = Math.round(performance.now() - started);
    const unreadable = (what: string) =>
      new BillApiError({ category: 'unknown', status, message: `BILL answered ${req.route} with ${what} (HTTP ${status})` });
    if (text === undefined) {
      deps.log.warn({ route: req.route, status, ms, maxBytes: MAX_BODY_BYTES }, 'BILL answer too large; not read');
      throw unreadable(`a body larger than ${MAX_BODY_BYTES} bytes`);
    }
    if (status >= 200 && status < 300) {
      deps.log.debug({ route: req.route, status, ms }, 'BILL call');
      if (text.trim() === '') return undefined as T;
      try {
        return JSON.parse(text) as T;
      } catch {
        throw unreadable('a non-JSON body');
      }
    }
    const err = classifyResponse(status, text, resHeaders, deps.clock.now(), req.upstream.service === 'spend' ? 'spend' : 'bill');
    deps.log.debug({ route: req.route, status, ms, code: err.code, category: err.category }, 'BILL call refused');
    throw err;
  }

  /** Sends the request through the limiter, retrying what may be retried; resolves with the parsed JSON (undefined for an empty body). */
  async function send<T>(req: BillRequest): Promise<T> {
    const { limiter, log } = deps;
    const { baseDelayMs, maxDelayMs } = retry;
    let failures = 0;
    let throttles = 0;
    for (;;) {
      let endBy: number | undefined;
      try {
        return await limiter.run(req.upstream, req.run, (call) => {
          endBy = call.endBy;
          return once<T>(req, endBy);
        });
      } catch (err) {
        if (!(err instanceof BillApiError)) throw err;
        let wait: number;
        if (err.category === 'concurrencyLimit') {
          limiter.throttled(req.upstream, { kind: 'concurrency' });
          if (throttles >= retry.maxThrottleRetries) throw err;
          wait = backoffMs(throttles++, baseDelayMs, maxDelayMs);
          log.debug({ route: req.route, wait }, 'BILL concurrency limit (BDC_1322): backing off');
        } else if (err.category === 'hourlyLimit') {
          limiter.throttled(req.upstream, { kind: 'hourly', untilMs: deps.clock.now() + (err.retryAfterMs ?? 3_600_000) });
          log.warn({ route: req.route, retryAfterMs: err.retryAfterMs }, 'BILL hourly request limit reached (BDC_1144)');
          throw err;
        } else if (err.category === 'rateLimited') {
          limiter.throttled(req.upstream, { kind: 'retryAfter', ms: err.retryAfterMs ?? 60_000 });
          throw err;
        } else {
          const retryable = req.idempotent && (err.category === 'network' || err.category === 'server');
          if (!retryable || failures >= MAX_RETRIES) throw err;
          wait = backoffMs(failures++, baseDelayMs, maxDelayMs);
          log.warn({ route: req.route, category: err.category, status: err.status, attempt: failures, wait }, 'BILL call failed; retrying');
        }
        // A person's turn that has no time left for another attempt is told what went wrong now, not "busy" later.
        if (endBy !== undefined && deps.clock.now() + wait >= endBy) throw err;
        await sleep(wait);
      }
    }
  }

  return { send, close: () => agent.close() };
}

export type BillHttp = ReturnType<typeof billHttp>;
