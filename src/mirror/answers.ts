// Answers the mirror does not hold (payments, Spend & Expense, lists asked of BILL while an org's mirror is built, a
// notification's Refresh): kept per org for a TTL, one load for identical questions in flight, dropped when a record
// kind they were built from changes. Failures are not kept. Their hits, misses and size are metrics.
import { deserialize, serialize } from 'node:v8';
import { Gauge, type Registry } from 'prom-client';
import { dropOldest } from '../infra/bounded.js';
import type { Clock } from '../infra/clock.js';
import { counterFromTotals } from '../infra/metrics.js';
import type { EntityKind } from './records.js';

export interface Answer<T> {
  value: T;
  /** When BILL answered (ms since epoch): cards say "as of 10:42". */
  fetchedAt: number;
  /** Served from what was kept. */
  hit: boolean;
}

interface Entry {
  /** The answer serialized as structuredClone would copy it: one buffer outside the JS heap, not a tree of objects. */
  value: Buffer;
  fetchedAt: number;
  expiresAt: number;
  kinds: readonly EntityKind[];
}

export class Answers {
  /** "<orgId>\0<key>" -> entry, oldest first. */
  private readonly entries = new Map<string, Entry>();
  private readonly flights = new Map<string, Promise<Answer<unknown>>>();
  /** Bumped by every drop in an org (and `epoch` by clear()): a load in flight across a drop is not kept (it may predate the change). */
  private readonly generations = new Map<string, number>();
  private epoch = 0;
  private hits = 0;
  private misses = 0;

  constructor(
    private readonly clock: Clock,
    private readonly maxEntries: number,
  ) {}

  /** The kept answer for (org, key), or `load`'s, kept ttlS seconds (0: only shared while in flight). */
  async get<T>(
    orgId: string,
    key: string,
    opts: { ttlS: number; kinds: readonly EntityKind[] },
    load: () => Promise<T>,
  ): Promise<Answer<T>> {
    const now = this.clock.now();
    const id = `${orgId}\u0000${key}`;
    const held = this.entries.get(id);
    if (held && held.expiresAt > now) {
      this.hits++;
      // A copy: no caller can change what the next one reads.
      return { value: deserialize(held.value) as T, fetchedAt: held.fetchedAt, hit: true };
    }
    const flight = this.flights.get(id) as Promise<Answer<T>> | undefined;
    if (flight) return { ...(await flight), hit: false };
    this.misses++;
    const generation = this.generations.get(orgId) ?? 0;
    const epoch = this.epoch;
    const run = (async (): Promise<Answer<T>> => {
      const value = await load();
      if (opts.ttlS > 0 && (this.generations.get(orgId) ?? 0) === generation && this.epoch === epoch) {
        this.entries.delete(id);
        this.entries.set(id, { value: serialize(value), fetchedAt: now, expiresAt: now + opts.ttlS * 1000, kinds: opts.kinds });
        // Over the bound: the oldest answers go first.
        while (this.entries.size > this.maxEntries) dropOldest(this.entries);
      }
      return { value, fetchedAt: now, hit: false };
    })();
    this.flights.set(id, run);
    try {
      return await run;
    } finally {
      this.flights.delete(id);
    }
  }

  /** Drops the org's answers built from this kind of record (every answer without kind; one answer with key). */
  drop(orgId: string, kind?: EntityKind, key?: string): void {
    this.generations.set(orgId, (this.generations.get(orgId) ?? 0) + 1);
    const prefix = `${orgId}\u0000`;
    if (key !== undefined) {
      const id = `${prefix}${key}`;
      if (kind === undefined || this.entries.get(id)?.kinds.includes(kind)) this.entries.delete(id);
      return;
    }
    for (const [id, e] of this.entries) {
      if (id.startsWith(prefix) && (kind === undefined || e.kinds.includes(kind))) this.entries.delete(id);
    }
  }

  /** Drops everything (the fleet's drops may have been missed). */
  clear(): void {
    this.entries.clear();
    this.epoch++;
  }

  stats(): { hits: number; misses: number; entries: number } {
    return { hits: this.hits, misses: this.misses, entries: this.entries.size };
  }
}

export type AnswerStats = ReturnType<Answers['stats']>;

/** A stable key for a question and its parameters (order of parameters does not matter). */
export function answerKey(name: string, params: Record<string, string | number | boolean | undefined | null> = {}): string {
  const parts = Object.keys(params)
    .filter((k) => params[k] !== undefined && params[k] !== null)
    .sort()
    .map((k) => `${k}=${String(params[k])}`);
  return parts.length ? `${name}?${parts.join('&')}` : name;
}

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
