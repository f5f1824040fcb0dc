// The query cache: freshness per kind, bounds, one upstream load for identical questions, and invalidation by entity.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createCache, queryKey, type QueryCache } from '../../src/cache/index.js';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { createLogger, SecretRegistry } from '../../src/log.js';

const ORG = '00801ORGANISATION001';
const OTHER = '00801ORGANISATION002';
let cache: QueryCache;

function makeCache(env: Record<string, string> = {}, maxEntryBytes?: number): QueryCache {
  const config = loadConfig({ NODE_ENV: 'test', STATE_DIR: '/tmp/unused', ...env });
  return createCache({ config, clock: systemClock, log: createLogger({ level: 'silent', secrets: new SecretRegistry() }), maxEntryBytes });
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((a, b) => {
    resolve = a;
    reject = b;
  });
  return { promise, resolve, reject };
}

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2025-03-03T10:42:00.000Z') });
});
afterEach(() => {
  cache?.close();
  vi.useRealTimers();
});

describe('freshness per kind', () => {
  it('keeps a list for 60 s, a single bill for 5 min and vendor names for an hour, and says when each was fetched', async () => {
    cache = makeCache();
    const loads = { list: 0, object: 0, names: 0 };
    const get = (kind: 'list' | 'object' | 'names') => cache.get(ORG, kind, `q-${kind}`, async () => ++loads[kind]);
    const fetchedAt = Date.now();
    for (const kind of ['list', 'object', 'names'] as const)
      expect(await get(kind)).toEqual({ value: 1, fetchedAt, hit: false, coalesced: false });

    await vi.advanceTimersByTimeAsync(59_000);
    expect(await get('list')).toMatchObject({ value: 1, hit: true, fetchedAt });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await get('list')).toMatchObject({ value: 2, hit: false, fetchedAt: fetchedAt + 60_000 });

    await vi.advanceTimersByTimeAsync(239_000);
    expect(await get('object')).toMatchObject({ value: 1, hit: true });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await get('object')).toMatchObject({ value: 2, hit: false });

    await vi.advanceTimersByTimeAsync(3_299_000);
    expect(await get('names')).toMatchObject({ value: 1, hit: true });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await get('names')).toMatchObject({ value: 2, hit: false });
  });

  it('keeps organisations apart', async () => {
    cache = makeCache();
    await cache.get(ORG, 'list', 'bills due', async () => 'org one');
    expect(await cache.get(OTHER, 'list', 'bills due', async () => 'org two')).toMatchObject({ value: 'org two', hit: false });
  });

  it('does not cache failures: the next ask tries again', async () => {
    cache = makeCache();
    await expect(cache.get(ORG, 'object', 'bill 1', async () => Promise.reject(new Error('BILL down')))).rejects.toThrow('BILL down');
    expect(await cache.get(ORG, 'object', 'bill 1', async () => 'bill')).toMatchObject({ value: 'bill', hit: false });
    expect(cache.stats()).toMatchObject({ loadErrors: 1, misses: 2 });
  });

  it('with a TTL of 0 keeps nothing but still shares loads in flight', async () => {
    cache = makeCache({ CACHE_TTL_LIST_S: '0' });
    const d = deferred<string>();
    const load = vi.fn(() => d.promise);
    const both = Promise.all([cache.get(ORG, 'list', 'x', load), cache.get(ORG, 'list', 'x', load)]);
    d.resolve('v');
    await both;
    await cache.get(ORG, 'list', 'x', async () => 'again');
    expect(load).toHaveBeenCalledTimes(1);
    expect(cache.stats().entries).toBe(0);
  });
});

describe('one upstream load for identical questions', () => {
  it('answers 50 identical "bills due" asked at once with a single load', async () => {
    cache = makeCache();
    const d = deferred<string[]>();
    const load = vi.fn(() => d.promise);
    const asks = Array.from({ length: 50 }, () => cache.get(ORG, 'list', queryKey('billsDue', { days: 7 }), load, { entities: ['bill'] }));
    d.resolve(['b1', 'b2']);
    const answers = await Promise.all(asks);
    expect(load).toHaveBeenCalledTimes(1);
    expect(answers.every((a) => a.value === answers[0]!.value)).toBe(true);
    expect(answers.filter((a) => a.coalesced)).toHaveLength(49);
    expect(cache.stats()).toMatchObject({ misses: 1, coalesced: 49, hits: 0, hitRatio: 49 / 50 });
  });

  it('gives every waiter the same failure, once', async () => {
    cache = makeCache();
    const d = deferred<string>();
    const load = vi.fn(() => d.promise);
    const asks = Array.from({ length: 5 }, () => cache.get(ORG, 'list', 'q', load).catch((e: Error) => e.message));
    d.reject(new Error('BDC_1322'));
    expect(await Promise.all(asks)).toEqual(Array(5).fill('BDC_1322'));
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('builds keys that ignore parameter order and missing values', () => {
    expect(queryKey('bills', { days: 7, vendor: 'Acme' })).toBe(queryKey('bills', { vendor: 'Acme', status: undefined, days: 7 }));
    expect(queryKey('help')).toBe('help');
  });
});

describe('bounds', () => {
  it('evicts the least recently used answers beyond CACHE_MAX_ENTRIES', async () => {
    cache = makeCache({ CACHE_MAX_ENTRIES: '10' });
    for (let i = 0; i < 10; i++) await cache.get(ORG, 'object', `bill ${i}`, async () => i);
    await cache.get(ORG, 'object', 'bill 0', async () => -1); // touch: now the most recent
    await cache.get(ORG, 'object', 'bill 10', async () => 10);
    expect(cache.stats()).toMatchObject({ entries: 10, evictions: 1 });
    expect(await cache.get(ORG, 'object', 'bill 0', async () => -1)).toMatchObject({ hit: true, value: 0 });
    expect(await cache.get(ORG, 'object', 'bill 1', async () => -1)).toMatchObject({ hit: false, value: -1 });
  });

  it('stays under CACHE_MAX_BYTES and never keeps one oversized answer', async () => {
    cache = makeCache({ CACHE_MAX_BYTES: '10240' }, 4_000);
    const blob = (n: number) => 'x'.repeat(n);
    for (let i = 0; i < 10; i++) await cache.get(ORG, 'list', `page ${i}`, async () => blob(3_000));
    const s = cache.stats();
    expect(s.bytes).toBeLessThanOrEqual(10_240);
    expect(s.entries).toBe(3);
    expect(s.evictions).toBe(7);
    await cache.get(ORG, 'list', 'huge', async () => blob(5_000));
    expect(await cache.get(ORG, 'list', 'huge', async () => 'reloaded')).toMatchObject({ hit: false, value: 'reloaded' });
  });
});

describe('what a hit returns', () => {
  it('is a fresh copy of the stored answer: a caller that changes it changes nothing for the next one', async () => {
    cache = makeCache();
    const first = await cache.get(ORG, 'object', 'bill 1', async () => ({ id: 'b1', lines: [{ amount: 10 }] }));
    first.value.lines[0]!.amount = 999;
    const second = await cache.get(ORG, 'object', 'bill 1', async () => ({ id: 'never', lines: [] as Array<{ amount: number }> }));
    expect(second).toMatchObject({ hit: true, value: { id: 'b1', lines: [{ amount: 10 }] } });
    second.value.lines.push({ amount: 1 });
    expect(
      (await cache.get(ORG, 'object', 'bill 1', async () => ({ id: 'never', lines: [] as Array<{ amount: number }> }))).value.lines,
    ).toHaveLength(1);
  });

  it('counts each answer by the bytes of its JSON text, which is what it keeps', async () => {
    cache = makeCache();
    const value = { id: 'b1', vendor: 'Ironwood Cloud LLC', amount: 15199.31 };
    await cache.get(ORG, 'object', 'bill 1', async () => value);
    const key = [ORG, 'object', 'bill 1'];
    expect(cache.stats().bytes).toBe(JSON.stringify(value).length + key.join('\u0000').length);
  });
});

describe('invalidation by entity', () => {
  it('a changed bill drops lists of bills and that bill, not other bills, vendors, or other organisations', async () => {
    cache = makeCache();
    const put = (org: string, key: string, entities: Parameters<QueryCache['get']>[4]) =>
      cache.get(org, 'object', key, async () => key, entities);
    await put(ORG, 'bills due', { entities: ['bill', 'vendor'] });
    await put(ORG, 'bill b1', { entities: [{ entity: 'bill', id: 'b1' }] });
    await put(ORG, 'bill b2', { entities: [{ entity: 'bill', id: 'b2' }] });
    await put(ORG, 'vendors', { entities: ['vendor'] });
    await put(OTHER, 'bill b1', { entities: [{ entity: 'bill', id: 'b1' }] });

    expect(cache.invalidate(ORG, 'bill', 'b1')).toBe(2);
    const hit = async (org: string, key: string) => (await cache.get(org, 'object', key, async () => 'reloaded')).hit;
    expect(await hit(ORG, 'bill b2')).toBe(true);
    expect(await hit(ORG, 'vendors')).toBe(true);
    expect(await hit(OTHER, 'bill b1')).toBe(true);
    expect(await hit(ORG, 'bills due')).toBe(false);
    expect(await hit(ORG, 'bill b1')).toBe(false);
  });

  it('without an id drops everything built from that kind', async () => {
    cache = makeCache();
    await cache.get(ORG, 'object', 'invoice 1042', async () => 1, {
      entities: [
        { entity: 'invoice', id: 'i1' },
        { entity: 'customer', id: 'c1' },
      ],
    });
    await cache.get(ORG, 'list', 'invoices overdue', async () => 2, { entities: ['invoice'] });
    await cache.get(ORG, 'names', 'customers', async () => 3, { entities: ['customer'] });
    expect(cache.invalidate(ORG, 'invoice')).toBe(2);
    expect(cache.stats()).toMatchObject({ entries: 1, invalidations: 2 });
    expect(cache.invalidateOrg(ORG)).toBe(1);
    expect(cache.stats().entries).toBe(0);
  });

  it('does not keep an answer fetched before a change that arrived while it was loading', async () => {
    cache = makeCache();
    const d = deferred<string>();
    const first = cache.get(ORG, 'list', 'bills due', () => d.promise, { entities: ['bill'] });
    cache.invalidate(ORG, 'bill', 'b7');
    d.resolve('stale');
    expect((await first).value).toBe('stale');
    expect(await cache.get(ORG, 'list', 'bills due', async () => 'fresh', { entities: ['bill'] })).toMatchObject({
      value: 'fresh',
      hit: false,
    });
    expect(cache.stats().discarded).toBe(1);
  });
});
