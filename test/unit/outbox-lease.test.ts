// Outbox leases between workers: a worker that lost its lease does not send, and a fresh lease of another process on
// the same host is not taken for dead — on Redis (a fleet) and on the single-instance file store.
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { Leases } from '../../src/notify/jobs.js';
import { eventKey, outboxKey } from '../../src/notify/receiver.js';
import { ChannelSubscriptions } from '../../src/notify/subscriptions.js';
import type { OutboxEvent, SendOutcome } from '../../src/notify/types.js';
import { deliveryWorker } from '../../src/notify/worker.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { RedisConnection } from '../../src/infra/state/redisClient.js';
import { RedisStateStore } from '../../src/infra/state/redisStore.js';
import { NS, type StateStore } from '../../src/infra/state/types.js';
import { LogCapture } from '../harness/logs.js';
import { TestRedis } from '../harness/redis.js';

const logs = new LogCapture('outbox lease');
const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
const TARGET = { tenantId: 'tenant-a', teamId: '19:team-lease@thread.tacv2', channelId: '19:channel-lease@thread.tacv2' };

let redis: TestRedis;
let conn: RedisConnection;
let dir: string;
const stores: Record<string, () => StateStore> = {};

beforeAll(async () => {
  redis = await TestRedis.start();
  conn = new RedisConnection({ url: redis.url, log });
  expect(await conn.waitReady(5_000)).toBe(true);
  dir = mkdtempSync(join(tmpdir(), 'billbridge-lease-'));
  const redisStore = new RedisStateStore(conn, systemClock);
  const fileStore = new SqliteStateStore(dir, systemClock);
  stores.redis = () => redisStore;
  stores.file = () => fileStore;
});

afterAll(async () => {
  await stores.file?.().close();
  await conn.close();
  await redis.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function gate(): { wait: Promise<void>; open: () => void; reached: Promise<void>; arrive: () => void } {
  let open!: () => void;
  let arrive!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  const reached = new Promise<void>((r) => (arrive = r));
  return { wait, open, reached, arrive };
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

/** A worker whose enrich step and send can be held at a gate; records what it sent. */
function worker(state: StateStore, hold: { enrich?: ReturnType<typeof gate>; send?: ReturnType<typeof gate> }) {
  const sent: string[] = [];
  const w = deliveryWorker({
    state,
    clock: systemClock,
    log,
    subscriptions: new ChannelSubscriptions(state, systemClock),
    resolveOrg: () => Promise.resolve('org-1'),
    sender: {
      async send(_ref, message): Promise<SendOutcome> {
        hold.send?.arrive();
        await hold.send?.wait;
        sent.push(message.summary);
        return { ok: true };
      },
    },
    presenter: { event: (ev) => ({ card: {}, summary: ev.eventId }), digest: () => ({ card: {}, summary: 'digest' }) },
    confirm: (ev) => Promise.resolve({ state: 'current', entity: ev.entity }),
    async enrich() {
      hold.enrich?.arrive();
      await hold.enrich?.wait;
      return {};
    },
    apply: () => Promise.resolve(),
    onChannelGone: () => Promise.resolve(),
    leaseMs: 300,
  });
  return { w, sent };
}

function event(eventId: string): OutboxEvent {
  return {
    v: 1,
    eventId,
    type: 'invoice.updated',
    orgId: 'org-1',
    entityType: 'invoice',
    entity: {},
    errors: [],
    receivedAt: Date.now(),
  };
}

describe.each(['redis', 'file'])('two workers on one %s store', (kind) => {
  it('the worker whose lease another took over while it looked up details does not send; the card goes out once', async () => {
    const state = stores[kind]!();
    const eventId = `evt-takeover-${kind}`;
    await new ChannelSubscriptions(state, systemClock).add(TARGET, ['invoices'], { conversation: { id: TARGET.channelId } });
    expect(await state.setIfAbsent(NS.outbox, outboxKey('org-1', eventId), event(eventId))).toBe(true);

    const slowA = gate();
    const a = worker(state, { enrich: slowA });
    const drainA = a.w.drain();
    await slowA.reached;
    // A stalls past its lease (no renewal: a long GC pause, a frozen VM); B takes the event over and is sending.
    await until("A's lease to expire", async () => (await state.get(NS.outbox, `lease|${eventKey('org-1', eventId)}`)) === undefined);
    const sendingB = gate();
    const b = worker(state, { send: sendingB });
    const drainB = b.w.drain();
    await sendingB.reached;
    // A wakes up while B holds the lease.
    slowA.open();
    await drainA;
    expect(a.sent).toEqual([]);
    sendingB.open();
    await drainB;
    expect(b.sent).toEqual([eventId]);
    expect(await state.get(NS.outbox, outboxKey('org-1', eventId))).toBeUndefined();
    expect(logs.text()).toContain('outbox lease lost to another worker; this one stops working on the event without sending');
    await Promise.all([a.w.stop(), b.w.stop()]);
  });

  it('a fresh lease held by another process on this same host (same hostname, its pid not running here) is not taken', async () => {
    const state = stores[kind]!();
    const leases = new Leases(state, systemClock, NS.outbox, 60_000);
    // What a process in another container with the same hostname (or the old host+pid format) leaves.
    const theirs = { by: 'another-process-id', host: hostname(), pid: 4_194_000, started: 0, at: Date.now() };
    await state.set(NS.outbox, `lease|evt-same-host-${kind}`, theirs, { ttlMs: 60_000 });
    expect(await leases.acquire(`lease|evt-same-host-${kind}`)).toBe(false);
    const samePid = { ...theirs, pid: process.pid, started: 1 };
    await state.set(NS.outbox, `lease|evt-same-pid-${kind}`, samePid, { ttlMs: 60_000 });
    expect(await leases.acquire(`lease|evt-same-pid-${kind}`)).toBe(false);
    expect(await leases.renew(`lease|evt-same-pid-${kind}`)).toBe(false);
    expect(await state.get(NS.outbox, `lease|evt-same-pid-${kind}`)).toEqual(samePid);
  });
});

describe('a restarted process', () => {
  it('on the single-instance store takes over at once the leases its predecessor left; on Redis waits for their TTL', async () => {
    const left = { by: 'predecessor-id', at: Date.now() - 1_000 };
    for (const kind of ['file', 'redis']) {
      const state = stores[kind]!();
      await state.set(NS.outbox, 'lease|evt-left', left, { ttlMs: 60_000 });
      const leases = new Leases(state, systemClock, NS.outbox, 60_000);
      expect(await leases.acquire('lease|evt-left'), kind).toBe(kind === 'file');
    }
  });
});
