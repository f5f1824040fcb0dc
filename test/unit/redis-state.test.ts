// The Redis StateStore against a real Redis 7: what one instance writes another reads, atomic dedupe, TTLs, big namespaces, the audit stream, outages.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { DependencyUnavailable } from '../../src/errors.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { RedisConnection, redactRedisUrl } from '../../src/infra/state/redisClient.js';
import { RedisStateStore } from '../../src/infra/state/redisStore.js';
import { NS } from '../../src/infra/state/types.js';
import { LogCapture } from '../harness/logs.js';
import { TestRedis } from '../harness/redis.js';

let redis: TestRedis;
const logs = new LogCapture('redis state');
const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
const conns: RedisConnection[] = [];

function instance(): RedisStateStore {
  // The production command timeout: 3,000 pipelined writes on a loaded two-core CI machine took over 500 ms.
  const conn = new RedisConnection({ url: redis.url, log, commandTimeoutMs: 2_000, maxReconnectDelayMs: 100 });
  conns.push(conn);
  return new RedisStateStore(conn, systemClock);
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 5_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

let a: RedisStateStore;
let b: RedisStateStore;

beforeAll(async () => {
  redis = await TestRedis.start();
  a = instance();
  b = instance();
  await Promise.all(conns.map((c) => c.waitReady(5_000)));
});

afterAll(async () => {
  await Promise.all(conns.map((c) => c.close()));
  await redis.close();
});

describe('two instances share one store', () => {
  it('a conversation reference written by instance A is read, listed and deleted by instance B', async () => {
    const ref = {
      conversation: { id: '19:abc@thread.tacv2' },
      serviceUrl: 'https://smba.trafficmanager.net/amer/',
      at: new Date(0).toISOString(),
    };
    await a.set(NS.conversations, 'tenant|19:abc@thread.tacv2', ref);
    expect(await b.get(NS.conversations, 'tenant|19:abc@thread.tacv2')).toEqual(ref);
    expect(await b.entries(NS.conversations)).toEqual([['tenant|19:abc@thread.tacv2', ref]]);
    expect(await b.delete(NS.conversations, 'tenant|19:abc@thread.tacv2')).toBe(true);
    expect(await a.get(NS.conversations, 'tenant|19:abc@thread.tacv2')).toBeUndefined();
    expect(await a.delete(NS.conversations, 'tenant|19:abc@thread.tacv2')).toBe(false);
    expect(await a.entries(NS.conversations)).toEqual([]);
  });

  it('the same webhook event id offered to both instances 40 times at once is accepted exactly once', async () => {
    const offers = Array.from({ length: 40 }, (_, i) =>
      (i % 2 ? a : b).setIfAbsent(NS.webhookEvents, 'evt-42', { by: i }, { ttlMs: 60_000 }),
    );
    const won = (await Promise.all(offers)).filter(Boolean);
    expect(won).toHaveLength(1);
    const pttl = await redis.client().pttl(`billbridge:state:{${NS.webhookEvents}}:k:evt-42`);
    expect(pttl).toBeGreaterThan(50_000);
    expect(pttl).toBeLessThanOrEqual(60_000);
    // The duplicate-delivery mark is the same atomic set; Redis has kept it when it answers.
    const claims = await Promise.all([
      a.setIfAbsent(NS.seenActivities, 'conv|m1', 1, { ttlMs: 60_000 }),
      b.setIfAbsent(NS.seenActivities, 'conv|m1', 2, { ttlMs: 60_000 }),
    ]);
    expect([...claims].sort()).toEqual([false, true]);
    expect(await b.get(NS.seenActivities, 'conv|m1')).toBe(claims[0] ? 1 : 2);
  });

  it('an entry with a TTL disappears by itself, and a new one can take its place (a lease)', async () => {
    expect(await a.setIfAbsent(NS.outbox, 'lease:evt-7', 'instance-a', { ttlMs: 80 })).toBe(true);
    expect(await b.setIfAbsent(NS.outbox, 'lease:evt-7', 'instance-b', { ttlMs: 80 })).toBe(false);
    await until('the lease to expire', async () => (await b.get(NS.outbox, 'lease:evt-7')) === undefined);
    expect(await b.setIfAbsent(NS.outbox, 'lease:evt-7', 'instance-b', { ttlMs: 60_000 })).toBe(true);
    expect(await a.get(NS.outbox, 'lease:evt-7')).toBe('instance-b');
  });
});

describe('namespaces with thousands of keys', () => {
  it('two instances prepending to one org at once lose nothing, and the list is one key with a TTL and no index', async () => {
    await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).prepend(NS.tabEvents, 'org-shared', i, 50, { ttlMs: 60_000 })));
    const list = await b.get<number[]>(NS.tabEvents, 'org-shared');
    expect([...list!].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const client = redis.client();
    expect(await client.keys('billbridge:state:{tab-events}*')).toEqual(['billbridge:state:{tab-events}:k:org-shared']);
    expect(await client.pttl('billbridge:state:{tab-events}:k:org-shared')).toBeGreaterThan(50_000);
    // A listed namespace would need the index entry prepend does not write.
    await expect(a.prepend(NS.conversations, 'k', 1, 10)).rejects.toThrow(/listable/);
  });

  it('lists 3,000 digest slots, leaves out expired ones, and keeps the index free of them', async () => {
    const writes: Array<Promise<void>> = [];
    for (let i = 0; i < 3_000; i++) writes.push(a.set(NS.digests, `slot-${i}`, { channel: `19:c${i}`, hour: 9 }));
    for (let i = 0; i < 50; i++) writes.push(a.set(NS.digests, `gone-${i}`, { channel: 'x' }, { ttlMs: 30 }));
    await Promise.all(writes);
    await until('the short-lived slots to expire', async () => (await a.get(NS.digests, 'gone-49')) === undefined);
    const listed = await b.entries<{ channel: string }>(NS.digests);
    expect(listed).toHaveLength(3_000);
    expect(new Map(listed).get('slot-2999')).toEqual({ channel: '19:c2999', hour: 9 });
    // The next write with a TTL prunes expired keys from the namespace index.
    await a.set(NS.digests, 'late', 1, { ttlMs: 60_000 });
    expect(await redis.client().zcard(`billbridge:state:{${NS.digests}}:idx`)).toBe(3_001);
  });

  it('keeps an invoice index document of a few megabytes whole (one key per org, as the index stores itself)', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => ({
      id: `00e01${String(i).padStart(15, '0')}`,
      invoiceNumber: `INV-${i}`,
      customerId: `0cu01${i}`,
      amount: i * 1.5,
    }));
    const doc = { v: 1, orgId: '00801ORG', builtAt: Date.now(), rows };
    await a.set(NS.mirror, 'invoice:00801ORG', doc);
    const back = await b.get<typeof doc>(NS.mirror, 'invoice:00801ORG');
    expect(back?.rows).toHaveLength(20_000);
    expect(back?.rows[19_999]).toEqual(rows[19_999]);
  });
});

describe('the audit trail is a Redis stream', () => {
  it('appends records in order, readable by any instance', async () => {
    await a.appendAudit({ kind: 'command', command: 'bills due', result: 'ok' });
    await b.appendAudit({ kind: 'command', command: 'invoice 1042', result: 'ok' });
    expect(await redis.client().xlen('billbridge:log:audit')).toBe(2);
    const records = await redis.client().xrange('billbridge:log:audit', '-', '+');
    expect(records.map(([, fields]) => (JSON.parse(fields[1] ?? '{}') as { command?: string }).command)).toEqual([
      'bills due',
      'invoice 1042',
    ]);
  });

  it('refuses namespace names that could reach other keys', async () => {
    await expect(a.get('Bad NS', 'k')).rejects.toThrow(/Invalid state namespace name/);
  });
});

describe('where the data lives, and what happens without Redis', () => {
  it('says where it is without the password', () => {
    expect(redactRedisUrl('redis://:hunter2-secret@cache.internal:6380/2')).toBe('redis://cache.internal:6380/2');
    expect(redactRedisUrl('rediss://default:hunter2-secret@cache.internal:6380')).toBe('rediss://cache.internal:6380');
    expect(a.auditLocation).toBe(`${redis.url} (stream "audit")`);
    expect(a.kind).toBe('redis');
  });

  it('fails every read and write with DependencyUnavailable while Redis is down, then works again after a restart', async () => {
    await redis.stop();
    await until('the connection to notice', async () => !conns[0]!.ready());
    const err = (await a.get(NS.bindings, 'team').catch((e: unknown) => e)) as DependencyUnavailable;
    expect(err).toBeInstanceOf(DependencyUnavailable);
    expect(err.dependency).toBe('redis');
    await expect(a.set(NS.bindings, 'team', { orgId: 'x' })).rejects.toBeInstanceOf(DependencyUnavailable);
    await expect(a.setIfAbsent(NS.seenActivities, 'x', 1, { ttlMs: 1000 })).rejects.toBeInstanceOf(DependencyUnavailable);
    await expect(a.appendAudit({ kind: 'command' })).rejects.toBeInstanceOf(DependencyUnavailable);
    // Still "ready" for /readyz: it answered once since start; each call says it is unavailable instead.
    expect(a.isReady()).toBe(true);

    await redis.restart();
    await until('the reconnection', async () => conns.every((c) => c.ready()));
    await a.set(NS.bindings, 'team', { orgId: '00801ORG' });
    expect(await b.get(NS.bindings, 'team')).toEqual({ orgId: '00801ORG' });
    const lines = logs.records().map((r) => r.msg);
    expect(lines).toContain(
      'Redis connection lost: BILL commands answer "temporarily unavailable" and nothing is sent to BILL until it is back',
    );
    expect(lines).toContain('Redis connection restored');
  });

  it('an instance that starts while Redis is unreachable is not ready and says so in one clear line', async () => {
    const capture = new LogCapture('redis start');
    const conn = new RedisConnection({
      url: 'redis://127.0.0.1:1',
      log: createLogger({ level: 'info', secrets: new SecretRegistry(), destination: capture }),
      maxReconnectDelayMs: 100,
    });
    const store = new RedisStateStore(conn, systemClock);
    await until('the first connection error', async () => capture.lines.length > 0);
    expect(store.isReady()).toBe(false);
    expect(capture.records()[0]).toMatchObject({
      level: 'error',
      msg: 'Redis at redis://127.0.0.1:1 is unreachable: /readyz reports not ready until it answers',
    });
    await expect(store.get(NS.bindings, 'x')).rejects.toBeInstanceOf(DependencyUnavailable);
    await conn.close();
  });
});

describe('Redis settings under which stored state can vanish', () => {
  it('a Redis that evicts keys under memory pressure (allkeys-lru) is named in an error at the first connection; noeviction is not', async () => {
    const evicting = await TestRedis.start();
    await evicting.client().config('SET', 'maxmemory', '100mb');
    await evicting.client().config('SET', 'maxmemory-policy', 'allkeys-lru');
    const capture = new LogCapture('redis settings');
    const conn = new RedisConnection({
      url: evicting.url,
      log: createLogger({ level: 'info', secrets: new SecretRegistry(), destination: capture }),
    });
    try {
      expect(await conn.waitReady(5_000)).toBe(true);
      const said = (level: string) =>
        capture
          .records()
          .filter((r) => r.level === level && String(r.msg).includes('state'))
          .map((r) => r.msg);
      await conn.settingsChecked;
      expect(said('error')).toEqual([
        'Redis may evict keys (maxmemory-policy allkeys-lru): billbridge state it acknowledged can vanish under memory pressure; set maxmemory-policy noeviction',
      ]);
      // The test Redis keeps no append-only file either: a restart of it loses what was stored since its last snapshot.
      expect(said('warn')).toEqual([
        'Redis keeps no append-only file (appendonly no): a restart of Redis loses billbridge state stored since its last snapshot; set appendonly yes',
      ]);
    } finally {
      await conn.close();
      await evicting.close();
    }

    const safe = await TestRedis.start({ persistent: true });
    await safe.client().config('SET', 'maxmemory', '100mb');
    await safe.client().config('SET', 'maxmemory-policy', 'noeviction');
    const quiet = new LogCapture('redis settings');
    const ok = new RedisConnection({
      url: safe.url,
      log: createLogger({ level: 'info', secrets: new SecretRegistry(), destination: quiet }),
    });
    try {
      expect(await ok.waitReady(5_000)).toBe(true);
      await ok.settingsChecked;
      expect(quiet.records().filter((r) => r.level === 'error' || r.level === 'warn')).toEqual([]);
    } finally {
      await ok.close();
      await safe.close();
    }
  });
});
