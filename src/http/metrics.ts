// Prometheus exposition for GET /metrics: one registry per app (never prom-client's global one).
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';

export interface MetricsOptions {
  /** Process metrics (CPU, memory, event loop lag, GC); off in tests that build many apps in one process. */
  processMetrics?: boolean;
}

export function createMetricsRegistry(opts: MetricsOptions = {}): Registry {
  const registry = new Registry();
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  return registry;
}

/** The handler `createHttpServer({ metrics })` serves at /metrics. */
export function metricsHandler(registry: Registry): () => Promise<{ contentType: string; body: string }> {
  return async () => ({ contentType: registry.contentType, body: await registry.metrics() });
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
