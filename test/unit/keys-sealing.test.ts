// Secrets at rest: SECRETS_KEY must be 32 random-looking bytes; webhook keys are sealed under their own derived key
// and bound to their subscription and org; production never stores them unsealed; a changed key is counted.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/infra/clock.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { ROTATION_GRACE_MS, UNSEALED_REFUSED, WebhookKeys } from '../../src/notify/keys.js';
import { webhookSetup, WebhookSetupError } from '../../src/notify/setup.js';
import type { BillGateway } from '../../src/bill/gateway.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { deriveKey, openText, parseSecretsKey } from '../../src/infra/state/sealing.js';
import { NS } from '../../src/infra/state/types.js';
import { UserLinks } from '../../src/features/approvals/userLinks.js';
import { LogCapture } from '../harness/logs.js';
import { registerSecrets } from '../harness/secretScan.js';

const logs = new LogCapture('keys sealing');
const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
const WEBHOOK_KEY = randomBytes(32).toString('base64');
registerSecrets(() => [WEBHOOK_KEY]);

let dir: string;
let state: SqliteStateStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-keys-'));
  state = new SqliteStateStore(dir, systemClock);
});
afterEach(async () => {
  await state.close();
  rmSync(dir, { recursive: true, force: true });
});

function keys(secretsKey: Buffer | undefined, refuseUnsealed = false): WebhookKeys {
  return new WebhookKeys({ state, clock: systemClock, log, secrets: new SecretRegistry(), secretsKey, refuseUnsealed });
}

const SUB = {
  subscriptionId: 'sub-a',
  orgId: '00801ORGA',
  name: 'billbridge',
  notificationUrl: 'https://bot.example.com/api/bill/webhooks',
  events: ['invoice.updated'],
};

describe('SECRETS_KEY', () => {
  const random = randomBytes(32);
  it.each([
    ['64 hex characters', random.toString('hex')],
    ['base64 with padding', random.toString('base64')],
    ['base64url without padding', random.toString('base64url')],
  ])('is accepted as %s', (_, text) => {
    expect(parseSecretsKey(text)).toEqual({ key: random });
  });

  it.each([
    ['a short word', 'too-short'],
    ['31 bytes', randomBytes(31).toString('base64')],
    ['33 bytes', randomBytes(33).toString('hex')],
    ['a 44-character password that base64 would half-read', 'my-Sup3r secret passphrase for billbridge!!!'],
    ['32 zero bytes', '0'.repeat(64)],
    ['the same byte 32 times', Buffer.alloc(32, 0xa7).toString('base64')],
    ['a 32-character password encoded as base64', Buffer.from('CorrectHorseBatteryStaple2024!!x').toString('base64')],
    ['bytes 0, 1, 2 ... 31', Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('hex')],
  ])('is refused when it is %s, without repeating it', (_, text) => {
    const res = parseSecretsKey(text);
    expect(res).toHaveProperty('problem');
    expect((res as { problem: string }).problem).not.toContain(text);
  });

  it('a weak SECRETS_KEY stops start-up with an error naming the variable and not the value', () => {
    const weak = Buffer.from('CorrectHorseBatteryStaple2024!!x').toString('base64');
    let error: unknown;
    try {
      loadConfig({ NODE_ENV: 'test', SECRETS_KEY: weak, STATE_DIR: dir });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain('SECRETS_KEY');
    expect((error as Error).message).toContain('not random-looking');
    expect((error as Error).message).not.toContain(weak);
  });
});

describe('webhook keys at rest', () => {
  it('are sealed under a key derived for webhook keys: neither SECRETS_KEY itself nor the approver-link key opens them', async () => {
    const secretsKey = randomBytes(32);
    await keys(secretsKey).save({ ...SUB, securityKey: WEBHOOK_KEY });
    const stored = await state.get<{ key: { alg: string; iv: string; tag: string; data: string } }>(NS.webhookKeys, SUB.subscriptionId);
    expect(stored?.key.alg).toBe('aes-256-gcm/v2');
    expect(JSON.stringify(stored)).not.toContain(WEBHOOK_KEY);
    const aad = `webhook-key|v2|${SUB.subscriptionId}|${SUB.orgId}`;
    expect(() => openText(secretsKey, stored!.key, aad)).toThrow();
    expect(() => openText(deriveKey(secretsKey, 'user-links/seal/v1'), stored!.key, aad)).toThrow();
    expect(openText(deriveKey(secretsKey, 'webhook-keys/seal/v1'), stored!.key, aad)).toBe(WEBHOOK_KEY);
    expect(await keys(secretsKey).keysFor(SUB.subscriptionId)).toEqual([{ key: WEBHOOK_KEY, orgId: SUB.orgId }]);
  });

  it('a sealed key copied under another subscription, or re-labelled with another org, does not open', async () => {
    const secretsKey = randomBytes(32);
    const k = keys(secretsKey);
    await k.save({ ...SUB, securityKey: WEBHOOK_KEY });
    const stored = await state.get<Record<string, unknown>>(NS.webhookKeys, SUB.subscriptionId);
    // Someone with write access to the store points their subscription at this org's key.
    await state.set(NS.webhookKeys, 'sub-evil', { ...stored, subscriptionId: 'sub-evil' });
    expect(await k.keysFor('sub-evil')).toEqual([]);
    // Or keeps the subscription and claims another org, to have its events count there.
    await state.set(NS.webhookKeys, SUB.subscriptionId, { ...stored, orgId: '00801ORGB' });
    expect(await k.keysFor(SUB.subscriptionId)).toEqual([]);
    expect(await k.registerAll()).toBe(2);
  });

  it('a key stored unsealed before SECRETS_KEY was set is sealed, bound, at the next start-up', async () => {
    const secretsKey = randomBytes(32);
    await state.set(NS.webhookKeys, SUB.subscriptionId, {
      v: 1,
      ...SUB,
      key: { alg: 'none', value: WEBHOOK_KEY },
      createdAt: 1,
      updatedAt: 1,
    });
    const k = keys(secretsKey);
    expect(await k.registerAll()).toBe(0);
    const stored = await state.get<{ key: { alg: string } }>(NS.webhookKeys, SUB.subscriptionId);
    expect(stored?.key.alg).toBe('aes-256-gcm/v2');
    expect(await k.keysFor(SUB.subscriptionId)).toEqual([{ key: WEBHOOK_KEY, orgId: SUB.orgId }]);
  });

  it('a key rotated out before SECRETS_KEY was set keeps verifying through its grace after the record is sealed', async () => {
    const secretsKey = randomBytes(32);
    const rotatedOut = randomBytes(32).toString('base64');
    registerSecrets(() => [rotatedOut]);
    const seal = (value: string) => ({ alg: 'none', value });
    const until = Date.now() + 3_600_000;
    await state.set(NS.webhookKeys, SUB.subscriptionId, {
      v: 1,
      ...SUB,
      key: seal(WEBHOOK_KEY),
      previous: { key: seal(rotatedOut), until },
      createdAt: 1,
      updatedAt: 1,
    });
    const k = keys(secretsKey);
    expect(await k.registerAll()).toBe(0);
    expect(await k.keysFor(SUB.subscriptionId)).toEqual([
      { key: WEBHOOK_KEY, orgId: SUB.orgId },
      { key: rotatedOut, orgId: SUB.orgId },
    ]);
    expect((await state.get<{ previous?: { until: number } }>(NS.webhookKeys, SUB.subscriptionId))?.previous?.until).toBe(until);
  });

  it('with NODE_ENV=production and no SECRETS_KEY nothing is stored, and setup refuses before BILL makes a key', async () => {
    const k = keys(undefined, true);
    await expect(k.save({ ...SUB, securityKey: WEBHOOK_KEY })).rejects.toThrow(UNSEALED_REFUSED);
    expect(await state.get(NS.webhookKeys, SUB.subscriptionId)).toBeUndefined();
    let billAsked = false;
    const bill = {
      org: () => {
        billAsked = true;
        throw new Error('BILL must not be asked');
      },
    } as unknown as BillGateway;
    const setup = webhookSetup({ bill, keys: k, log, state, clock: systemClock });
    const refused = await setup.setup('00801ORGA', 'https://bot.example.com/api/bill/webhooks').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(WebhookSetupError);
    expect((refused as WebhookSetupError).reason).toBe('unsealed');
    expect((refused as Error).message).toContain('SECRETS_KEY');
    expect(billAsked).toBe(false);
    // Outside production the file store keeps it (mode 0600), with a warning.
    await keys(undefined, false).save({ ...SUB, securityKey: WEBHOOK_KEY });
    expect(logs.text()).toContain('SECRETS_KEY is not set: webhook security keys are stored unencrypted');
  });
});

describe('a changed SECRETS_KEY', () => {
  it('is counted: webhook keys and approver links sealed under the old key cannot be opened with the new one', async () => {
    const before = randomBytes(32);
    const after = randomBytes(32);
    await keys(before).save({ ...SUB, securityKey: WEBHOOK_KEY });
    const links = new UserLinks({ store: state, secretsKey: before, log, clock: systemClock });
    await links.put({
      tenantId: 't',
      aadObjectId: 'a',
      orgId: '00801ORGA',
      billUserId: 'u',
      token: { name: 'n', value: randomBytes(16).toString('hex') },
      teamsUserId: '29:x',
    });
    expect(await keys(before).registerAll()).toBe(0);
    expect(await links.unopenable()).toBe(0);
    expect(await keys(after).registerAll()).toBe(1);
    expect(await new UserLinks({ store: state, secretsKey: after, log, clock: systemClock }).unopenable()).toBe(1);
    expect(await keys(undefined).registerAll()).toBe(1);
  });
});

describe('webhook keys in the log scrubber (SecretRegistry)', () => {
  const K1 = randomBytes(32).toString('base64');
  const K2 = randomBytes(32).toString('base64');
  const K3 = randomBytes(32).toString('base64');
  registerSecrets(() => [K1, K2, K3]);

  function scrubbed() {
    const clock = new ManualClock(Date.parse('2026-03-02T10:00:00Z'));
    const secrets = new SecretRegistry([], { now: () => clock.now() });
    const make = () => new WebhookKeys({ state, clock, log, secrets, secretsKey: randomBytes(32) });
    return { clock, secrets, make };
  }

  it("a deleted subscription's key leaves the registry with its record", async () => {
    const { secrets, make } = scrubbed();
    const k = make();
    await k.save({ ...SUB, securityKey: K1 });
    expect(secrets.list()).toContain(K1);
    expect(await k.remove(SUB.subscriptionId)).toBe(true);
    expect(secrets.list()).not.toContain(K1);
  });

  it('a rotated key stays registered while it still verifies (the grace), then goes; a key rotated twice goes at once', async () => {
    const { clock, secrets, make } = scrubbed();
    const k = make();
    await k.save({ ...SUB, securityKey: K1 });
    await k.save({ ...SUB, securityKey: K2 });
    expect(secrets.list()).toContain(K1);
    expect(secrets.list()).toContain(K2);
    clock.advance(ROTATION_GRACE_MS / 2);
    await k.save({ ...SUB, securityKey: K3 });
    // K1 no longer verifies anything (K2 is the previous key now).
    expect((await k.keysFor(SUB.subscriptionId)).map((x) => x.key)).toEqual([K3, K2]);
    expect(secrets.list()).not.toContain(K1);
    clock.advance(ROTATION_GRACE_MS + 1);
    expect((await k.keysFor(SUB.subscriptionId)).map((x) => x.key)).toEqual([K3]);
    expect(secrets.list()).not.toContain(K2);
    expect(secrets.list()).toContain(K3);
  });

  it('an instance reading a record with a key in its grace registers that key only until the grace ends', async () => {
    const first = scrubbed();
    const secretsKey = randomBytes(32);
    const writer = new WebhookKeys({ state, clock: first.clock, log, secrets: first.secrets, secretsKey });
    await writer.save({ ...SUB, securityKey: K1 });
    await writer.save({ ...SUB, securityKey: K2 });
    const secrets = new SecretRegistry([], { now: () => first.clock.now() });
    const reader = new WebhookKeys({ state, clock: first.clock, log, secrets, secretsKey });
    expect(await reader.registerAll()).toBe(0);
    expect(secrets.list()).toContain(K1);
    expect(secrets.list()).toContain(K2);
    first.clock.advance(ROTATION_GRACE_MS + 1);
    expect(secrets.list()).not.toContain(K1);
    expect(secrets.list()).toContain(K2);
  });
});
