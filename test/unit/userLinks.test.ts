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
  return new UserLinks({ store, secretsKey: key, log: createLogger({ level: 'debug', secrets, destination: logs }), clock });
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
    expect(await l.all({ tenantId: DANA.tenantId, aadObjectId: DANA.aadObjectId })).toHaveLength(1);
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
    expect(await other.all({ tenantId: DANA.tenantId, aadObjectId: DANA.aadObjectId })).toEqual([]);
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
    expect(await l.all({ tenantId: mallory.tenantId, aadObjectId: mallory.aadObjectId })).toEqual([]);
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

  it('a digest-time change and a name change made at once, on two instances, both land', async () => {
    const [here, there] = [links(), links()];
    await here.put(DANA);
    const ref = { tenantId: DANA.tenantId, aadObjectId: DANA.aadObjectId, orgId: DANA.orgId };
    await Promise.all([
      here.update(ref, { digestTime: '08:30', digestSince: clock.now() }),
      there.update(ref, { displayName: 'Dana Whitfield' }),
      here.update(ref, { teamsUserId: '29:user-dana-2' }),
    ]);
    expect(await here.get(ref)).toMatchObject({
      digestTime: '08:30',
      digestSince: clock.now(),
      displayName: 'Dana Whitfield',
      teamsUserId: '29:user-dana-2',
    });
    // The edit lock is gone, and is not mistaken for a link that cannot be opened.
    expect(await here.unopenable()).toBe(0);
    expect(await store.entries(NS.editLocks)).toEqual([]);
  });

  it('a disconnect, or a reconnect, made between a change reading the link and writing it back is not undone by it', async () => {
    const ref = { tenantId: DANA.tenantId, aadObjectId: DANA.aadObjectId, orgId: DANA.orgId };
    // `other` runs on a second instance right after this one read the link, and is let go once it has touched the store.
    const racing = (other: (there: UserLinks) => Promise<unknown>) => {
      const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
      let touched!: () => void;
      const reached = new Promise<void>((resolve) => (touched = resolve));
      const after = <T>(p: Promise<T>) => p.finally(() => touched());
      const thereStore = Object.assign(Object.create(store) as SqliteStateStore, {
        setIfAbsent: (...a: Parameters<SqliteStateStore['setIfAbsent']>) => after(store.setIfAbsent(...a)),
        set: (...a: Parameters<SqliteStateStore['set']>) => after(store.set(...a)),
        delete: (...a: Parameters<SqliteStateStore['delete']>) => after(store.delete(...a)),
      });
      let done: Promise<unknown> | undefined;
      const hereStore = Object.assign(Object.create(store) as SqliteStateStore, {
        get: async <T>(ns: string, key: string) => {
          const value = await store.get<T>(ns, key);
          if (ns === NS.userLinks && !done) {
            done = other(new UserLinks({ store: thereStore, secretsKey: KEY, log, clock }));
            await reached;
          }
          return value;
        },
      });
      const here = new UserLinks({ store: hereStore, secretsKey: KEY, log, clock });
      return { here, finished: () => done };
    };

    await links().put(DANA);
    const gone = racing((there) => there.remove(ref));
    await gone.here.update(ref, { digestTime: '08:30' });
    expect(await gone.finished()).toBe(true);
    expect(await links().get(ref)).toBeUndefined();

    await links().put(DANA);
    const fresh = { name: 'dana-new-token', value: 'tok_00112233445566778899aabbccddeeff' };
    const renewed = racing((there) => there.put({ ...DANA, token: fresh }));
    await renewed.here.update(ref, { displayName: 'Dana W.' });
    await renewed.finished();
    expect((await links().get(ref))?.token).toEqual(fresh);
  });

  it('derives a different key for each purpose and refuses a key that is not 32 bytes', () => {
    expect(deriveKey(KEY, 'a').equals(deriveKey(KEY, 'b'))).toBe(false);
    expect(deriveKey(KEY, 'a').equals(KEY)).toBe(false);
    expect(() => deriveKey(randomBytes(16), 'a')).toThrow(/32 bytes/);
  });
});
