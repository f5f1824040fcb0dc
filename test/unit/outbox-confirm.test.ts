// The outbox on a real SQLite store: a card is drawn from the record BILL answers (never the payload), an event
// whose record BILL cannot read yet waits, and a redelivery after a crash between the outbox write and the "seen"
// mark posts its card once.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { BillApiError } from '../../src/errors.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { WebhookKeys } from '../../src/notify/keys.js';
import type { ConfirmedRecord } from '../../src/notify/project.js';
import { WebhookReceiver, eventKey, outboxKey } from '../../src/notify/receiver.js';
import { ChannelSubscriptions } from '../../src/notify/subscriptions.js';
import type { OutboxEvent, SendOutcome } from '../../src/notify/types.js';
import { deliveryWorker, RETRY_DELAYS_MS, UNREADABLE_FOR_MS, type DeadLetter } from '../../src/notify/worker.js';
import { notificationsSection } from '../../src/features/admin/status.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { NS } from '../../src/infra/state/types.js';
import { LogCapture } from '../harness/logs.js';
import { registerSecrets } from '../harness/secretScan.js';

const ORG = '00801ORGANISATIONA01';
const KEY = randomBytes(32).toString('base64');
const TARGET = { tenantId: 'tenant-a', teamId: '19:team-outbox@thread.tacv2', channelId: '19:channel-outbox@thread.tacv2' };

let dir: string;
let clock: ManualClock;
let store: SqliteStateStore;
let logs: LogCapture;
let secrets: SecretRegistry;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-outbox-'));
  clock = new ManualClock(Date.parse('2026-03-02T10:00:00Z'));
  store = new SqliteStateStore(dir, clock);
  logs = new LogCapture('outbox confirm');
  secrets = new SecretRegistry();
  secrets.add(KEY);
  registerSecrets(() => secrets.list());
  await new ChannelSubscriptions(store, clock).add(TARGET, ['payments'], { conversation: { id: TARGET.channelId } });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A worker whose BILL read is `confirm`; records the entity of every card it sends. */
function worker(confirm: (ev: OutboxEvent) => Promise<ConfirmedRecord>, draw?: (ev: OutboxEvent) => string) {
  const sent: Array<Record<string, unknown>> = [];
  const w = deliveryWorker({
    state: store,
    clock,
    log: createLogger({ level: 'debug', secrets, destination: logs }),
    subscriptions: new ChannelSubscriptions(store, clock),
    resolveOrg: () => Promise.resolve(ORG),
    sender: {
      send(_ref, message): Promise<SendOutcome> {
        sent.push(JSON.parse(message.summary) as Record<string, unknown>);
        return Promise.resolve({ ok: true });
      },
    },
    presenter: {
      event: (ev) => ({ card: {}, summary: draw ? draw(ev) : JSON.stringify(ev.entity) }),
      digest: () => ({ card: {}, summary: 'digest' }),
    },
    confirm,
    enrich: () => Promise.resolve({}),
    apply: () => Promise.resolve(),
    onChannelGone: () => Promise.resolve(),
  });
  return { w, sent };
}

function receiver(): WebhookReceiver {
  const log = createLogger({ level: 'debug', secrets, destination: logs });
  return new WebhookReceiver({
    state: store,
    clock,
    log,
    keys: new WebhookKeys({ state: store, clock, log, secrets, secretsKey: undefined }),
    envKeys: { [ORG]: KEY },
    servesOrg: (o) => o === ORG,
    stale: () => undefined,
    kick: () => undefined,
  });
}

function paymentEvent(eventId = randomUUID(), amount = 999_999): Buffer {
  return Buffer.from(
    JSON.stringify({
      metadata: { eventId, subscriptionId: 'sub-made-in-the-bill-app', organizationId: ORG, eventType: 'payment.updated', version: '1' },
      payment: { id: 'stp01pay', amount, status: 'PAID', billIds: ['00n01bill'], vendor: { id: '00901v', name: 'Acme Supply' } },
    }),
  );
}
const sign = (raw: Buffer) => createHmac('sha256', KEY).update(raw).digest('base64');
const BILLS_RECORD = {
  id: 'stp01pay',
  amount: 42,
  status: 'SCHEDULED',
  billIds: ['00n01bill'],
  vendor: { id: '00901v', name: 'Acme Supply' },
};

/** The `status` card's notifications section for one dead letter here (what the person reads of it). */
function statusSection(here: DeadLetter[], now: number) {
  return notificationsSection(
    {
      kinds: ['payments'],
      digest: undefined,
      outbox: { events: 0, pending: 0, nextAt: undefined },
      deadLetters: { total: 1, here },
      webhook: { storedKeys: 0, envKey: true },
    },
    true,
    { locale: 'en-US', timeZone: 'UTC', version: 'test', now },
  );
}

describe('a card shows what BILL answers', () => {
  it('a signed event carrying a forged amount goes out with the amount BILL has', async () => {
    const { w, sent } = worker(() => Promise.resolve({ state: 'current', entity: BILLS_RECORD }));
    const raw = paymentEvent();
    expect((await receiver().accept(raw, sign(raw))).body.status).toBe('accepted');
    await w.drain();
    expect(sent).toEqual([BILLS_RECORD]);
    expect(JSON.stringify(sent)).not.toContain('999999');
  });

  it('an event whose record BILL no longer has posts nothing and leaves the outbox', async () => {
    const { w, sent } = worker(() => Promise.resolve({ state: 'gone' }));
    const eventId = randomUUID();
    const raw = paymentEvent(eventId);
    await receiver().accept(raw, sign(raw));
    await w.drain();
    expect(sent).toEqual([]);
    expect(await store.entries(NS.outbox)).toEqual([]);
    // Finished: the id stays recorded, so BILL's redelivery of it is a duplicate.
    expect(await store.get(NS.webhookEvents, eventKey(ORG, eventId))).toMatchObject({ type: 'payment.updated' });
  });

  it('while BILL is busy the event waits in the outbox with no card; once BILL answers, its record is posted', async () => {
    let busy = true;
    let reads = 0;
    const { w, sent } = worker(() => {
      reads++;
      if (busy) return Promise.reject(new BillApiError({ category: 'concurrencyLimit', status: 400, code: 'BDC_1322' }));
      return Promise.resolve({ state: 'current', entity: BILLS_RECORD });
    });
    const raw = paymentEvent();
    await receiver().accept(raw, sign(raw));
    await w.drain();
    expect(sent).toEqual([]);
    expect(reads).toBe(1);
    const waiting = await store.get<OutboxEvent>(
      NS.outbox,
      outboxKey(ORG, (JSON.parse(raw.toString()) as { metadata: { eventId: string } }).metadata.eventId),
    );
    expect(waiting).toMatchObject({ eventId: expect.any(String) as unknown, targets: expect.any(Object) as unknown });
    expect(waiting!.confirmed).toBeUndefined();
    // Not read again before its back-off is over.
    await w.drain();
    expect(reads).toBe(1);
    busy = false;
    clock.advance(RETRY_DELAYS_MS[0]! * 1.2);
    await w.drain();
    expect(reads).toBe(2);
    expect(sent).toEqual([BILLS_RECORD]);
    expect(await store.entries(NS.outbox)).toEqual([]);
  });
});

describe('exactly one card per BILL event', () => {
  it('the process died between the outbox write and the "seen" mark: BILL retries, the card goes out, a later redelivery posts nothing', async () => {
    const eventId = randomUUID();
    const raw = paymentEvent(eventId);
    const { w, sent } = worker(() => Promise.resolve({ state: 'current', entity: BILLS_RECORD }));
    // First delivery: the outbox entry was written, then the process died before the "seen" mark and the 200.
    const accepted = await receiver().accept(raw, sign(raw));
    expect(accepted.body.status).toBe('accepted');
    await store.delete(NS.webhookEvents, eventKey(ORG, eventId));
    expect(await store.get(NS.outbox, outboxKey(ORG, eventId))).toBeDefined();
    // BILL retries (no 200 came back): the event is already queued.
    expect((await receiver().accept(raw, sign(raw))).body.status).toBe('duplicate');
    // The answer restored the mark the crash lost, before any worker ran.
    expect(await store.get(NS.webhookEvents, eventKey(ORG, eventId))).toMatchObject({ type: 'payment.updated' });
    await w.drain();
    expect(sent).toHaveLength(1);
    // BILL delivers the same event once more, later: nothing is queued or posted again.
    expect((await receiver().accept(raw, sign(raw))).body.status).toBe('duplicate');
    await w.drain();
    expect(sent).toHaveLength(1);
  });
});

describe('a card that cannot be drawn', () => {
  it('a BILL record the card cannot be drawn from counts its tries and ends a dead letter, instead of being drawn again every pass forever', async () => {
    let draws = 0;
    const { w, sent } = worker(
      () => Promise.resolve({ state: 'current', entity: BILLS_RECORD }),
      () => {
        draws++;
        throw new RangeError('Invalid time value');
      },
    );
    const eventId = randomUUID();
    const raw = paymentEvent(eventId);
    await receiver().accept(raw, sign(raw));
    await w.drain();
    expect(draws).toBe(1);
    // The next pass, before any back-off is over, does not draw it again.
    await w.drain();
    expect(draws).toBe(1);
    for (const delay of RETRY_DELAYS_MS) {
      clock.advance(delay * 1.3);
      await w.drain();
    }
    expect(draws).toBe(RETRY_DELAYS_MS.length + 1);
    expect(sent).toEqual([]);
    const letters = await store.entries<DeadLetter>(NS.deadLetters);
    expect(letters.map(([, l]) => [l.eventId, l.tries])).toEqual([[eventId, RETRY_DELAYS_MS.length + 1]]);
    expect(await store.entries(NS.outbox)).toEqual([]);
  });

  it('a card that cannot be drawn is logged and shown on `status` as not drawn, not as a send that failed with status 0', async () => {
    const { w } = worker(
      () => Promise.resolve({ state: 'current', entity: BILLS_RECORD }),
      () => {
        throw new RangeError('Invalid time value');
      },
    );
    const raw = paymentEvent();
    await receiver().accept(raw, sign(raw));
    await w.drain();
    for (const delay of RETRY_DELAYS_MS) {
      clock.advance(delay * 1.3);
      await w.drain();
    }
    expect(logs.text()).not.toContain('notification send failed');
    expect(logs.text()).not.toContain('notification could not be delivered');
    expect(logs.text()).toContain('notification card could not be drawn; will try again');
    expect(logs.text()).toContain('notification card could not be drawn; dead-lettered');
    const here = (await store.entries<DeadLetter>(NS.deadLetters)).map(([, l]) => l);
    const section = statusSection(here, clock.now());
    const shown = JSON.stringify(section.items);
    expect(shown).toContain(`its card could not be drawn (${RETRY_DELAYS_MS.length + 1} tries)`);
    expect(shown).not.toMatch(/\(0\)/);
  });
});

describe('a record BILL refuses to read', () => {
  it('an event whose record BILL refuses to read for good (400: an id BILL calls invalid) ends a dead letter, instead of being read again every 30 minutes in the outbox forever', async () => {
    let reads = 0;
    const { w, sent } = worker(() => {
      reads++;
      return Promise.reject(new BillApiError({ category: 'validation', status: 400, code: 'BDC_1001' }));
    });
    const eventId = randomUUID();
    const raw = paymentEvent(eventId);
    expect((await receiver().accept(raw, sign(raw))).body.status).toBe('accepted');
    await w.drain();
    expect(reads).toBe(1);
    expect(sent).toEqual([]);
    const letters = await store.entries<DeadLetter>(NS.deadLetters);
    expect(letters.map(([, l]) => ({ eventId: l.eventId, channelId: l.channelId, kind: l.kind, status: l.status, code: l.code }))).toEqual([
      { eventId, channelId: TARGET.channelId, kind: 'payments', status: 400, code: 'BDC_1001' },
    ]);
    expect(await store.entries(NS.outbox)).toEqual([]);
    // Finished: BILL's redelivery of it is a duplicate, and nothing reads it again.
    expect((await receiver().accept(raw, sign(raw))).body.status).toBe('duplicate');
    clock.advance(RETRY_DELAYS_MS.at(-1)! * 2);
    await w.drain();
    expect(reads).toBe(1);
  });
});

describe('a record BILL cannot read for days', () => {
  /** Drives the worker through `days` of 30-minute retries. */
  async function waitDays(w: ReturnType<typeof worker>['w'], days: number): Promise<void> {
    const end = clock.now() + days * 24 * 3_600_000;
    while (clock.now() < end) {
      clock.advance(RETRY_DELAYS_MS.at(-1)! * 1.3);
      await w.drain();
    }
  }

  it("an event whose organisation's BILL sign-in keeps being refused is not read again every 30 minutes forever: it ends a dead letter `status` explains, and leaves the outbox", async () => {
    let reads = 0;
    const { w, sent } = worker(() => {
      reads++;
      return Promise.reject(new BillApiError({ category: 'credentials', status: 401, code: 'BDC_1102' }));
    });
    const eventId = randomUUID();
    const raw = paymentEvent(eventId);
    expect((await receiver().accept(raw, sign(raw))).body.status).toBe('accepted');
    await w.drain();
    await waitDays(w, UNREADABLE_FOR_MS / 86_400_000 + 1);
    expect(sent).toEqual([]);
    expect(await store.entries(NS.outbox)).toEqual([]);
    const here = (await store.entries<DeadLetter>(NS.deadLetters)).map(([, l]) => l);
    expect(here.map((l) => ({ eventId: l.eventId, cause: l.cause, status: l.status, code: l.code }))).toEqual([
      { eventId, cause: 'unreadable', status: 401, code: 'BDC_1102' },
    ]);
    expect(logs.text()).toContain('could not be read from BILL for too long; nothing posted, dead-lettered');
    // Nothing reads it any more, and BILL's redelivery of it is a duplicate.
    const before = reads;
    await waitDays(w, 1);
    expect(reads).toBe(before);
    expect((await receiver().accept(raw, sign(raw))).body.status).toBe('duplicate');
    const section = statusSection(here, clock.now());
    expect(JSON.stringify(section.items)).toContain('set aside, its record could not be read from BILL for 3 days (401 BDC');
  });

  it('an event whose record BILL could not read for two days is posted once BILL answers again', async () => {
    let failing = true;
    const { w, sent } = worker(() =>
      failing ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve({ state: 'current', entity: BILLS_RECORD }),
    );
    const raw = paymentEvent();
    await receiver().accept(raw, sign(raw));
    await w.drain();
    await waitDays(w, UNREADABLE_FOR_MS / 86_400_000 - 1);
    expect(await store.entries(NS.deadLetters)).toEqual([]);
    failing = false;
    await waitDays(w, 0.1);
    expect(sent).toEqual([BILLS_RECORD]);
    expect(await store.entries(NS.outbox)).toEqual([]);
  });
});

describe('an outbox entry in a shape this version does not write', () => {
  it('one damaged entry (a delivery that is null) is passed over, and the other events still go out', async () => {
    await store.set(NS.outbox, outboxKey(ORG, 'damaged'), { v: 1, eventId: 'damaged', receivedAt: 1, targets: { somewhere: null } });
    const { w, sent } = worker(() => Promise.resolve({ state: 'current', entity: BILLS_RECORD }));
    const raw = paymentEvent();
    expect((await receiver().accept(raw, sign(raw))).body.status).toBe('accepted');
    await w.drain();
    expect(sent).toEqual([BILLS_RECORD]);
    expect(await w.depth(() => true)).toMatchObject({ events: 0 });
  });
});
