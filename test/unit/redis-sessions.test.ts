// One BILL session for the fleet: instances sharing a Redis sign in once, re-sign in once after BDC_1109, share the
// idle clock, leave the session to the others when one stops, and never log the sessionId they read from Redis.
// With SECRETS_KEY the sessionId is stored sealed: Redis holds no sessionId, and the fleet still signs in once.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { DependencyUnavailable, LimitExceeded } from '../../src/errors.js';
import { slotKey } from '../../src/bill/sessions.js';
import { UpstreamCallCounter } from '../../src/infra/upstreamCalls.js';
import { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { RedisBudgetStore } from '../../src/infra/limits/redisStore.js';
import { RedisSessionLedger } from '../../src/bill/sharedSessions.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { RedisConnection } from '../../src/infra/state/redisClient.js';
import { LogCapture } from '../harness/logs.js';
import { TestRedis } from '../harness/redis.js';
import { billClient, leaks, secretsOf, startTestSandbox, type TestClient, type TestSandbox } from '../harness/sandbox.js';
import { heardByTurnEnd, limitsConfig } from './limits-helpers.js';

const MIN = 60_000;
let redis: TestRedis;
let sb: TestSandbox;
const clock = new ManualClock(Date.now());
const conns: RedisConnection[] = [];
const clients: TestClient[] = [];
let fleetNo = 0;

/** N bot instances of one fleet: each its own limiter, session pool and Redis connection. */
async function fleet(n: number, opts: { secretsKey?: Buffer; prefix?: string; turns?: UpstreamCallCounter } = {}): Promise<TestClient[]> {
  const prefix = opts.prefix ?? `sessions-${fleetNo++}:`;
  const out: TestClient[] = [];
  for (let i = 0; i < n; i++) {
    const logs = new LogCapture(`instance ${i}`);
    const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
    const conn = new RedisConnection({ url: redis.url, log, keyPrefix: prefix, commandTimeoutMs: 1_000, maxReconnectDelayMs: 50 });
    conns.push(conn);
    expect(await conn.waitReady(5_000)).toBe(true);
    const { turns } = opts;
    const limiter = new SharedLimiter({ config: limitsConfig(), clock, log, store: new RedisBudgetStore({ redis: conn, log }), turns });
    const c = billClient(sb, {
      clock,
      limiter,
      overrides: { sessionLedger: new RedisSessionLedger({ redis: conn, clock, log, secretsKey: opts.secretsKey }), turns },
    });
    clients.push(c);
    out.push(c);
  }
  return out;
}

async function logins(): Promise<number> {
  return (await sb.stats()).logins;
}

beforeAll(async () => {
  [redis, sb] = await Promise.all([TestRedis.start(), startTestSandbox({ latencyMs: 3 })]);
});
afterAll(async () => {
  for (const c of clients) await c.close();
  for (const c of conns) await c.close();
  // No instance logged a password, dev key, token or any sessionId the sandbox issued (read from Redis or not).
  const secrets = await secretsOf(sb);
  for (const c of clients) expect(leaks(c.logs.text(), secrets)).toEqual([]);
  await Promise.all([sb.stop(), redis.close()]);
});

describe('one session for the fleet', () => {
  it('three instances answering 60 concurrent calls on a cold start sign in exactly once, and all use that session', async () => {
    const instances = await fleet(3);
    const before = await sb.stats();
    const orgs = instances.map((c) => c.gateway.org(sb.credentials.orgId));
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => orgs[i % 3]!.whoami()));
    expect(answers.every((a) => a.organizationId === sb.credentials.orgId)).toBe(true);
    const after = await sb.stats();
    expect(after.logins - before.logins).toBe(1);
    expect(after.limitErrors.concurrency).toBe(0);
    const issued = after.sessionsIssued.at(-1)!;
    // Each instance registered the shared sessionId as a secret of its own process when it read it from Redis.
    for (const c of instances) expect(c.secrets.list()).toContain(issued);
  });

  it('after BILL expires the session (BDC_1109), instances that notice together sign in again exactly once', async () => {
    const instances = await fleet(2);
    const orgs = instances.map((c) => c.gateway.org(sb.credentials.orgId));
    await Promise.all([orgs[0]!.whoami(), orgs[1]!.whoami()]);
    const before = await logins();
    expect((await sb.control('POST', '/sessions/expire')).json?.expired).toBeGreaterThanOrEqual(1);
    const bills = sb.sandbox.org.bills.all().slice(0, 10);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => orgs[i % 2]!.bills.get(bills[i % 10]!.id)));
    expect(answers.map((b) => b.id)).toEqual(Array.from({ length: 40 }, (_, i) => bills[i % 10]!.id));
    expect((await sb.stats()).errorsByCode.BDC_1109).toBeGreaterThanOrEqual(1);
    expect((await logins()) - before).toBe(1);
  });

  it("one instance's idle clock is the fleet's: a session another instance kept busy is reused, a really idle one replaced", async () => {
    const [a, b] = await fleet(2);
    const orgA = a!.gateway.org(sb.credentials.orgId);
    const orgB = b!.gateway.org(sb.credentials.orgId);
    await orgA.whoami();
    const before = await logins();
    // B works for 40 minutes; A sits idle all that time.
    for (let i = 0; i < 8; i++) {
      clock.advance(5 * MIN);
      await orgB.whoami();
    }
    await orgA.whoami();
    expect((await logins()) - before).toBe(0);
    // Now nobody calls for 31 minutes: the next call signs in again, once.
    clock.advance(31 * MIN);
    await Promise.all([orgA.whoami(), orgB.whoami()]);
    expect((await logins()) - before).toBe(1);
  });

  it('an instance that stops leaves the session to the others: no logout, no new login', async () => {
    const [a, b] = await fleet(2);
    await a!.gateway.org(sb.credentials.orgId).whoami();
    await b!.gateway.org(sb.credentials.orgId).whoami();
    const before = await sb.stats();
    await a!.gateway.close();
    await b!.gateway.org(sb.credentials.orgId).whoami();
    const after = await sb.stats();
    expect(after.logouts - before.logouts).toBe(0);
    expect(after.logins - before.logins).toBe(0);
  });
});

describe("waiting for another instance's sign-in", () => {
  it("a person's command waiting on a sign-in that hangs elsewhere in the fleet is told BILL is busy when its turn ends; a background caller keeps waiting and the lock is left alone", async () => {
    const turns = new UpstreamCallCounter(clock);
    const prefix = `sessions-${fleetNo++}:`;
    const [c] = await fleet(1, { prefix, turns });
    const { orgId, devKey, username, password } = sb.credentials;
    // Another instance holds the login lock and has not written a session yet (it is stuck signing in).
    const lock = `mutex:${prefix}bill:login:{${slotKey({ baseUrl: sb.sandbox.baseUrl, devKey, username, password, orgId })}}`;
    await redis.client().set(lock, 'another-instance', 'PX', 60_000);
    const before = await logins();
    // The outbox worker (no turn) asks first; then a person's turn asks.
    const background = c!.gateway.org(orgId, { priority: 'background' }).whoami();
    const person = heardByTurnEnd(turns.run(() => c!.gateway.org(orgId).whoami()));
    // The person's 14 s are up (app clock); they must hear now, not when the 15 s wait for the other instance ends.
    clock.advance(14_001);
    const heard = await person;
    expect(heard).toBeInstanceOf(LimitExceeded);
    expect((heard as LimitExceeded).reason).toBe('busy');
    // The other instance's lock is untouched, and nothing signed in.
    expect(await redis.client().get(lock)).toBe('another-instance');
    expect((await logins()) - before).toBe(0);
    // The other instance gives up (its lock expires): the background caller, still waiting, signs in once and is answered.
    await redis.client().del(lock);
    expect((await background).organizationId).toBe(orgId);
    expect((await logins()) - before).toBe(1);
    expect(await redis.client().exists(lock)).toBe(0);
  });
});

/** The shared session records of a fleet, as Redis holds them. */
async function storedSessions(prefix: string): Promise<string[]> {
  const conn = conns.at(-1)!;
  const keys = await conn.client.keys(`${prefix}bill:session:*`);
  return Promise.all(keys.map(async (k) => (await conn.client.get(k)) ?? ''));
}

describe('sessionIds at rest (SECRETS_KEY set)', () => {
  it('Redis holds the sessionId sealed, and a second instance opens it and reuses the session without signing in', async () => {
    const secretsKey = randomBytes(32);
    const prefix = `sessions-sealed-${fleetNo++}:`;
    const [a, b] = await fleet(2, { secretsKey, prefix });
    const before = await logins();
    await a!.gateway.org(sb.credentials.orgId).whoami();
    const issued = (await sb.stats()).sessionsIssued.at(-1)!;
    const stored = await storedSessions(prefix);
    expect(stored).toHaveLength(1);
    expect(stored[0]).not.toContain(issued);
    const sealed = JSON.parse(stored[0]!) as Record<string, unknown>;
    const anyString = expect.any(String) as unknown;
    expect(sealed).toMatchObject({ box: { iv: anyString, tag: anyString, data: anyString } });
    expect(sealed.sessionId).toBeUndefined();
    await b!.gateway.org(sb.credentials.orgId).whoami();
    expect((await logins()) - before).toBe(1);
    expect(b!.secrets.list()).toContain(issued);
  });

  it('sealed, the fleet still shares the idle clock and signs in again exactly once after BDC_1109', async () => {
    const secretsKey = randomBytes(32);
    const prefix = `sessions-sealed-${fleetNo++}:`;
    const [a, b] = await fleet(2, { secretsKey, prefix });
    const orgs = [a!.gateway.org(sb.credentials.orgId), b!.gateway.org(sb.credentials.orgId)];
    const lastUsedAt = async () => (JSON.parse((await storedSessions(prefix))[0]!) as { lastUsedAt: number }).lastUsedAt;
    await orgs[0]!.whoami();
    const firstUse = await lastUsedAt();
    clock.advance(MIN);
    await orgs[1]!.whoami();
    expect(await lastUsedAt()).toBeGreaterThan(firstUse);
    const before = await logins();
    expect((await sb.control('POST', '/sessions/expire')).json?.expired).toBeGreaterThanOrEqual(1);
    await Promise.all(Array.from({ length: 10 }, (_, i) => orgs[i % 2]!.whoami()));
    expect((await logins()) - before).toBe(1);
    const issued = (await sb.stats()).sessionsIssued.at(-1)!;
    expect((await storedSessions(prefix)).join('')).not.toContain(issued);
  });

  it('an instance says at start whether the shared session is sealed (no SECRETS_KEY: stored unencrypted)', () => {
    const said = (secretsKey?: Buffer) => {
      const logs = new LogCapture('ledger start');
      new RedisSessionLedger({
        redis: conns.at(-1)!,
        clock,
        log: createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs }),
        secretsKey,
      });
      return logs.text();
    };
    expect(said()).toContain('SECRETS_KEY is not set: the BILL session the instances share is stored in Redis unencrypted');
    expect(said(randomBytes(32))).not.toContain('unencrypted');
  });

  it('a record sealed under another SECRETS_KEY is not used: the instance signs in and its sealed record replaces it', async () => {
    const prefix = `sessions-sealed-${fleetNo++}:`;
    const [old] = await fleet(1, { secretsKey: randomBytes(32), prefix });
    await old!.gateway.org(sb.credentials.orgId).whoami();
    const oldRecord = (await storedSessions(prefix))[0];
    const before = await logins();
    const [fresh] = await fleet(1, { secretsKey: randomBytes(32), prefix });
    await expect(fresh!.gateway.org(sb.credentials.orgId).whoami()).resolves.toMatchObject({ organizationId: sb.credentials.orgId });
    expect((await logins()) - before).toBe(1);
    const now = await storedSessions(prefix);
    expect(now).toHaveLength(1);
    expect(now[0]).not.toEqual(oldRecord);
  });
});

describe('without Redis', () => {
  it('a call that needs a session fails with DependencyUnavailable and sends nothing to BILL; it works again once Redis is back', async () => {
    const [a] = await fleet(1);
    const org = a!.gateway.org(sb.credentials.orgId);
    const requestsBefore = (await sb.stats()).requests;
    await redis.stop();
    await expect(org.whoami()).rejects.toBeInstanceOf(DependencyUnavailable);
    expect((await sb.stats()).requests).toBe(requestsBefore);
    await redis.restart();
    const conn = conns.at(-1)!;
    expect(await conn.waitReady(5_000)).toBe(true);
    await expect(org.whoami()).resolves.toMatchObject({ organizationId: sb.credentials.orgId });
  });
});
