// What billbridge leaves in Redis: 10,000 deliveries add no key without a TTL and no index member that outlives its
// entry, every key has a TTL or is one of a documented bounded kind, and the audit stream keeps a bounded tail.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { DUPLICATE_WINDOW_MS } from '../../src/teams/bot.js';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { EVENT_ID_TTL_MS, eventKey, outboxKey } from '../../src/notify/receiver.js';
import { RedisConnection } from '../../src/infra/state/redisClient.js';
import { RedisStateStore } from '../../src/infra/state/redisStore.js';
import { NS } from '../../src/infra/state/types.js';
import { startBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { LogCapture } from '../harness/logs.js';
import { TestRedis } from '../harness/redis.js';

/**
 * Keys that may live without a TTL: one per installation, binding, subscription, digest setting, linked person,
 * webhook key or org index, or one index per namespace. None of them is written per delivery.
 */
const BOUNDED_WITHOUT_TTL = [
  /^billbridge:state:\{(conversations|bindings|subscriptions|webhook-keys|digests|mirror|user-links|outbox|dead-letters)\}:(k:.+|idx)$/,
  /^billbridge:log:audit$/,
];

let redis: TestRedis;
let admin: Redis;
const conns: RedisConnection[] = [];
const logs = new LogCapture('hardening redis');
const log = createLogger({ level: 'info', secrets: new SecretRegistry(), destination: logs });

async function store(logMaxEntries?: number): Promise<RedisStateStore> {
  const conn = new RedisConnection({ url: redis.url, log });
  conns.push(conn);
  expect(await conn.waitReady(5_000)).toBe(true);
  return new RedisStateStore(conn, systemClock, logMaxEntries);
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

/** Every key with its PTTL (-1: none). */
async function allKeys(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'COUNT', 1_000);
    cursor = next;
    for (const k of keys) out.set(k, await admin.pttl(k));
  } while (cursor !== '0');
  for (const [k, t] of out) if (t === -2) out.delete(k);
  return out;
}

/**
 * The memory Redis gives the data itself (MEMORY STATS dataset.bytes): used_memory less its overhead, so a client's
 * reply buffer growing by a 256 KB step while keys are listed does not read as data left behind.
 */
async function usedMemory(): Promise<number> {
  const stats = (await admin.call('MEMORY', 'STATS')) as unknown[];
  const at = stats.indexOf('dataset.bytes');
  if (at < 0) throw new Error('MEMORY STATS has no dataset.bytes');
  return Number(stats[at + 1]);
}

/** What one Teams activity and one BILL event leave in the store, as bot.ts, receiver.ts and worker.ts write them. */
async function deliveries(
  s: RedisStateStore,
  from: number,
  n: number,
  ttls: { activity: number; event: number; slot: number },
): Promise<void> {
  const BATCH = 500;
  for (let i = from; i < from + n; i += BATCH) {
    await Promise.all(
      Array.from({ length: Math.min(BATCH, from + n - i) }, async (_, j) => {
        const id = `evt-${i + j}`;
        // The duplicate-delivery mark of an activity.
        expect(await s.setIfAbsent(NS.seenActivities, `19:c@thread.tacv2|m${i + j}`, Date.now(), { ttlMs: ttls.activity })).toBe(true);
        // A webhook: outbox entry, event id mark, a lease while sending, then the outbox entry goes.
        expect(await s.setIfAbsent(NS.outbox, outboxKey('00801LOAD', id), { v: 1, eventId: id })).toBe(true);
        await s.set(NS.webhookEvents, eventKey('00801LOAD', id), { at: Date.now(), type: 'invoice.updated' }, { ttlMs: ttls.event });
        expect(await s.setIfAbsent(NS.outbox, `lease|${eventKey('00801LOAD', id)}`, { by: 'x' }, { ttlMs: 30_000 })).toBe(true);
        await s.delete(NS.outbox, `lease|${eventKey('00801LOAD', id)}`);
        await s.delete(NS.outbox, outboxKey('00801LOAD', id));
        // The approver digest slot of the day.
        await s.setIfAbsent(NS.approvalDigests, `p${(i + j) % 50}|day`, { at: 1 }, { ttlMs: ttls.slot });
      }),
    );
  }
}

beforeAll(async () => {
  redis = await TestRedis.start();
  admin = redis.client();
});

afterAll(async () => {
  await Promise.all(conns.map((c) => c.close()));
  await redis.close();
});

describe('Redis under noeviction does not fill up with deliveries', () => {
  it('10,000 deliveries add only keys that expire, and no index grows with them', async () => {
    const s = await store();
    // Some lasting state, as a running fleet has.
    await s.set(NS.subscriptions, 'tenant|team|19:c|invoices', { kind: 'invoices' });
    await s.set(NS.conversations, 'tenant|19:c', { id: '19:c' });
    const before = await allKeys();
    const memBefore = await usedMemory();

    await deliveries(s, 0, 10_000, { activity: DUPLICATE_WINDOW_MS, event: EVENT_ID_TTL_MS, slot: 3 * 24 * 3_600_000 });

    const after = await allKeys();
    const memAfter = await usedMemory();
    const withoutTtlBefore = [...before]
      .filter(([, t]) => t === -1)
      .map(([k]) => k)
      .sort();
    const withoutTtlAfter = [...after]
      .filter(([, t]) => t === -1)
      .map(([k]) => k)
      .sort();
    // Only the keys that were there before have no TTL: nothing written per delivery lives for ever.
    expect(withoutTtlAfter).toEqual(withoutTtlBefore);
    for (const k of withoutTtlAfter)
      expect(
        BOUNDED_WITHOUT_TTL.some((re) => re.test(k)),
        k,
      ).toBe(true);
    // Every index holds no more members than its namespace's entries without TTL (here: one each).
    for (const k of withoutTtlAfter.filter((k) => k.endsWith(':idx'))) expect(await admin.zcard(k), k).toBeLessThanOrEqual(1);
    // What was added is one key per activity mark, per event id mark and per digest slot, each with its TTL.
    expect(after.size - before.size).toBe(10_000 + 10_000 + 50);
    for (const [k, t] of after) if (!before.has(k)) expect(t, k).toBeLessThanOrEqual(EVENT_ID_TTL_MS);
    log.info(`10,000 deliveries: keys ${before.size} -> ${after.size}, dataset bytes ${memBefore} -> ${memAfter}`);
  }, 120_000);

  it('10,000 more deliveries whose windows have passed leave Redis where it was: same keys, same memory', async () => {
    const s = await store();
    const round = async (from: number) => {
      const before = await allKeys();
      await deliveries(s, from, 10_000, { activity: 1_000, event: 1_000, slot: 1_000 });
      expect((await allKeys()).size).toBeGreaterThan(before.size);
      // Redis expires the marks itself: reading a key past its TTL removes it, and its active cycle gets the rest.
      await until('the short-lived marks to expire', async () => (await allKeys()).size <= before.size);
      expect(await admin.dbsize()).toBe(before.size);
      expect([...(await allKeys()).keys()].sort()).toEqual([...before.keys()].sort());
      return usedMemory();
    };
    // The first round lets Redis size its tables for the peak; the second must not leave anything on top.
    const first = await round(100_000);
    const second = await round(200_000);
    log.info(`expired deliveries: dataset bytes ${first} -> ${second}`);
    // 10,000 index members left behind would be well over half a megabyte.
    expect(second - first).toBeLessThan(128 * 1024);
  }, 240_000);

  it('the audit stream keeps about its newest records, not every command ever', async () => {
    const s = await store(100);
    for (let i = 0; i < 2_000; i++) await s.appendAudit({ kind: 'command', i });
    const len = await admin.xlen('billbridge:log:audit');
    expect(len).toBeGreaterThanOrEqual(100);
    expect(len).toBeLessThan(300);
    const [newest] = await admin.xrevrange('billbridge:log:audit', '+', '-', 'COUNT', 1);
    expect(JSON.parse(newest?.[1][1] ?? '{}')).toMatchObject({ i: 1_999 });
  });

  it('the bot over HTTP in cluster mode leaves only keys with a TTL or of a documented bounded kind', async () => {
    const connector = await new ConnectorStandIn().start();
    const bot = await startBot({ env: { REDIS_URL: redis.url, LOG_LEVEL: 'info' }, connector });
    try {
      for (const text of ['help', 'bills due', 'invoices overdue', 'status']) {
        const res = await bot.say(text, { channel: '19:channel-hardening@thread.tacv2' });
        expect(res.status).toBe(200);
        await connector.waitForMessages(1, res.activity.conversation.id);
      }
      const keys = await allKeys();
      // The BILL calls went through the shared limiter and session ledger: their keys are checked below too.
      expect([...keys.keys()].some((k) => k.includes('bill:session'))).toBe(true);
      const marks = [...keys.keys()].filter((k) => k.includes('{seen-activities}'));
      expect(marks.length).toBeGreaterThanOrEqual(3);
      for (const [k, t] of keys) {
        if (t === -1)
          expect(
            BOUNDED_WITHOUT_TTL.some((re) => re.test(k)),
            `${k} has no TTL and is not a bounded kind`,
          ).toBe(true);
      }
      expect(await admin.exists('billbridge:state:{seen-activities}:idx')).toBe(0);
    } finally {
      await bot.close();
      await connector.stop();
    }
  });
});
