// The StateStore contract, run against both stores (SQLite under STATE_DIR, a real Redis): features cannot tell them apart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { RedisConnection } from '../../src/infra/state/redisClient.js';
import { RedisStateStore } from '../../src/infra/state/redisStore.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { NS, type StateStore } from '../../src/infra/state/types.js';
import { LogCapture } from '../harness/logs.js';
import { TestRedis } from '../harness/redis.js';

let redis: TestRedis;
let conn: RedisConnection;
let dir: string;
const stores: Record<string, StateStore> = {};

beforeAll(async () => {
  redis = await TestRedis.start();
  conn = new RedisConnection({
    url: redis.url,
    log: createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: new LogCapture('state contract') }),
  });
  await conn.waitReady(5_000);
  stores.redis = new RedisStateStore(conn, systemClock);
  dir = mkdtempSync(join(tmpdir(), 'billbridge-contract-'));
  stores.sqlite = new SqliteStateStore(dir, systemClock);
});
afterAll(async () => {
  await stores.sqlite?.close();
  await stores.redis?.close();
  await conn.close();
  await redis.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Waits until `key` in `ns` has expired (a real clock: Redis keeps time itself). */
async function expired(s: StateStore, ns: string, key: string): Promise<void> {
  await expect.poll(() => s.get(ns, key), { timeout: 5_000, interval: 20 }).toBeUndefined();
}

describe.each(['sqlite', 'redis'])('the %s store', (name) => {
  const s = () => stores[name]!;
  const ns = (n: string) => `contract-${name}-${n}`;

  it('reads back what was written, as a copy, with non-ASCII text and keys, and undefined as null', async () => {
    expect(await s().get(ns('a'), 'missing')).toBeUndefined();
    const value = { list: [1, { deep: true }], name: 'Café Müller № 7 — 東京 🧾', n: 12.5, nothing: null };
    await s().set(ns('a'), 'conv|19:abc@thread.tacv2;messageid=1|東京', value);
    value.list.push(2);
    const read = await s().get<typeof value>(ns('a'), 'conv|19:abc@thread.tacv2;messageid=1|東京');
    expect(read).toEqual({ list: [1, { deep: true }], name: 'Café Müller № 7 — 東京 🧾', n: 12.5, nothing: null });
    read!.list.push(3);
    expect(await s().get(ns('a'), 'conv|19:abc@thread.tacv2;messageid=1|東京')).toEqual({
      list: [1, { deep: true }],
      name: 'Café Müller № 7 — 東京 🧾',
      n: 12.5,
      nothing: null,
    });
    await s().set(ns('a'), 'undefined', undefined);
    expect(await s().get(ns('a'), 'undefined')).toBeNull();
  });

  it('setIfAbsent creates once and leaves the first value; of 30 concurrent claims exactly one wins', async () => {
    expect(await s().setIfAbsent(ns('b'), 'k', 'first')).toBe(true);
    expect(await s().setIfAbsent(ns('b'), 'k', 'second')).toBe(false);
    expect(await s().get(ns('b'), 'k')).toBe('first');
    const claims = await Promise.all(Array.from({ length: 30 }, (_, i) => s().setIfAbsent(ns('b'), 'ev|1', i, { ttlMs: 60_000 })));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await s().get(ns('b'), 'ev|1')).toBe(claims.indexOf(true));
  });

  it('delete says whether there was an entry, and entries lists only live ones of its own namespace', async () => {
    await s().set(ns('c'), 'x', 1);
    await s().set(ns('c'), 'y', 2);
    await s().set(ns('c2'), 'x', 'other namespace');
    expect(await s().delete(ns('c'), 'x')).toBe(true);
    expect(await s().delete(ns('c'), 'x')).toBe(false);
    expect(await s().delete(ns('c'), 'never')).toBe(false);
    expect(await s().entries(ns('c'))).toEqual([['y', 2]]);
    expect(await s().entries(ns('c2'))).toEqual([['x', 'other namespace']]);
    expect(await s().entries(ns('empty'))).toEqual([]);
  });

  it('an entry with a TTL disappears by itself, and then counts as absent: not listed, not deleted, and setIfAbsent takes its place', async () => {
    await s().set(ns('d'), 'keeps', 'yes');
    await s().set(ns('d'), 'was-ttl', 'then no ttl', { ttlMs: 100 });
    await s().set(ns('d'), 'was-ttl', 'no ttl now');
    expect(await s().setIfAbsent(ns('d'), 'lease', 'holder-1', { ttlMs: 100 })).toBe(true);
    await expired(s(), ns('d'), 'lease');
    // A plain set clears an earlier TTL.
    expect(await s().get(ns('d'), 'was-ttl')).toBe('no ttl now');
    expect((await s().entries(ns('d'))).sort()).toEqual([
      ['keeps', 'yes'],
      ['was-ttl', 'no ttl now'],
    ]);
    expect(await s().delete(ns('d'), 'lease')).toBe(false);
    expect(await s().setIfAbsent(ns('d'), 'lease', 'holder-2', { ttlMs: 60_000 })).toBe(true);
    expect(await s().get(ns('d'), 'lease')).toBe('holder-2');
  });

  it('prepend keeps a list newest first and at most `keep` long; of 30 concurrent prepends none is lost', async () => {
    const key = `contract-${name}-org`;
    expect(await s().get(NS.tabEvents, key)).toBeUndefined();
    // Text that looks like the list's own punctuation or a line break stays one item.
    const odd = { at: '2026-03-10T09:15:00.000Z', text: 'Vendor "A, B]\n[C" created', n: 12.5, nested: [1, { deep: [] }] };
    await s().prepend(NS.tabEvents, key, odd, 10);
    await s().prepend(NS.tabEvents, key, 'second', 10);
    expect(await s().get(NS.tabEvents, key)).toEqual(['second', odd]);
    await Promise.all(Array.from({ length: 30 }, (_, i) => s().prepend(NS.tabEvents, key, i, 50)));
    const all = await s().get<unknown[]>(NS.tabEvents, key);
    expect(all).toHaveLength(32);
    expect([...all!.slice(0, 30)].sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: 30 }, (_, i) => i));
    await s().prepend(NS.tabEvents, key, 'newest', 3);
    expect(await s().get(NS.tabEvents, key)).toEqual(['newest', ...all!.slice(0, 2)]);
    await s().prepend(NS.tabEvents, `${key}-ttl`, 'soon gone', 10, { ttlMs: 100 });
    expect(await s().get(NS.tabEvents, `${key}-ttl`)).toEqual(['soon gone']);
    await expired(s(), NS.tabEvents, `${key}-ttl`);
  });

  it('refuses namespace names that could reach other keys or files', async () => {
    await expect(s().set('../etc', 'k', 1)).rejects.toThrow(/Invalid state namespace/);
    await expect(s().get('Bindings', 'k')).rejects.toThrow(/Invalid state namespace/);
    await expect(s().appendAudit({ ok: true })).resolves.toBeUndefined();
    expect(s().isReady()).toBe(true);
  });
});
