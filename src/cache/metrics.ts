// Cache metrics: hits, misses, shared loads, evictions, invalidations, and how much is held.
import { Gauge, type Registry } from 'prom-client';
import { counterFromTotals } from '../infra/metrics.js';
import type { CacheStats, QueryCache } from './index.js';

export function registerCacheMetrics(registry: Registry, cache: Pick<QueryCache, 'stats'>): void {
  const total = (name: string, help: string, pick: (s: CacheStats) => number) =>
    counterFromTotals(registry, name, help, [] as const, () => [{ labels: {}, total: pick(cache.stats()) }]);
  total('billbridge_cache_hits_total', 'Answers served from the cache', (s) => s.hits);
  total('billbridge_cache_misses_total', 'Answers that needed an upstream load', (s) => s.misses);
  total('billbridge_cache_coalesced_total', 'Answers that shared an identical load already in flight', (s) => s.coalesced);
  total('billbridge_cache_evictions_total', 'Answers dropped to stay within CACHE_MAX_ENTRIES / CACHE_MAX_BYTES', (s) => s.evictions);
  total('billbridge_cache_invalidations_total', 'Answers dropped because a record they were built from changed', (s) => s.invalidations);
  total('billbridge_cache_load_errors_total', 'Upstream loads that failed (not cached)', (s) => s.loadErrors);
  new Gauge({ name: 'billbridge_cache_entries', help: 'Answers held', registers: [registry], collect() { this.set(cache.stats().entries); } });
  new Gauge({ name: 'billbridge_cache_bytes', help: 'Approximate size of the answers held (JSON bytes)', registers: [registry], collect() { this.set(cache.stats().bytes); } });
}
