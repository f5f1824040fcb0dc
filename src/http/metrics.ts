// Prometheus exposition for GET /metrics: one registry per app (never prom-client's global one), who may read it,
// and its own listener (METRICS_PORT).
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server as NodeServer, type ServerResponse } from 'node:http';
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from '../log.js';
import { errorMessage } from '../errors.js';

export interface MetricsOptions {
  /** Process metrics (CPU, memory, event loop lag, GC); off in tests that build many apps in one process. */
  processMetrics?: boolean;
}

export function createMetricsRegistry(opts: MetricsOptions = {}): Registry {
  const registry = new Registry();
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  return registry;
}

export type MetricsHandler = () => Promise<{ contentType: string; body: string }>;

/** The handler `createHttpServer({ metrics })` serves at /metrics. */
export function metricsHandler(registry: Registry): MetricsHandler {
  return async () => ({ contentType: registry.contentType, body: await registry.metrics() });
}

/**
 * True when the Authorization header is "Bearer <token>". Both sides are hashed first, so the comparison takes
 * the same time whatever the header's length or how much of it matches.
 */
export function bearerMatches(header: unknown, token: string): boolean {
  if (token === '' || typeof header !== 'string' || !/^Bearer /i.test(header)) return false;
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(header.slice('Bearer '.length).trim()), digest(token));
}

/**
 * A one-way name for an id that must not appear in metrics (organisation, tenant, team): HMAC-SHA256 under `key`
 * (METRICS_TOKEN when set, so every instance and restart names an org alike; else a key of this process), so
 * nobody can confirm a guessed id against a label.
 */
export function pseudonym(id: string, key: string | Buffer): string {
  return 'h' + createHmac('sha256', key).update(id, 'utf8').digest('hex').slice(0, 12);
}

/** GET /metrics on its own listener (METRICS_PORT): nothing else is served there. */
export function createMetricsServer(handler: MetricsHandler, token: string, log: Logger): NodeServer {
  const send = (res: ServerResponse, status: number, headers: Record<string, string>, body: string) => {
    res.writeHead(status, headers);
    res.end(body);
  };
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      send(res, 404, { 'content-type': 'application/json' }, JSON.stringify({ error: 'Not found' }));
      return;
    }
    if (token !== '' && !bearerMatches(req.headers.authorization, token)) {
      send(res, 401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }, JSON.stringify({ error: 'Unauthorized' }));
      return;
    }
    handler().then(
      (out) => send(res, 200, { 'content-type': out.contentType }, out.body),
      (err: unknown) => {
        log.error({ err: errorMessage(err) }, 'metrics could not be collected');
        send(res, 500, { 'content-type': 'application/json' }, JSON.stringify({ error: 'Internal error' }));
      },
    );
  });
}

/**
 * A Prometheus counter fed from running totals kept elsewhere (the limiter, the cache): at each scrape it
 * adds what each total grew by since the last one, so it never goes down.
 */
export function counterFromTotals<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  read: () => Array<{ labels: Record<L, string>; total: number }>,
): Counter<L> {
  const seen = new Map<string, number>();
  return new Counter<L>({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      for (const { labels, total } of read()) {
        const key = labelNames.map((l) => labels[l]).join('\u0000');
        const before = seen.get(key);
        if (before === undefined) {
          // First sight of this series: start it at its total (also when that is 0, so it shows).
          this.inc(labels as never, total);
        } else if (total > before) {
          this.inc(labels as never, total - before);
        }
        seen.set(key, Math.max(total, before ?? 0));
      }
    },
  });
}
