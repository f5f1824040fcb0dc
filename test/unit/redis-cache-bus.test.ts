// Per-instance caches, fleet-wide invalidations: a webhook handled by instance A drops the stale answer on instance B too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { BroadcastQueryCache, RedisCacheInvalidationBus } from '../../src/cache/bus.js';
import { createLogger, SecretRegistry } from '../../src/log.js';
import { RedisConnection } from '../../src/state/redisClient.js';
import { LogCapture } from '../harness/logs.js';
import { TestRedis } from '../harness/redis.js';
import { limitsConfig } from './limits-helpers.js';

const ORG = '00801ORGCACHE0000001';
let redis: TestRedis;
const conns: RedisConnection[] = [];
const caches: BroadcastQueryCache[] = [];

async function instance(): Promise<BroadcastQueryCache> {
  const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: new LogCapture('cache bus') });
  const conn = new RedisConnection({ url: redis.url, log, maxReconnectDelayMs: 50 });
  conns.push(conn);
  const cache = new BroadcastQueryCache({ config: limitsConfig(), clock: systemClock, log }, new RedisCacheInvalidationBus(conn, log));
  caches.push(cache);
  expect(await conn.waitReady(5_000)).toBe(true);
  return cache;
}

async function until(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Caches "bills due" on an instance and says whether that get loaded from BILL. */
async function billsDue(cache: BroadcastQueryCache, value = 'seven bills'): Promise<boolean> {
  let loaded = false;
  await cache.get(ORG, 'list', 'billsDue', async () => ((loaded = true), value), { entities: ['bill'] });
  return loaded;
}

let a: BroadcastQueryCache;
let b: BroadcastQueryCache;

beforeAll(async () => {
  redis = await TestRedis.start();
  a = await instance();
  b = await instance();
});
afterAll(async () => {
  for (const c of caches) c.close();
  for (const c of conns) await c.close();
  await redis?.close();
});

describe('invalidations reach every instance', () => {
  it('a bill changed (webhook on A) drops "bills due" cached on B; B loads it again on the next ask', async () => {
    await billsDue(a);
    await billsDue(b);
    expect(await billsDue(b)).toBe(false);
    // Subscriptions are asynchronous: wait until B has seen one of A's messages.
    await until("B to receive A's invalidation", () => {
      a.invalidate(ORG, 'bill', '00n01ABC');
      return b.stats().invalidations > 0;
    });
    expect(await billsDue(b)).toBe(true);
    expect(a.stats().invalidations).toBeGreaterThan(0);
  });

  it('an organisation relinked on B drops everything A cached for it', async () => {
    await billsDue(a);
    const before = a.stats().invalidations;
    b.invalidateOrg(ORG);
    await until('A to drop the org', () => a.stats().invalidations > before);
    expect(await billsDue(a)).toBe(true);
  });

  it('a Refresh button on A drops that one answer on B too', async () => {
    await billsDue(a);
    await billsDue(b);
    expect(await billsDue(b)).toBe(false);
    a.delete(ORG, 'list', 'billsDue');
    await until('B to drop the answer', () => b.stats().entries === 0);
    expect(await billsDue(b)).toBe(true);
  });

  it('after Redis was away (invalidations may be lost), each instance drops what it cached', async () => {
    await billsDue(a);
    await billsDue(b);
    expect(b.stats().entries).toBe(1);
    await redis.restart();
    await until('both caches to drop their answers after resubscribing', () => a.stats().entries === 0 && b.stats().entries === 0, 10_000);
    expect(await billsDue(b)).toBe(true);
  });
});
