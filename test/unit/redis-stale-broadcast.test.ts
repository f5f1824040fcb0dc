// A mirror per instance, stale marks fleet-wide: a webhook handled by instance A drops what instance B kept of it too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BillGateway } from '../../src/bill/gateway.js';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { Mirror } from '../../src/mirror/mirror.js';
import { RedisConnection } from '../../src/infra/state/redisClient.js';
import { RedisStateStore } from '../../src/infra/state/redisStore.js';
import { NS, type StateStore } from '../../src/infra/state/types.js';
import { LogCapture } from '../harness/logs.js';
import { TestRedis } from '../harness/redis.js';
import { billClient, startTestSandbox, type TestClient, type TestSandbox } from '../harness/sandbox.js';

const ORG = '00801ORGCACHE0000001';
let redis: TestRedis;
const conns: RedisConnection[] = [];
const clients: TestClient[] = [];

/**
 * An instance's mirror; without `sb` these tests use only its kept answers, so no BILL is reached. `hold`: its read of
 * the stored bills' header waits for that promise.
 */
async function instance(sb?: TestSandbox, hold?: Promise<void>): Promise<Mirror> {
  const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: new LogCapture('stale broadcast') });
  const conn = new RedisConnection({ url: redis.url, log, maxReconnectDelayMs: 50 });
  conns.push(conn);
  expect(await conn.waitReady(5_000)).toBe(true);
  const client = sb ? billClient(sb) : undefined;
  if (client) clients.push(client);
  return new Mirror({
    bill: client?.gateway ?? ({} as unknown as BillGateway),
    state: held(new RedisStateStore(conn, systemClock), hold),
    clock: systemClock,
    log,
    redis: conn,
  });
}

/** The store, its read of a stored bills header (NS.mirror "bills:<org>") made once `hold` settles. */
function held(store: RedisStateStore, hold: Promise<void> | undefined): StateStore {
  if (!hold) return store;
  return Object.assign(Object.create(store) as RedisStateStore, {
    get: async <T>(ns: string, key: string) => {
      if (ns === NS.mirror && /^bills:[^#|]+$/.test(key)) await hold;
      return store.get<T>(ns, key);
    },
  });
}

async function until(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Keeps "payments" on an instance and says whether that ask loaded from BILL. */
async function payments(m: Mirror): Promise<boolean> {
  let loaded = false;
  await m.answers.get(ORG, 'payments', { ttlS: 60, kinds: ['payment', 'bill'] }, async () => ((loaded = true), 'ten payments'));
  return loaded;
}

let a: Mirror;
let b: Mirror;

beforeAll(async () => {
  redis = await TestRedis.start();
  a = await instance();
  b = await instance();
});
afterAll(async () => {
  for (const c of clients) await c.close();
  for (const c of conns) await c.close();
  await redis.close();
});

describe('stale marks reach every instance', () => {
  it('a bill marked stale on A (its webhook) drops the answers B built from bills; B loads them again on the next ask', async () => {
    await payments(a);
    await payments(b);
    expect(await payments(b)).toBe(false);
    // Subscriptions are asynchronous: mark until B has seen one of A's messages.
    await until("B to receive A's mark", () => {
      void a.markStale(ORG, 'bill', '00n01ABC');
      return b.answers.stats().entries === 0;
    });
    expect(await payments(b)).toBe(true);
  });

  it('an organisation marked stale on B (relinked) drops everything A kept for it', async () => {
    await payments(a);
    await b.markStale(ORG);
    await until('A to drop the org', () => a.answers.stats().entries === 0);
    expect(await payments(a)).toBe(true);
  });

  it('a Refresh button on A drops that one answer on B too', async () => {
    await payments(a);
    await payments(b);
    expect(await payments(b)).toBe(false);
    a.dropAnswer(ORG, 'payments');
    await until('B to drop the answer', () => b.answers.stats().entries === 0);
    expect(await payments(b)).toBe(true);
  });

  it('after Redis was away (marks may be lost), each instance drops what it kept', async () => {
    await payments(a);
    await payments(b);
    expect(b.answers.stats().entries).toBe(1);
    await redis.restart();
    await until(
      'both instances to drop their answers after resubscribing',
      () => a.answers.stats().entries === 0 && b.answers.stats().entries === 0,
      10_000,
    );
    expect(await payments(b)).toBe(true);
  });
});

describe('an instance that did not hold the collection when the mark was made', () => {
  let sb: TestSandbox;
  beforeAll(async () => {
    sb = await startTestSandbox();
  });
  afterAll(async () => {
    await sb.stop();
  });

  it("a bill paid, whose webhook A handled, is not shown unpaid by B or by an instance started since: they load A's stored bills", async () => {
    const org = sb.credentials.orgId;
    const fresh = { maxAgeMs: 3_600_000, waitMs: 20_000, priority: 'interactive' as const, scope: 'open' as const };
    const statusOf = (m: Mirror, id: string) =>
      m.rows(org, 'bill', fresh).then((r) => ('rows' in r ? (r.rows.find((x) => x.id === id)?.paymentStatus ?? 'not listed') : 'building'));
    const a = await instance(sb);
    // B runs, but has answered nothing about this org's bills yet (the load balancer sent those questions to A).
    const b = await instance(sb);
    const bill = sb.sandbox.org.bills.all().find((x) => x.paymentStatus === 'UNPAID' && !x.archived)!;
    expect(await statusOf(a, bill.id)).toBe('UNPAID');
    await a.flush();

    expect((await sb.control('POST', `/bills/${bill.id}/pay`, {})).status).toBe(200);
    // What the webhook of the payment does on the instance it reached.
    await a.markStale(org, 'bill', bill.id);

    expect(await statusOf(b, bill.id)).toBe('not listed');
    expect(await statusOf(await instance(sb), bill.id)).toBe('not listed');
    expect(await statusOf(a, bill.id)).toBe('not listed');
  });

  it('a mark that arrives while B is reading the stored bills is not lost: B refreshes them before answering', async () => {
    const org = sb.credentials.orgId;
    const fresh = { maxAgeMs: 3_600_000, waitMs: 20_000, priority: 'interactive' as const, scope: 'open' as const };
    const statusOf = (m: Mirror, id: string) =>
      m.rows(org, 'bill', fresh).then((r) => ('rows' in r ? (r.rows.find((x) => x.id === id)?.paymentStatus ?? 'not listed') : 'building'));
    const a = await instance(sb);
    const bill = sb.sandbox.org.bills.all().find((x) => x.paymentStatus === 'UNPAID' && !x.archived)!;
    expect(await statusOf(a, bill.id)).toBe('UNPAID');
    await a.flush();
    let release!: () => void;
    const b = await instance(sb, new Promise<void>((resolve) => (release = resolve)));
    // B keeps an answer of the org, so the test can tell when A's mark has reached it.
    await b.answers.get(org, 'payments', { ttlS: 60, kinds: ['payment', 'bill'] }, () => Promise.resolve('ten payments'));
    const onB = statusOf(b, bill.id);

    expect((await sb.control('POST', `/bills/${bill.id}/pay`, {})).status).toBe(200);
    await until("B to receive A's mark", () => {
      void a.markStale(org, 'bill', bill.id);
      return b.answers.stats().entries === 0;
    });
    release();
    expect(await onB).toBe('not listed');
  });
});
