// Metrics of the answers kept beside the mirror: hits, misses and how many are held.
import { Gauge, type Registry } from 'prom-client';
import { counterFromTotals } from '../infra/metrics.js';
import type { Answers, AnswerStats } from './answers.js';

export function registerAnswerMetrics(registry: Registry, answers: Pick<Answers, 'stats'>): void {
  const total = (name: string, help: string, pick: (s: AnswerStats) => number) =>
    counterFromTotals(registry, name, help, [] as const, () => [{ labels: {}, total: pick(answers.stats()) }]);
  total('billbridge_cache_hits_total', 'Answers served from the cache', (s) => s.hits);
  total('billbridge_cache_misses_total', 'Answers that needed an upstream load', (s) => s.misses);
  new Gauge({
    name: 'billbridge_cache_entries',
    help: 'Answers held',
    registers: [registry],
    collect() {
      this.set(answers.stats().entries);
    },
  });
}
