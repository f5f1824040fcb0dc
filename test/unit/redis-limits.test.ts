// Fleet-wide budgets on a real Redis 7: shared concurrency, reservoirs and windows, and no permanent failure after key
// expiry, FLUSHALL, a restart without persistence, a client timeout or a crashed instance.
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { DependencyUnavailable, LimitExceeded } from '../../src/errors.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { RedisBudgetStore } from '../../src/infra/limits/redisStore.js';
import { nextHour } from '../../src/infra/limits/windows.js';
import { RedisConnection } from '../../src/infra/state/redisClient.js';
import { LogCapture } from '../harness/logs.js';
import { TestRedis } from '../harness/redis.js';
import { BILL, HeldCall, LOGIN, limitsConfig } from './limits-helpers.js';

let redis: TestRedis;
const logs = new LogCapture('redis limits');
const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
let open: Array<{ conn: RedisConnection; limiter: SharedLimiter }> = [];

interface InstanceOptions {
  lockTimeoutMs?: number;
  commandTimeoutMs?: number;
}

/** One instance of the fleet whose keys start with `prefix`. */
async function member(prefix: string, env: Record<string, string> = {}, opts: InstanceOptions = {}) {
  const conn = new RedisConnection({
    url: redis.url,
    log,
    commandTimeoutMs: opts.commandTimeoutMs ?? 1_000,
    maxReconnectDelayMs: 50,
    keyPrefix: prefix,
  });
  const limiter = new SharedLimiter({
    config: limitsConfig(env),
    clock: systemClock,
    log,
    store: new RedisBudgetStore({ redis: conn, log, lockTimeoutMs: opts.lockTimeoutMs }),
  });
  open.push({ conn, limiter });
  expect(await conn.waitReady(5_000)).toBe(true);
  return { conn, limiter };
}

/** One bot instance's limiter on the shared Redis, alone under its own key prefix. */
async function instance(env: Record<string, string> = {}, opts: InstanceOptions = {}) {
  return member(`t${open.length}-${Date.now()}:`, env, opts);
}

/** Two instances of one fleet: same key prefix, same Redis. */
async function fleet(env: Record<string, string> = {}, opts: InstanceOptions = {}) {
  const prefix = `fleet-${open.length}-${Date.now()}:`;
  return [await member(prefix, env, opts), await member(prefix, env, opts)] as const;
}

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Calls that record how many run at once. */
function meter() {
  let running = 0;
  let max = 0;
  return {
    get max() {
      return max;
    },
    call: (ms: number) => async () => {
      running++;
      max = Math.max(max, running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
      return 'ok';
    },
  };
}

beforeAll(async () => {
  redis = await TestRedis.start();
});
afterEach(async () => {
  for (const { limiter, conn } of open) {
    await limiter.close();
    await conn.close();
  }
  open = [];
});
afterAll(async () => {
  await redis.close();
});

describe('one budget for the fleet', () => {
  it('two instances keep at most 3 BILL calls in flight per org between them', async () => {
    const [a, b] = await fleet();
    const m = meter();
    const calls = Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).limiter.run(BILL, { priority: 'interactive' }, m.call(8)));
    expect(await Promise.all(calls)).toEqual(Array(40).fill('ok'));
    expect(m.max).toBe(3);
  });

  it('the hourly reservoir is shared: the 11th call of the hour on either instance is refused without reaching BILL', async () => {
    const [a, b] = await fleet({ LIMIT_BILL_REQUESTS_PER_HOUR: '10' });
    for (let i = 0; i < 6; i++) await a.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    for (let i = 0; i < 4; i++) await b.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    let called = false;
    const err = await b.limiter.run(BILL, { priority: 'interactive' }, async () => (called = true)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LimitExceeded);
    expect(err).toMatchObject({ budget: 'bill.requests', reason: 'hourly' });
    expect(called).toBe(false);
    const topOfHour = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 3_600_000;
    expect(b.limiter.blockedUntil(BILL)).toBe(topOfHour);
    expect(b.limiter.snapshot().find((r) => r.budget === 'bill.requests')).toMatchObject({ limit: 10, used: 10, remaining: 0 });
  });

  it('logins are counted for the fleet: the 4th of 3 per hour is refused on the other instance', async () => {
    const [a, b] = await fleet({ LIMIT_BILL_LOGINS_PER_HOUR: '3' });
    await a.limiter.run(LOGIN, { priority: 'background' }, async () => 'ok');
    await a.limiter.run(LOGIN, { priority: 'background' }, async () => 'ok');
    await b.limiter.run(LOGIN, { priority: 'background' }, async () => 'ok');
    const err = await a.limiter.run(LOGIN, { priority: 'background' }, async () => 'ok').catch((e: unknown) => e);
    expect(err).toMatchObject({ budget: 'bill.logins', reason: 'logins' });
    expect((err as LimitExceeded).retryInMs).toBeGreaterThan(3_500_000);
  });

  it('a BDC_1144 freeze seen by one instance stops the other one too', async () => {
    const [a, b] = await fleet();
    await b.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    a.limiter.throttled(BILL, { kind: 'hourly', untilMs: Date.now() + 600_000 });
    await until('the pause to reach instance B', () => b.limiter.blockedUntil(BILL) !== undefined);
    await expect(b.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok')).rejects.toMatchObject({ reason: 'hourly' });
  });

  it('an instance started after a BDC_1144 freeze learns it from Redis, and a later shorter Retry-After does not shorten it', async () => {
    const prefix = `late-${open.length}-${Date.now()}:`;
    const a = await member(prefix);
    // A plain subscriber sees each pause once Redis has stored it (the store publishes after its script ran).
    const watcher = new Redis(redis.url);
    const seen: string[] = [];
    watcher.on('message', (_channel: string, message: string) => seen.push(message));
    try {
      await watcher.subscribe(`${prefix}limits:blocks`);
      const now = Date.now();
      // BILL's hourly budget comes back at the top of the hour: a freeze never lasts past it.
      const frozenUntil = Math.min(now + 600_000, nextHour(now));
      a.limiter.throttled(BILL, { kind: 'hourly', untilMs: now + 600_000 });
      await until('the freeze to be stored', () => seen.some((m) => m.includes(':hourly:')));
      a.limiter.throttled(BILL, { kind: 'retryAfter', ms: 1_000 });
      await until('the Retry-After to reach Redis', () => seen.some((m) => m.includes(':retryAfter:')));

      const late = await member(prefix);
      await until('the late instance to read the stored freeze', () => late.limiter.blockedUntil(BILL) !== undefined);
      expect(late.limiter.blockedUntil(BILL)).toBe(Math.ceil(frozenUntil));
      await expect(late.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok')).rejects.toMatchObject({ reason: 'hourly' });
    } finally {
      watcher.disconnect();
    }
  });
});

describe('no permanent failure (what breaks bottleneck clustering on Redis 7)', () => {
  it('Teams thread windows slide across instances, and keep working after their keys expired', async () => {
    const [a, b] = await fleet({ LIMIT_CONNECTOR_THREAD: '2/150ms' });
    const thread = { service: 'connector', conversationId: '19:general@thread.tacv2' } as const;
    const started: number[] = [];
    const send = (who: typeof a) => who.limiter.run(thread, { priority: 'background' }, async () => started.push(Date.now()));
    const before = Date.now();
    await Promise.all([send(a), send(b), send(a)]);
    // The third send waited for the first to leave the 150 ms window (counted when it was admitted, after `before`; how
    // long Redis took to answer the first sends does not matter).
    expect(started[2]! - before).toBeGreaterThanOrEqual(150);
    const key = `${a.conn.keyPrefix}limits:win:{connector.thread|19:general@thread.tacv2}`;
    await until('the window key to expire in Redis', async () => (await redis.client().exists(key)) === 0);
    await Promise.all([send(b), send(a)]);
    expect(started).toHaveLength(5);
  });

  it('after FLUSHALL (a restart without persistence) budgets recover at once and enforce their limits again', async () => {
    const [a, b] = await fleet({ LIMIT_BILL_REQUESTS_PER_HOUR: '5' });
    const held = new HeldCall();
    const running = a.limiter.run(BILL, { priority: 'background' }, held.fn);
    await until('the held call to start', () => held.started !== undefined);
    await b.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    await redis.flush();

    // The reservoir starts again from zero: 5 calls go, the 6th is refused.
    for (let i = 0; i < 5; i++) await (i % 2 ? a : b).limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    await expect(b.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok')).rejects.toMatchObject({ reason: 'hourly' });
    // The call that held a slot through the flush ends normally.
    held.finish();
    await expect(running).resolves.toBe('ok');
    expect(logs.text()).not.toMatch(/SETTINGS_KEY_NOT_FOUND|UNKNOWN_CLIENT/);
  });

  it('concurrency stays at 3 across instances after FLUSHALL', async () => {
    const [a, b] = await fleet();
    await a.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    await redis.flush();
    const m = meter();
    await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? a : b).limiter.run(BILL, { priority: 'interactive' }, m.call(5))));
    expect(m.max).toBe(3);
  });

  it('a client timeout fails the call with DependencyUnavailable, without reaching BILL, and the next call goes through', async () => {
    const [a] = await fleet({}, { commandTimeoutMs: 150 });
    await a.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    // Redis stops answering every client for 600 ms (a hung or overloaded server).
    await redis.client().call('CLIENT', 'PAUSE', '600', 'ALL');
    let called = false;
    const t0 = Date.now();
    const err = await a.limiter.run(BILL, { priority: 'interactive' }, async () => (called = true)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DependencyUnavailable);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(called).toBe(false);
    await until('the pause to end', async () => {
      try {
        return (await a.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok')) === 'ok';
      } catch {
        return false;
      }
    });
    expect(await a.limiter.run(BILL, { priority: 'interactive' }, async () => 'again')).toBe('again');
  });

  it("a crashed instance's slots come back after the lock TTL", async () => {
    const [crashed, b] = await fleet({}, { lockTimeoutMs: 400 });
    const holds = [new HeldCall(), new HeldCall(), new HeldCall()];
    for (const h of holds) void crashed.limiter.run(BILL, { priority: 'background' }, h.fn).catch(() => undefined);
    await until('three held slots', () => holds.every((h) => h.started !== undefined));
    // The process dies: no release, no refresh.
    crashed.conn.client.disconnect();
    let grantedAt = 0;
    await expect(
      b.limiter.run(BILL, { priority: 'interactive', maxWaitMs: 5_000 }, async () => (grantedAt = Date.now())),
    ).resolves.toBeGreaterThan(0);
    // Not before the first dead slot's TTL (400 ms from its grant, a Redis round trip before the call started) ran out.
    expect(grantedAt).toBeGreaterThanOrEqual(Math.min(...holds.map((h) => h.started!)) + 350);
    for (const h of holds) h.finish();
  });
});

describe('while Redis is down', () => {
  it('BILL calls are refused with DependencyUnavailable, Teams replies still go (counted locally), and all resumes after a restart', async () => {
    const { conn, limiter } = await instance();
    await limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    const held = new HeldCall();
    const holding = limiter.run(BILL, { priority: 'interactive' }, held.fn);
    await until('the held call to start', () => held.started !== undefined);
    await redis.stop();
    await until('the connection to notice', () => !conn.ready());

    let called = 0;
    await expect(limiter.run(BILL, { priority: 'interactive' }, async () => called++)).rejects.toBeInstanceOf(DependencyUnavailable);
    await expect(limiter.run(LOGIN, { priority: 'interactive' }, async () => called++)).rejects.toBeInstanceOf(DependencyUnavailable);
    await expect(
      limiter.run({ service: 'spend', token: 'tok-0123456789' }, { priority: 'interactive' }, async () => called++),
    ).rejects.toBeInstanceOf(DependencyUnavailable);
    expect(called).toBe(0);
    await expect(
      limiter.run({ service: 'connector', conversationId: '19:x@thread.tacv2' }, { priority: 'interactive' }, async () => 'card sent'),
    ).resolves.toBe('card sent');
    // The call that was in flight finishes; its slot's release is lost with Redis, and nothing crashes.
    held.finish();
    await expect(holding).resolves.toBe('ok');

    await redis.restart();
    await until('the reconnection', () => conn.ready());
    await expect(limiter.run(BILL, { priority: 'interactive' }, async () => 'back')).resolves.toBe('back');
  });
});

describe('estimates from the last atomic reply', () => {
  it("count the other instance's calls: a send that cannot go is told when the fleet's oldest send leaves the window", async () => {
    const [a, b] = await fleet({ LIMIT_CONNECTOR_THREAD: '2/3000ms' });
    const thread = { service: 'connector', conversationId: '19:estimates@thread.tacv2' } as const;
    const first = Date.now();
    await a.limiter.run(thread, { priority: 'background' }, async () => 'sent');
    await a.limiter.run(thread, { priority: 'background' }, async () => 'sent');
    const err = await b.limiter.run(thread, { priority: 'interactive', maxWaitMs: 0 }, async () => 'sent').catch((e: unknown) => e);
    expect(err).toMatchObject({ budget: 'connector.thread', reason: 'busy' });
    // Instance B never sent to this thread: it knows from its own refused try when A's first send leaves the 3 s window.
    const retryInMs = (err as LimitExceeded).retryInMs;
    expect(retryInMs).toBeLessThanOrEqual(3_000);
    expect(Date.now() + retryInMs).toBeGreaterThanOrEqual(first + 3_000);
    expect(b.limiter.snapshot().find((r) => r.budget === 'connector.thread')).toMatchObject({
      limit: 2,
      used: 2,
      remaining: 0,
      windowMs: 3_000,
    });
  });
});
