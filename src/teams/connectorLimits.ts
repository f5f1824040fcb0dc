// Bot Connector calls under the connector.thread budget: botbuilder's connector clients send through this HTTP client
// (ConnectorClientOptions.httpClient), so every attempt (botbuilder's own retries included) starts inside a limiter
// grant, and a 429 pauses the thread. A message larger than Teams accepts goes out as a card that says so.
import type { ConnectorClientOptions } from 'botframework-connector';
import { request as undiciRequest } from 'undici';
import { ContextSlot } from '../infra/asyncContext.js';
import type { Logger } from '../infra/log.js';
import type { Limiter, Priority, Upstream } from '../infra/limits/types.js';
import { retryAfterMs as parseRetryAfter } from '../infra/limits/windows.js';
import { adaptiveCard, text, title } from '../cards/card.js';
import { cardActivity, isObject } from './routes.js';

/** How long a send may wait for its thread's budget: a late reply beats none (an error card would need the same budget). */
const CONNECTOR_SEND_WAIT_MS = 60_000;

/** 429 without Retry-After: Teams asks for exponential backoff with jitter; botbuilder's pipeline does not retry it. */
const BACKOFF_MS = [1_000, 2_000, 4_000];

/** Teams refuses a bot message over 100 KB of its payload in UTF-16 with 413 MessageSizeTooBig (the person gets nothing). */
const MAX_MESSAGE_UTF16_BYTES = 100 * 1024;

/** What goes out instead of a message Teams would refuse for its size. */
const TOO_LARGE = cardActivity(
  adaptiveCard(
    [
      title('This answer is too large for Teams'),
      text("BILL's answer makes a card larger than Teams accepts. Ask for less (a shorter period, one record), or open it in BILL."),
    ],
    { summary: 'This answer is too large for Teams; ask for less, or open it in BILL.' },
  ),
);

/**
 * The message with its attachments replaced by TOO_LARGE when Teams would refuse its size. Checked here, on the body
 * botbuilder has serialised already: serialising each card to measure it cost ~50 µs a reply, ~4% of a turn's CPU
 * (the overhead bench read 1.26-1.28x the echo bot against 1.17x, 2026-11-27).
 */
function withinTeamsLimit(request: CompatRequest): void {
  if (typeof request.body !== 'string' || request.body.length * 2 <= MAX_MESSAGE_UTF16_BYTES) return;
  let activity: unknown;
  try {
    activity = JSON.parse(request.body);
  } catch {
    return;
  }
  if (!isObject(activity) || !Array.isArray(activity.attachments)) return;
  request.body = JSON.stringify({ ...activity, attachments: TOO_LARGE.attachments, summary: TOO_LARGE.summary });
}

/** Proactive sends (notifications, digests) run inside `background`: they wait behind people's replies. */
export const connectorPriority = new ContextSlot<Priority>('connector priority');

type HttpClient = NonNullable<ConnectorClientOptions['httpClient']>;
type CompatRequest = Parameters<HttpClient['sendRequest']>[0];
type CompatResponse = Awaited<ReturnType<HttpClient['sendRequest']>>;

/** Retry-After as milliseconds, or the retry-after-ms headers Azure services also send; undefined when absent or unreadable. */
export function retryAfterMs(headers: { get(name: string): string | undefined | null }, now = Date.now()): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? headers.get('x-ms-retry-after-ms') ?? NaN);
  return Number.isFinite(ms) && ms >= 0 ? ms : parseRetryAfter(headers.get('retry-after') ?? undefined, now);
}

/** The thread a connector call counts against: the conversation it addresses (service URLs carry a path such as /amer/), else its path. */
export function threadOfUrl(url: string): string {
  try {
    const path = new URL(url).pathname;
    return decodeURIComponent(/\/v3\/conversations\/([^/]+)/.exec(path)?.[1] ?? path);
  } catch {
    return url.slice(0, 200);
  }
}

/** Response headers in the pipeline's own HttpHeadersLike class (botbuilder's package, not ours): the request's, cloned and emptied. */
function responseHeaders(request: CompatRequest, headers: Record<string, string | string[] | undefined>): CompatResponse['headers'] {
  const out = request.headers.clone();
  for (const name of out.headerNames()) out.remove(name);
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined) out.set(name, Array.isArray(value) ? value.join(', ') : value);
  return out;
}

/** One HTTP attempt with undici's request (fetch cost ~7% more CPU per command); a network failure keeps its code. */
async function sendAttempt(request: CompatRequest): Promise<CompatResponse> {
  const body: unknown = request.body ?? undefined;
  const timeout = request.timeout > 0 ? AbortSignal.timeout(request.timeout) : undefined;
  const signals = [request.abortSignal, timeout].filter((s): s is AbortSignal => s !== undefined);
  try {
    const res = await undiciRequest(request.url, {
      method: request.method,
      headers: request.headers.toJson({ preserveCase: true }),
      body: typeof body === 'string' || body === undefined ? body : JSON.stringify(body),
      signal: signals.length > 0 ? AbortSignal.any(signals) : undefined,
    });
    return { request, status: res.statusCode, headers: responseHeaders(request, res.headers), bodyAsText: await res.body.text() };
  } catch (err) {
    const code = (err as { code?: unknown; cause?: { code?: unknown } }).cause?.code ?? (err as { code?: unknown }).code;
    throw Object.assign(new Error(`Bot Connector request failed${typeof code === 'string' ? `: ${code}` : ''}`), { code });
  }
}

/**
 * Each attempt takes a slot of its thread's budget and every 429 pauses that thread for everyone. A 429 means Teams
 * did not accept the message, so a retry never delivers twice. `send`: the HTTP call itself (tests answer without a network).
 */
export function connectorHttpClient(deps: { limiter: Limiter; log: Logger; send?: typeof sendAttempt }): HttpClient {
  const { limiter, log, send = sendAttempt } = deps;
  return {
    async sendRequest(request) {
      const priority: Priority = connectorPriority.getStore() ?? 'interactive';
      const upstream: Upstream = { service: 'connector', conversationId: threadOfUrl(request.url) };
      withinTeamsLimit(request);
      for (let attempt = 0; ; attempt++) {
        const res = await limiter.run(
          upstream,
          { priority, maxWaitMs: priority === 'interactive' ? CONNECTOR_SEND_WAIT_MS : undefined },
          () => send(request),
        );
        if (res.status !== 429 && res.status !== 503) return res;
        const after = retryAfterMs(res.headers);
        if (res.status === 503 && after === undefined) return res;
        // With Retry-After botbuilder's retry policy waits and retries; our pause makes every other send to
        // this thread wait too. Without it, nobody would retry a 429: back off here.
        const pauseMs = after ?? BACKOFF_MS[attempt];
        if (pauseMs === undefined) return res;
        limiter.throttled(upstream, { kind: 'retryAfter', ms: pauseMs });
        log.info({ status: res.status, retryAfterMs: after, attempt }, 'Bot Connector throttled a send');
        if (after !== undefined) return res;
      }
    },
  };
}
