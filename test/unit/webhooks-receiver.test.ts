// The receiver's decisions on a real SQLite store: which key verifies an event, one outbox entry per event id even
// when BILL delivers it twice at once, a rotated key that keeps working for a day, keys sealed at rest, and a 503
// (BILL retries) when the store cannot keep up.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { NS, type StateStore } from '../../src/infra/state/types.js';
import { WebhookKeys, ROTATION_GRACE_MS } from '../../src/notify/keys.js';
import { WebhookReceiver, outboxKey, type ReceiverDeps } from '../../src/notify/receiver.js';
import { paymentBillIds } from '../../src/notify/project.js';
import type { OutboxEvent } from '../../src/notify/types.js';
import { LogCapture } from '../harness/logs.js';
import { registerSecrets } from '../harness/secretScan.js';

const ORG = '00801ORGANISATIONA01';
const OTHER_ORG = '00801ORGANISATIONB02';
const SUB = 'sub01storedsubscription';

let dir: string;
let clock: ManualClock;
let store: SqliteStateStore;
let secrets: SecretRegistry;
let logs: LogCapture;
let keys: WebhookKeys;
const changed: OutboxEvent[] = [];
let kicks = 0;

function makeKeys(secretsKey?: Buffer): WebhookKeys {
  const log = createLogger({ level: 'debug', secrets, destination: logs });
  return new WebhookKeys({ state: store, clock, log, secrets, secretsKey });
}

function receiver(over: Partial<ReceiverDeps> = {}): WebhookReceiver {
  return new WebhookReceiver({
    state: store,
    clock,
    log: createLogger({ level: 'debug', secrets, destination: logs }),
    keys,
    envKeys: {},
    servesOrg: (o) => o === ORG,
    stale: (ev) => changed.push(ev),
    kick: () => kicks++,
    ...over,
  });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-receiver-'));
  clock = new ManualClock(Date.parse('2026-03-02T10:00:00Z'));
  store = new SqliteStateStore(dir, clock);
  secrets = new SecretRegistry();
  logs = new LogCapture('receiver');
  registerSecrets(() => secrets.list());
  keys = makeKeys();
  changed.length = 0;
  kicks = 0;
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function event(over: { org?: string; sub?: string; type?: string; entity?: Record<string, unknown> } = {}): Buffer {
  return Buffer.from(
    JSON.stringify({
      metadata: {
        eventId: randomUUID(),
        subscriptionId: over.sub ?? SUB,
        organizationId: over.org ?? ORG,
        eventType: over.type ?? 'payment.updated',
        version: '1',
      },
      payment: over.entity ?? {
        id: 'stp01pay',
        amount: 4200,
        status: 'FUNDING_FAILED_ACTION_NEEDED',
        billIds: ['00n01bill'],
        vendor: { id: '00901v', name: 'Acme Supply' },
        funding: { accountNumber: '987654321' },
      },
    }),
  );
}
const sign = (raw: Buffer, key: string) => createHmac('sha256', key).update(raw).digest('base64');

async function saveKey(key: string): Promise<void> {
  await keys.save({
    subscriptionId: SUB,
    orgId: ORG,
    name: 'billbridge',
    notificationUrl: 'https://bot.example.com/api/bill/webhooks',
    events: ['payment.updated'],
    securityKey: key,
  });
}

describe("verifying with the subscription's key", () => {
  it('accepts an event signed with the key billbridge stored, and queues it without bank numbers', async () => {
    const key = randomBytes(32).toString('base64');
    await saveKey(key);
    const raw = event();
    const answer = await receiver().accept(raw, sign(raw, key));
    expect(answer).toMatchObject({ status: 200, body: { status: 'accepted' } });
    const eventId = (JSON.parse(raw.toString()) as { metadata: { eventId: string } }).metadata.eventId;
    const queued = await store.get<OutboxEvent>(NS.outbox, outboxKey(ORG, eventId));
    expect(queued).toMatchObject({
      eventId,
      orgId: ORG,
      type: 'payment.updated',
      entityType: 'payment',
      entity: { id: 'stp01pay', amount: 4200 },
    });
    expect(JSON.stringify(queued)).not.toContain('987654321');
    expect(kicks).toBe(1);
    // The payment and the bill it paid are marked stale in the mirror.
    expect(changed.map((ev) => [ev.orgId, ev.entityType, ev.entity.id, paymentBillIds(ev.entity)])).toEqual([
      [ORG, 'payment', 'stp01pay', ['00n01bill']],
    ]);
  });

  it("refuses an event of another organisation signed with this organisation's key", async () => {
    const key = randomBytes(32).toString('base64');
    await saveKey(key);
    const raw = event({ org: OTHER_ORG });
    const answer = await receiver({ servesOrg: () => true }).accept(raw, sign(raw, key));
    expect(answer.status).toBe(401);
    expect(await store.entries(NS.outbox)).toEqual([]);
  });

  it('refuses an event naming a subscription billbridge has no key for, unless BILL_WEBHOOK_SECURITY_KEY signed it', async () => {
    const envKey = randomBytes(32).toString('base64');
    const raw = event({ sub: 'sub-created-in-the-bill-app' });
    expect((await receiver().accept(raw, sign(raw, envKey))).status).toBe(401);
    expect((await receiver({ envKeys: { [ORG]: envKey } }).accept(raw, sign(raw, envKey))).status).toBe(200);
  });

  it("a configured key verifies its own organisation's events only: B's event signed with A's key is refused and stores nothing", async () => {
    const keyA = randomBytes(32).toString('base64');
    const keyB = randomBytes(32).toString('base64');
    const r = receiver({ envKeys: { [ORG]: keyA, [OTHER_ORG]: keyB }, servesOrg: () => true });
    const forB = event({ org: OTHER_ORG, sub: 'sub-created-in-the-bill-app' });
    expect((await r.accept(forB, sign(forB, keyA))).status).toBe(401);
    expect(await store.entries(NS.outbox)).toEqual([]);
    expect(changed).toEqual([]);
    expect((await r.accept(forB, sign(forB, keyB))).status).toBe(200);
  });

  it('after a key rotation, the old key still verifies for a day, then no more', async () => {
    const oldKey = randomBytes(32).toString('base64');
    const newKey = randomBytes(32).toString('base64');
    await saveKey(oldKey);
    await saveKey(newKey);
    const r = receiver();
    const a = event();
    expect((await r.accept(a, sign(a, newKey))).status).toBe(200);
    const b = event();
    expect((await r.accept(b, sign(b, oldKey))).status).toBe(200);
    clock.advance(ROTATION_GRACE_MS + 1);
    const c = event();
    expect((await r.accept(c, sign(c, oldKey))).status).toBe(401);
  });
});

describe('once per event id', () => {
  it('two deliveries of one event at the same moment queue it once', async () => {
    const key = randomBytes(32).toString('base64');
    await saveKey(key);
    const raw = event();
    const [x, y] = await Promise.all([receiver().accept(raw, sign(raw, key)), receiver().accept(raw, sign(raw, key))]);
    expect([x.body.status, y.body.status].sort()).toEqual(['accepted', 'duplicate']);
    expect((await store.entries(NS.outbox)).length).toBe(1);
  });

  it('answers 503 (BILL retries) when the store does not answer in time, and a retry is then accepted once', async () => {
    const key = randomBytes(32).toString('base64');
    await saveKey(key);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = Object.create(store, {
      setIfAbsent: { value: async (...args: Parameters<StateStore['setIfAbsent']>) => (await gate, store.setIfAbsent(...args)) },
    }) as StateStore;
    const raw = event();
    const answer = await receiver({ state: slow, answerWithinMs: 50 }).accept(raw, sign(raw, key));
    expect(answer.status).toBe(503);
    release();
    // The slow write finishes after the 503; BILL's retry finds the event already queued.
    await expect.poll(async () => (await store.entries(NS.outbox)).length).toBe(1);
    expect((await receiver().accept(raw, sign(raw, key))).body.status).toBe('duplicate');
  });
});

describe('keys at rest', () => {
  it('are sealed with SECRETS_KEY, registered as secrets, and unusable with another SECRETS_KEY', async () => {
    const secretsKey = randomBytes(32);
    keys = makeKeys(secretsKey);
    const key = randomBytes(32).toString('base64');
    await saveKey(key);
    await store.close();
    const onDisk = readdirSync(dir)
      .map((f) => readFileSync(join(dir, f), 'latin1'))
      .join('\n');
    expect(onDisk).not.toContain(key);
    expect(onDisk).toContain('aes-256-gcm');
    expect(secrets.list()).toContain(key);

    // A restart reads and unseals it.
    store = new SqliteStateStore(dir, clock);
    secrets = new SecretRegistry();
    keys = makeKeys(secretsKey);
    expect(await keys.registerAll()).toBe(0);
    expect(secrets.list()).toContain(key);
    const raw = event();
    expect((await receiver().accept(raw, sign(raw, key))).status).toBe(200);

    // The wrong SECRETS_KEY cannot open it: events are refused and the log says why.
    keys = makeKeys(randomBytes(32));
    const again = event();
    expect((await receiver().accept(again, sign(again, key))).status).toBe(401);
    expect(logs.text()).toContain('could not be unsealed');
  });
});
