// `webhooks setup` on two instances of a fleet (or the CLI beside a bot) sharing one Redis: the organisation's BILL
// subscription is set up one at a time across the fleet, so both admins are told it is set up and BILL holds one.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { RedisConnection } from '../../src/infra/state/redisClient.js';
import { RedisStateStore } from '../../src/infra/state/redisStore.js';
import { NS } from '../../src/infra/state/types.js';
import { WebhookKeys } from '../../src/notify/keys.js';
import { webhookSetup, WebhookSetupError } from '../../src/notify/setup.js';
import { TestRedis } from '../harness/redis.js';
import { billClient, startTestSandbox, type TestClient, type TestSandbox } from '../harness/sandbox.js';

const SECRETS_KEY = randomBytes(32);
const HOOK = 'https://billbridge.example.com/api/bill/webhooks';
let redis: TestRedis;
let sb: TestSandbox;
const clients: TestClient[] = [];
const conns: RedisConnection[] = [];

/** One instance: its own BILL gateway and Redis connection, the fleet's Redis state. */
async function instance() {
  const c = billClient(sb);
  clients.push(c);
  const conn = new RedisConnection({ url: redis.url, log: c.log, commandTimeoutMs: 1_000, maxReconnectDelayMs: 50 });
  conns.push(conn);
  expect(await conn.waitReady(5_000)).toBe(true);
  const state = new RedisStateStore(conn, systemClock);
  const keys = new WebhookKeys({
    state,
    clock: systemClock,
    log: c.log,
    secrets: c.secrets,
    secretsKey: SECRETS_KEY,
    refuseUnsealed: true,
  });
  return { keys, state, setup: webhookSetup({ bill: c.gateway, keys, log: c.log, state, clock: systemClock, allowLocalHttp: true }) };
}

beforeAll(async () => {
  [redis, sb] = await Promise.all([TestRedis.start(), startTestSandbox({ latencyMs: 3 })]);
});
afterAll(async () => {
  for (const c of clients) await c.close();
  for (const c of conns) await c.close();
  await Promise.all([sb.stop(), redis.close()]);
});

describe('webhooks setup across a fleet', () => {
  it('two instances running webhooks setup for one organisation at the same moment both succeed, and BILL holds one subscription', async () => {
    const [a, b] = await Promise.all([instance(), instance()]);
    const orgId = sb.credentials.orgId;
    const results = await Promise.allSettled([a.setup.setup(orgId, HOOK), b.setup.setup(orgId, HOOK)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    const actions = results.map((r) => (r.status === 'fulfilled' ? r.value.action : undefined)).sort();
    expect(actions).toEqual(['created', 'unchanged']);
    const subs = sb.sandbox.org.subscriptions.all();
    expect(subs).toHaveLength(1);
    expect((await a.keys.list(orgId)).map((k) => k.subscriptionId)).toEqual([subs[0]!.id]);
    // The lease is given back: a later setup (another admin, minutes on) does not wait for it.
    expect(await redis.client().keys('*webhook-setup*')).toEqual([]);
  });

  it('a setup while another instance still holds the lease (its setup is slow) says so and to try again, and leaves the lease to its holder', async () => {
    const a = await instance();
    const orgId = sb.credentials.orgId;
    const lease = `webhook-setup|${orgId}`;
    expect(await a.state.setIfAbsent(NS.editLocks, lease, 'another instance', { ttlMs: 60_000 })).toBe(true);
    const before = sb.sandbox.org.subscriptions.all().length;
    const err = await a.setup.setup(orgId, HOOK.replace('billbridge.', 'other.')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebhookSetupError);
    expect((err as WebhookSetupError).reason).toBe('busy');
    expect((err as Error).message).toContain('try again');
    expect(sb.sandbox.org.subscriptions.all()).toHaveLength(before);
    expect(await a.state.get(NS.editLocks, lease)).toBe('another instance');
    await a.state.delete(NS.editLocks, lease);
  }, 20_000);
});
