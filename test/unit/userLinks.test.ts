// Approvers' links at rest: sealed with a key derived from SECRETS_KEY, stored under opaque keys; without that key
// nothing can be read or even attributed to a person, and a sealed link cannot be moved to someone else.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { NS } from '../../src/infra/state/types.js';
import { UserLinks, type UserLink } from '../../src/features/approvals/userLinks.js';
import { deriveKey } from '../../src/infra/state/sealing.js';
import { LogCapture } from '../harness/logs.js';

const clock = new ManualClock(Date.UTC(2026, 10, 21, 9, 0));
let dir: string;
let store: SqliteStateStore;
let logs: LogCapture;

const KEY = randomBytes(32);
const DANA: UserLink = {
  tenantId: 'AAAAAAAA-0000-4000-8000-000000000001',
  aadObjectId: '11111111-0000-4000-8000-00000000D0D0',
  orgId: '00801DEMOORGANIZATION',
  billUserId: '00601DANAWHITFIELD01',
  token: { name: 'dana-teams-approvals', value: 'tok_9f8e7d6c5b4a39281706f5e4d3c2b1a0' },
  teamsUserId: '29:user-dana',
  displayName: 'Dana Lee',
  reference: { conversation: { id: 'a:personal-dana' }, serviceUrl: 'https://smba.trafficmanager.net/amer/' },
};

function links(key = KEY, secrets = new SecretRegistry()): UserLinks {
  return new UserLinks({ store, secretsKey: key, log: createLogger({ level: 'debug', secrets, destination: logs }) });
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-links-'));
  store = new SqliteStateStore(dir, clock);
  logs = new LogCapture('user links log');
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function onDisk(): string {
  return readdirSync(dir)
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');
}

describe('approver links at rest', () => {
  it('reads back what was stored, with the key', async () => {
    const l = links();
    await l.put(DANA);
    const back = await l.get({ tenantId: DANA.tenantId, aadObjectId: DANA.aadObjectId, orgId: DANA.orgId });
    expect(back).toMatchObject({
      billUserId: DANA.billUserId,
      token: DANA.token,
      teamsUserId: '29:user-dana',
      tenantId: DANA.tenantId.toLowerCase(),
      aadObjectId: DANA.aadObjectId.toLowerCase(),
    });
    expect(await l.forPerson(DANA.tenantId, DANA.aadObjectId)).toHaveLength(1);
    expect(await l.all()).toHaveLength(1);
  });

  it('opens a link stored with the fields earlier versions also wrote (linkedAt, updatedAt)', async () => {
    const l = links();
    const earlier = { ...DANA, linkedAt: 1, updatedAt: 2 };
    await l.put(earlier);
    expect(await l.get(DANA)).toMatchObject({ billUserId: DANA.billUserId, token: DANA.token, teamsUserId: DANA.teamsUserId });
    expect(await l.update(DANA, { digestTime: '08:30' })).toMatchObject({ digestTime: '08:30', token: DANA.token });
  });

  it('keeps nothing readable on disk: not the token, not who it belongs to, not the org', async () => {
    await links().put(DANA);
    await store.close();
    const text = onDisk();
    expect(text.length).toBeGreaterThan(0);
    for (const plain of [
      DANA.token.name,
      DANA.token.value,
      DANA.aadObjectId,
      DANA.aadObjectId.toLowerCase(),
      DANA.tenantId.toLowerCase(),
      DANA.orgId,
      DANA.billUserId,
      'Dana Lee',
      '29:user-dana',
      'a:personal-dana',
    ]) {
      expect(text, plain).not.toContain(plain);
      expect(text, plain).not.toContain(Buffer.from(plain).toString('base64').slice(0, 16));
    }
  });

  it('opens nothing under another SECRETS_KEY: no link, no way to tell whose it was', async () => {
    await links().put(DANA);
    const other = links(randomBytes(32));
    expect(await other.get(DANA)).toBeUndefined();
    expect(await other.forPerson(DANA.tenantId, DANA.aadObjectId)).toEqual([]);
    expect(await other.all()).toEqual([]);
    expect(logs.text()).toContain('cannot be opened');
  });

  it("refuses a sealed link copied under another person's key", async () => {
    const l = links();
    await l.put(DANA);
    const sealed = await store.get(NS.userLinks, l.key(DANA));
    const mallory = { tenantId: DANA.tenantId, aadObjectId: '22222222-0000-4000-8000-000000000bad', orgId: DANA.orgId };
    await store.set(NS.userLinks, l.key(mallory), sealed);
    expect(await l.get(mallory)).toBeUndefined();
    expect(await l.forPerson(mallory.tenantId, mallory.aadObjectId)).toEqual([]);
  });

  it('never teaches a token to the log scrubber (a value a person chose), and never logs it when stored or read', async () => {
    const writer = new SecretRegistry();
    await links(KEY, writer).put(DANA);
    const reader = new SecretRegistry();
    expect((await links(KEY, reader).get(DANA))?.token).toEqual(DANA.token);
    expect(writer.list().length + reader.list().length).toBe(0);
    expect(logs.text()).not.toContain(DANA.token.value);
  });

  it('removes a link and updates only the fields it is asked to', async () => {
    const l = links();
    await l.put(DANA);
    const updated = await l.update(DANA, { digestTime: '08:30' });
    expect(updated).toMatchObject({ digestTime: '08:30', token: DANA.token, displayName: DANA.displayName });
    expect(await l.remove(DANA)).toBe(true);
    expect(await l.get(DANA)).toBeUndefined();
    expect(await l.remove(DANA)).toBe(false);
  });

  it('derives a different key for each purpose and refuses a key that is not 32 bytes', () => {
    expect(deriveKey(KEY, 'a').equals(deriveKey(KEY, 'b'))).toBe(false);
    expect(deriveKey(KEY, 'a').equals(KEY)).toBe(false);
    expect(() => deriveKey(randomBytes(16), 'a')).toThrow(/32 bytes/);
  });
});
