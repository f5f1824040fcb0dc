// The helpers the limiter and the mirror's answers use to publish their figures in the app's Prometheus registry (built
// in app.ts, served by src/http/metrics.ts).
import { createHmac } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';

/**
 * A one-way name for an id that must not appear in metrics (organisation, tenant, team): HMAC-SHA256 under `key`
 * (METRICS_TOKEN when set, so every instance and restart names an org alike; else a key of this process), so
 * nobody can confirm a guessed id against a label.
 */
export function pseudonym(id: string, key: string | Buffer): string {
  return 'h' + createHmac('sha256', key).update(id, 'utf8').digest('hex').slice(0, 12);
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
        // First sight of a series starts it at its total (also when that is 0, so it shows); then it adds what it grew by.
        if (before === undefined || total > before) this.inc(labels, total - (before ?? 0));
        seen.set(key, Math.max(total, before ?? 0));
      }
    },
  });
}
