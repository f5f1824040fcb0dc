// Query-result cache (node-cache): per-kind TTLs, entry and byte bounds, single-flight loads, invalidation by entity.
import NodeCache from 'node-cache';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';

/** How long a kind of answer stays fresh: lists ~60 s, single objects ~5 min, vendor/customer names ~1 h. */
export type CacheKind = 'list' | 'object' | 'names';

/** BILL record kinds a webhook (or our own write) can change. */
export type EntityKind = 'bill' | 'invoice' | 'vendor' | 'customer' | 'payment' | 'spend';

export const ENTITY_KINDS: readonly EntityKind[] = ['bill', 'invoice', 'vendor', 'customer', 'payment', 'spend'];

/** What a cached answer was built from: every record of a kind (a list), or one record. */
export type EntityDep = EntityKind | { entity: EntityKind; id: string };

export interface CacheGetOptions {
  /** Records the answer depends on; invalidate() drops it when one of them changes. */
  entities?: EntityDep[];
  /** Overrides the kind's TTL (seconds; 0 = share in-flight loads only, keep nothing). */
  ttlS?: number;
}

export interface Cached<T> {
  value: T;
  /** When the upstream data was fetched (ms since epoch): cards say "as of 10:42". */
  fetchedAt: number;
  /** Served from the cache. */
  hit: boolean;
  /** Shared an identical load already in flight. */
  coalesced: boolean;
}

export interface CacheStats {
  hits: number;
  misses: number;
  coalesced: number;
  loadErrors: number;
  evictions: number;
  invalidations: number;
  /** Loads whose answer was not kept because an invalidation arrived while they were in flight. */
  discarded: number;
  entries: number;
  bytes: number;
  /** Share of gets answered without their own upstream load (hits and coalesced). */
  hitRatio: number;
}

export interface CacheDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  /** Largest single answer kept, in bytes (default: an eighth of CACHE_MAX_BYTES). */
  maxEntryBytes?: number;
}

interface Meta {
  orgId: string;
  bytes: number;
  fetchedAt: number;
  expiresAt: number;
  /** Index keys this entry is listed under. */
  index: string[];
}

const SEP = '\u0000';

/** A stable key for a query and its parameters (order of keys does not matter). */
export function queryKey(name: string, params: Record<string, string | number | boolean | undefined | null> = {}): string {
  const parts = Object.keys(params)
    .filter((k) => params[k] !== undefined && params[k] !== null)
    .sort()
    .map((k) => `${k}=${String(params[k])}`);
  return parts.length ? `${name}?${parts.join('&')}` : name;
}

export class QueryCache {
  private readonly store: NodeCache;
  /** Entries in least-recently-used order (first = next to evict). */
  private readonly meta = new Map<string, Meta>();
  /** org+entity -> entries depending on every record of the kind (lists). */
  private readonly byKind = new Map<string, Set<string>>();
  /** org+entity+id -> entries depending on that record. */
  private readonly byRecord = new Map<string, Set<string>>();
  /** org+entity -> every entry depending on the kind in any way. */
  private readonly byAny = new Map<string, Set<string>>();
  /** Bumped by every invalidation of org+entity (and org-wide), so loads in flight across it are not kept. */
  private readonly generations = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<Cached<unknown>>>();
  private bytes = 0;
  private readonly counts = { hits: 0, misses: 0, coalesced: 0, loadErrors: 0, evictions: 0, invalidations: 0, discarded: 0 };
  private readonly ttlS: Record<CacheKind, number>;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly maxEntryBytes: number;

  constructor(private readonly deps: CacheDeps) {
    const c = deps.config.cache;
    this.ttlS = { list: c.listTtlS, object: c.objectTtlS, names: c.namesTtlS };
    this.maxEntries = c.maxEntries;
    this.maxBytes = c.maxBytes;
    this.maxEntryBytes = deps.maxEntryBytes ?? Math.max(1024, Math.floor(c.maxBytes / 8));
    // Answers are kept as their JSON text (the size counted against CACHE_MAX_BYTES is the memory they take, not a
    // third of it) and parsed on each hit, so no caller can change what the next one reads.
    this.store = new NodeCache({ stdTTL: 0, checkperiod: 60, useClones: false, deleteOnExpire: true });
    this.store.on('expired', (key: string) => this.forget(key));
  }

  /**
   * The cached answer for (org, kind, key), or the result of `load` (shared by every identical get while it
   * is in flight). Failures are not cached.
   */
  async get<T>(orgId: string, kind: CacheKind, key: string, load: () => Promise<T>, opts: CacheGetOptions = {}): Promise<Cached<T>> {
    const id = [orgId, kind, key].join(SEP);
    const now = this.deps.clock.now();
    const m = this.meta.get(id);
    if (m) {
      if (m.expiresAt > now) {
        const text = this.store.get<string>(id);
        if (text !== undefined) {
          this.counts.hits++;
          this.meta.delete(id);
          this.meta.set(id, m);
          return { value: JSON.parse(text) as T, fetchedAt: m.fetchedAt, hit: true, coalesced: false };
        }
      }
      this.remove(id);
    }
    const pending = this.inflight.get(id) as Promise<Cached<T>> | undefined;
    if (pending) {
      this.counts.coalesced++;
      const shared = await pending;
      return { ...shared, hit: false, coalesced: true };
    }
    this.counts.misses++;
    const flight = this.load(id, orgId, kind, load, opts);
    this.inflight.set(id, flight as Promise<Cached<unknown>>);
    try {
      return await flight;
    } finally {
      this.inflight.delete(id);
    }
  }

  private async load<T>(id: string, orgId: string, kind: CacheKind, load: () => Promise<T>, opts: CacheGetOptions): Promise<Cached<T>> {
    const deps = opts.entities ?? [];
    const gens = this.generationsOf(orgId, deps);
    const fetchedAt = this.deps.clock.now();
    let value: T;
    try {
      value = await load();
    } catch (err) {
      this.counts.loadErrors++;
      throw err;
    }
    const ttlS = opts.ttlS ?? this.ttlS[kind];
    if (ttlS > 0 && value !== undefined) {
      if (this.generationsOf(orgId, deps).some((g, i) => g !== gens[i])) this.counts.discarded++;
      else this.put(id, orgId, value, fetchedAt, ttlS, deps);
    }
    return { value, fetchedAt, hit: false, coalesced: false };
  }

  private generationsOf(orgId: string, deps: EntityDep[]): number[] {
    const out = [this.generations.get(orgId) ?? 0];
    for (const d of deps) out.push(this.generations.get(orgId + SEP + (typeof d === 'string' ? d : d.entity)) ?? 0);
    return out;
  }

  private put(id: string, orgId: string, value: unknown, fetchedAt: number, ttlS: number, deps: EntityDep[]): void {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch {
      return; // not serialisable (cycles, BigInt): not kept
    }
    if (text === undefined) return;
    const bytes = Buffer.byteLength(text, 'utf8') + id.length;
    if (bytes > this.maxEntryBytes) {
      this.deps.log.debug({ kind: id.split(SEP)[1], bytes }, 'answer too large to cache');
      return;
    }
    const index: string[] = [];
    for (const d of deps) {
      const entity = typeof d === 'string' ? d : d.entity;
      const kindKey = orgId + SEP + entity;
      index.push('a' + kindKey);
      index.push(typeof d === 'string' ? 'k' + kindKey : 'r' + kindKey + SEP + d.id);
    }
    this.remove(id);
    this.store.set(id, text, ttlS);
    this.meta.set(id, { orgId, bytes, fetchedAt, expiresAt: fetchedAt + ttlS * 1000, index });
    this.bytes += bytes;
    for (const ix of index) this.indexOf(ix).add(id);
    this.evict();
  }

  private indexOf(ix: string): Set<string> {
    const map = ix[0] === 'a' ? this.byAny : ix[0] === 'k' ? this.byKind : this.byRecord;
    const k = ix.slice(1);
    let set = map.get(k);
    if (!set) {
      set = new Set();
      map.set(k, set);
    }
    return set;
  }

  private evict(): void {
    while (this.meta.size > this.maxEntries || this.bytes > this.maxBytes) {
      const oldest = this.meta.keys().next();
      if (oldest.done) return;
      this.remove(oldest.value);
      this.counts.evictions++;
    }
  }

  private remove(id: string): void {
    if (!this.meta.has(id)) return;
    this.store.del(id);
    this.forget(id);
  }

  private forget(id: string): void {
    const m = this.meta.get(id);
    if (!m) return;
    this.meta.delete(id);
    this.bytes -= m.bytes;
    for (const ix of m.index) {
      const map = ix[0] === 'a' ? this.byAny : ix[0] === 'k' ? this.byKind : this.byRecord;
      const set = map.get(ix.slice(1));
      set?.delete(id);
      if (set && set.size === 0) map.delete(ix.slice(1));
    }
  }

  /**
   * A record (or, without id, every record of a kind) changed in BILL: drops every answer built from it,
   * and keeps loads already in flight from storing what they fetched before the change. Returns how many
   * answers were dropped.
   */
  invalidate(orgId: string, entity: EntityKind, id?: string): number {
    const kindKey = orgId + SEP + entity;
    this.generations.set(kindKey, (this.generations.get(kindKey) ?? 0) + 1);
    const victims = new Set<string>();
    if (id === undefined) {
      for (const e of this.byAny.get(kindKey) ?? []) victims.add(e);
    } else {
      for (const e of this.byKind.get(kindKey) ?? []) victims.add(e);
      for (const e of this.byRecord.get(kindKey + SEP + id) ?? []) victims.add(e);
    }
    for (const v of victims) this.remove(v);
    this.counts.invalidations += victims.size;
    return victims.size;
  }

  /** Drops one cached answer (a card's Refresh button); a load already in flight is left to finish. True when one was held. */
  delete(orgId: string, kind: CacheKind, key: string): boolean {
    const id = [orgId, kind, key].join(SEP);
    const held = this.meta.has(id);
    this.remove(id);
    return held;
  }

  /** Drops everything cached for an organisation (e.g. a team was linked to another one). */
  invalidateOrg(orgId: string): number {
    this.generations.set(orgId, (this.generations.get(orgId) ?? 0) + 1);
    const victims = [...this.meta.entries()].filter(([, m]) => m.orgId === orgId).map(([k]) => k);
    for (const v of victims) this.remove(v);
    this.counts.invalidations += victims.length;
    return victims.length;
  }

  stats(): CacheStats {
    const gets = this.counts.hits + this.counts.misses + this.counts.coalesced;
    return {
      ...this.counts,
      entries: this.meta.size,
      bytes: this.bytes,
      hitRatio: gets === 0 ? 0 : (this.counts.hits + this.counts.coalesced) / gets,
    };
  }

  close(): void {
    this.store.flushAll();
    this.store.close();
    this.meta.clear();
    this.byAny.clear();
    this.byKind.clear();
    this.byRecord.clear();
    this.bytes = 0;
  }
}

export function createCache(deps: CacheDeps): QueryCache {
  return new QueryCache(deps);
}
