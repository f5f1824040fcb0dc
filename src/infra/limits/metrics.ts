// Limiter metrics: per budget limit, used, remaining, queued, running, refusals and the last server-side throttle.
import { Gauge, type Registry } from 'prom-client';
import { counterFromTotals, pseudonym } from '../metrics.js';
import type { SharedLimiter } from './limiter.js';
import type { BudgetSnapshot } from './types.js';

/** A budget key as a metric label: each part that is not already a one-way name (hashed keys, "*") becomes one. */
function budgetKeyLabel(key: string, pseudonymKey: string | Buffer): string {
  return key
    .split('/')
    .map((part) => (part === '' || part === '*' || /^k[0-9a-f]{12}$/.test(part) ? part : pseudonym(part, pseudonymKey)))
    .join('/');
}

const seconds = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000);

export function registerLimiterMetrics(registry: Registry, limiter: SharedLimiter, pseudonymKey: string | Buffer): void {
  // One snapshot per scrape, shared by every gauge below (a scrape's collects run in one turn of the event loop).
  let cached: BudgetSnapshot[] | undefined;
  const rows = (): BudgetSnapshot[] => {
    if (!cached) {
      cached = limiter.snapshot();
      setImmediate(() => (cached = undefined));
    }
    return cached;
  };
  const gauges: Array<[string, string, (r: BudgetSnapshot) => number | undefined]> = [
    ['limit', 'Calls the budget allows (per window, or in flight); lower than configured while shrunk after BDC_1322', (r) => r.limit],
    ['used', 'Calls counted in the current window (or in flight)', (r) => r.used],
    ['remaining', 'Calls the budget still allows in the current window', (r) => r.remaining],
    ['queued', 'Calls waiting for the budget', (r) => r.queued],
    ['running', 'Calls holding a concurrency slot', (r) => r.running],
    ['window_seconds', 'Length of the window used/limit/remaining describe', (r) => seconds(r.windowMs)],
    [
      'last_throttle_timestamp_seconds',
      'When the upstream last throttled this budget (BDC_1322, BDC_1144, 429)',
      (r) => seconds(r.lastThrottleAt),
    ],
    ['blocked_until_timestamp_seconds', 'While frozen (BDC_1144) or paused (Retry-After): until when', (r) => seconds(r.blockedUntil)],
  ];
  for (const [name, help, pick] of gauges) {
    new Gauge({
      name: `billbridge_budget_${name}`,
      help,
      labelNames: ['budget', 'key'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const r of rows()) {
          const v = pick(r);
          if (v !== undefined) this.set({ budget: r.budget, key: budgetKeyLabel(r.key, pseudonymKey) }, v);
        }
      },
    });
  }

  counterFromTotals(registry, 'billbridge_budget_granted_total', 'Calls admitted by the budget', ['budget'] as const, () =>
    limiter.budgetCounters().map((c) => ({ labels: { budget: c.budget }, total: c.granted })),
  );
  const perKind = [
    ['rejected', 'Calls refused by the limiter without reaching the upstream, by reason', 'reason'],
    ['throttles', 'Server-side throttles reported by upstreams, by kind', 'kind'],
  ] as const;
  for (const [field, help, label] of perKind) {
    counterFromTotals<string>(registry, `billbridge_budget_${field}_total`, help, ['budget', label], () =>
      limiter
        .budgetCounters()
        .flatMap((c) => Object.entries(c[field]).map(([k, n]) => ({ labels: { budget: c.budget, [label]: k }, total: n }))),
    );
  }
}
