// The single-instance SQLite store: a change is on disk when the call resolves, a write that fails is never counted,
// one process holds STATE_DIR, large values stay whole, and the audit log is a plain file.
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHmac, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { WebhookKeys } from '../../src/notify/keys.js';
import { WebhookReceiver, eventKey, outboxKey } from '../../src/notify/receiver.js';
import { DATABASE_FILE, SqliteStateStore, StateDirInUse } from '../../src/infra/state/sqliteStore.js';
import { NS } from '../../src/infra/state/types.js';

let dir: string;
let clock: ManualClock;
const stores: SqliteStateStore[] = [];
const dirs: string[] = [];

function open(at = dir): SqliteStateStore {
  const store = new SqliteStateStore(at, clock);
  stores.push(store);
  return store;
}

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'billbridge-state-'));
  dirs.push(d);
  return d;
}

/** The files as they are on disk this moment, copied elsewhere: what a machine that lost power now would find. */
function crashImage(): string {
  const image = tempDir();
  for (const suffix of ['', '-wal']) {
    const from = join(dir, DATABASE_FILE + suffix);
    if (existsSync(from)) copyFileSync(from, join(image, DATABASE_FILE + suffix));
  }
  return image;
}

/**
 * Fills the database up to a limit set at its present size, so every later change that needs a page fails with
 * SQLITE_FULL, as on a full disk. Returns what gives it room again.
 */
async function fillDisk(store: SqliteStateStore): Promise<() => void> {
  const db = store['db'];
  db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
  // Large rows first, then smaller ones into what is left of each page.
  let i = 0;
  for (const size of [900, 100, 10]) {
    for (;;) {
      try {
        await store.set('filler', `f${i++}`, 'x'.repeat(size));
      } catch {
        break;
      }
    }
  }
  return () => db.pragma('max_page_count = 1073741823');
}

beforeEach(() => {
  dir = tempDir();
  clock = new ManualClock(Date.parse('2026-11-21T10:00:00Z'));
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the SQLite store', () => {
  it('has a change on disk by the time the call resolves: the files as they are then, without a clean close, hold it', async () => {
    const a = open();
    await a.set('bindings', 'team-1', { orgId: '008A' });
    await a.set('bindings', 'team-2', { orgId: '008B' });
    expect(await a.delete('bindings', 'team-1')).toBe(true);
    expect(await a.delete('bindings', 'nope')).toBe(false);
    const image = open(crashImage());
    expect(await image.entries('bindings')).toEqual([['team-2', { orgId: '008B' }]]);
    // Owner-only files: without SECRETS_KEY webhook keys are stored as BILL gave them.
    for (const f of [DATABASE_FILE, `${DATABASE_FILE}-wal`]) expect([f, statSync(join(dir, f)).mode & 0o777]).toEqual([f, 0o600]);
    // And a clean restart reads the same.
    await a.close();
    expect(await open().entries('bindings')).toEqual([['team-2', { orgId: '008B' }]]);
  });

  it('a database and WAL left readable by others (an older version made them 0644) are made owner-only when opened', async () => {
    const first = open();
    await first.set('webhook-keys', 'sub-1', { key: 'as BILL gave it' });
    await first.close();
    // What an older version, or a copy made with a default umask, leaves behind; a kill -9 leaves the WAL too.
    writeFileSync(join(dir, `${DATABASE_FILE}-wal`), '');
    for (const f of [DATABASE_FILE, `${DATABASE_FILE}-wal`]) chmodSync(join(dir, f), 0o644);
    const again = open();
    expect(await again.get('webhook-keys', 'sub-1')).toEqual({ key: 'as BILL gave it' });
    for (const f of [DATABASE_FILE, `${DATABASE_FILE}-wal`]) expect([f, statSync(join(dir, f)).mode & 0o777]).toEqual([f, 0o600]);
  });

  it('an audit log left readable by others (0644, from an older version or a copy) is made owner-only when opened; a new one is owner-only', async () => {
    writeFileSync(join(dir, 'audit.log'), '{"who":"someone","command":"bills"}\n', { mode: 0o644 });
    chmodSync(join(dir, 'audit.log'), 0o644);
    const s = open();
    expect(statSync(join(dir, 'audit.log')).mode & 0o777).toBe(0o600);
    await s.appendAudit({ a: 1 });
    expect(readFileSync(join(dir, 'audit.log'), 'utf8')).toBe('{"who":"someone","command":"bills"}\n{"a":1}\n');
    expect(statSync(join(dir, 'audit.log')).mode & 0o777).toBe(0o600);
    await s.close();
    rmSync(join(dir, 'audit.log'));
    const fresh = open();
    await fresh.appendAudit({ a: 2 });
    expect(statSync(join(dir, 'audit.log')).mode & 0o777).toBe(0o600);
  });

  it('setIfAbsent creates once, and again only after the entry expired; an expired entry is neither read, listed nor deleted', async () => {
    const s = open();
    expect(await s.setIfAbsent('seen-activities', 'a1', 1, { ttlMs: 600_000 })).toBe(true);
    expect(await s.setIfAbsent('seen-activities', 'a1', 2, { ttlMs: 600_000 })).toBe(false);
    await s.set('seen-activities', 'keeps', 'x');
    clock.advance(600_001);
    expect(await s.get('seen-activities', 'a1')).toBeUndefined();
    expect(await s.entries('seen-activities')).toEqual([['keeps', 'x']]);
    expect(await s.delete('seen-activities', 'a1')).toBe(false);
    expect(await s.setIfAbsent('seen-activities', 'a1', 3, { ttlMs: 600_000 })).toBe(true);
    await s.close();
    expect(await open().get('seen-activities', 'a1')).toBe(3);
  });

  it('a duplicate mark is decided and committed in one step: of 20 one wins, and after a restart a mark on it loses', async () => {
    const s = open();
    const claims = await Promise.all(
      Array.from({ length: 20 }, (_, i) => s.setIfAbsent('seen-activities', 'conv|a7', i, { ttlMs: 600_000 })),
    );
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await open(crashImage()).get('seen-activities', 'conv|a7')).toBe(claims.indexOf(true));
    await s.close();
    const restarted = open();
    expect(await restarted.setIfAbsent('seen-activities', 'conv|a7', 99, { ttlMs: 600_000 })).toBe(false);
    expect(await restarted.setIfAbsent('seen-activities', 'conv|a7', 100)).toBe(false);
  });

  it('Teams duplicate marks and card records (committed without a sync of their own) and synced writes made in one turn are all on disk, in order', async () => {
    const s = open();
    // Unsynced first, then a synced change (which commits the unsynced batch and opens its own), then unsynced again.
    const writes = [
      s.setIfAbsent('seen-activities', 'conv|b1', 1, { ttlMs: 600_000 }),
      s.set('card-messages', 'm1', ['a|x']),
      s.set('webhook-events', 'evt-1', { at: 1 }),
      s.setIfAbsent('seen-activities', 'conv|b2', 2, { ttlMs: 600_000 }),
      s.setIfAbsent('outbox', 'evt-1', { v: 1 }),
    ];
    const [first, , , second] = (await Promise.all(writes)) as [boolean, undefined, undefined, boolean, boolean];
    expect([first, second]).toEqual([true, true]);
    const image = open(crashImage());
    expect(await image.get('seen-activities', 'conv|b1')).toBe(1);
    expect(await image.get('card-messages', 'm1')).toEqual(['a|x']);
    expect(await image.get('webhook-events', 'evt-1')).toEqual({ at: 1 });
    expect(await image.get('seen-activities', 'conv|b2')).toBe(2);
    expect(await image.get('outbox', 'evt-1')).toEqual({ v: 1 });
    await image.close();
    await s.close();
  });

  it('returns copies, so callers cannot change stored values by accident; keeps non-ASCII text and keys as they were', async () => {
    const s = open();
    const value = { list: [1], name: 'Café Müller № 7 — 東京 🧾' };
    await s.set('conversations', 'clé|東京', value);
    value.list.push(2);
    const read = await s.get<{ list: number[] }>('conversations', 'clé|東京');
    read!.list.push(3);
    expect(await s.get('conversations', 'clé|東京')).toEqual({ list: [1], name: 'Café Müller № 7 — 東京 🧾' });
    await s.set('conversations', 'nothing', undefined);
    expect(await s.get('conversations', 'nothing')).toBeNull();
  });

  it('writes 1,000 concurrent changes and loses none', async () => {
    const s = open();
    await Promise.all(Array.from({ length: 1000 }, (_, i) => s.set('outbox', `ev-${i}`, { i })));
    expect((await open(crashImage()).entries('outbox')).length).toBe(1000);
  });

  it('keeps replica shards of megabytes whole through replacements and restarts, and the files bounded', async () => {
    const s = open();
    // Non-ASCII text, so byte and character counts differ.
    const shard = (i: number, tag: string, rows = 400) => ({
      v: 2,
      tag,
      rows: Array.from({ length: rows }, (_, r) => ({ id: `00e${i}-${r}`, name: `Café Müller № ${r}`, amount: r * 1.5 })),
    });
    const big = shard(99, 'big', 40_000);
    expect(JSON.stringify(big).length).toBeGreaterThan(2_000_000);
    await s.set('invoice-index', 'shard:big', big);
    for (let round = 0; round < 64; round++) await s.set('invoice-index', `shard:${round % 8}`, shard(round % 8, `r${round}`));
    for (let round = 0; round < 5; round++) await s.set('invoice-index', 'shard:big', { ...big, tag: `big${round}` });
    const expected = (i: number) => shard(i, `r${56 + i}`);
    for (let i = 0; i < 8; i++) expect(await s.get('invoice-index', `shard:${i}`)).toEqual(expected(i));
    expect(await s.get('invoice-index', 'shard:big')).toEqual({ ...big, tag: 'big4' });
    // Pages of replaced values are reused: the files stay within a few copies of what is live, not 5 x 2 MB + 64 x 25 KB.
    const live = Buffer.byteLength(JSON.stringify(big)) + 8 * Buffer.byteLength(JSON.stringify(expected(0)));
    const size = () =>
      [DATABASE_FILE, `${DATABASE_FILE}-wal`].reduce((n, f) => n + (existsSync(join(dir, f)) ? statSync(join(dir, f)).size : 0), 0);
    expect(size()).toBeLessThan(3 * live + 4 * 1024 * 1024);
    expect(await s.delete('invoice-index', 'shard:7')).toBe(true);
    await s.close();
    const again = open();
    const all = new Map(await again.entries<unknown>('invoice-index'));
    expect(all.size).toBe(8);
    expect(all.get('shard:big')).toEqual({ ...big, tag: 'big4' });
    for (let i = 0; i < 7; i++) expect(all.get(`shard:${i}`)).toEqual(expected(i));
  });

  it('appends audit records as synced JSON lines, follows a rotated log, and refuses namespace names that are not plain', async () => {
    const s = open();
    await s.appendAudit({ a: 1 });
    await s.appendAudit({ a: 2 });
    expect(readFileSync(join(dir, 'audit.log'), 'utf8')).toBe('{"a":1}\n{"a":2}\n');
    // Many at once: every record on its own whole line, none lost.
    await Promise.all(Array.from({ length: 500 }, (_, i) => s.appendAudit({ i, pad: 'x'.repeat(i) })));
    const lines = readFileSync(join(dir, 'audit.log'), 'utf8')
      .trimEnd()
      .split('\n')
      .slice(2)
      .map((l) => JSON.parse(l) as { i: number });
    expect(lines.map((l) => l.i).sort((a, b) => a - b)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    // The log removed or moved under a running store (log rotation): the next record starts a new file.
    rmSync(join(dir, 'audit.log'));
    await s.appendAudit({ a: 3 });
    expect(readFileSync(join(dir, 'audit.log'), 'utf8')).toBe('{"a":3}\n');
    renameSync(join(dir, 'audit.log'), join(dir, 'audit.log.1'));
    await s.appendAudit({ a: 4 });
    expect(readFileSync(join(dir, 'audit.log.1'), 'utf8')).toBe('{"a":3}\n');
    expect(readFileSync(join(dir, 'audit.log'), 'utf8')).toBe('{"a":4}\n');
    await expect(s.set('../etc', 'k', 1)).rejects.toThrow(/Invalid state namespace/);
  });

  it('a file in STATE_DIR that is not its database stops the start with a message naming the file', () => {
    writeFileSync(join(dir, DATABASE_FILE), 'this is not a database, it is a note someone left here'.repeat(100));
    expect(() => open()).toThrow(`cannot open the state database ${join(dir, DATABASE_FILE)}: file is not a database`);
  });
});

describe('one process per STATE_DIR', () => {
  it('a second store on the same STATE_DIR refuses with a message naming the holder; once the first closes it opens', async () => {
    const first = open();
    await first.set('bindings', 't', 1);
    let refusal: unknown;
    try {
      open();
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(StateDirInUse);
    expect((refusal as Error).message).toBe(
      `STATE_DIR ${dir} is in use by another billbridge process (pid ${process.pid}); stop that one first, or give this one its own STATE_DIR (several instances share state through REDIS_URL)`,
    );
    // The refused store changed nothing: the first keeps working.
    await first.set('bindings', 'u', 2);
    await first.close();
    expect(await open().entries('bindings')).toEqual([
      ['t', 1],
      ['u', 2],
    ]);
  });
});

describe('a write the disk refuses', () => {
  it('throws, and the entry is not counted as written: not read, not listed, and setIfAbsent can still create it', async () => {
    const s = open();
    await s.set('outbox', 'before', 1);
    const roomAgain = await fillDisk(s);
    const bulky = { pad: 'x'.repeat(2_000) };
    await expect(s.set('outbox', 'ev|1', bulky)).rejects.toThrow(/database or disk is full/);
    await expect(s.setIfAbsent('outbox', 'ev|2', bulky)).rejects.toThrow(/database or disk is full/);
    await expect(s.setIfAbsent('seen-activities', 'conv|a1', { pad: 'y'.repeat(2_000) })).rejects.toThrow(/database or disk is full/);
    expect(await s.get('outbox', 'ev|1')).toBeUndefined();
    expect(await s.entries('outbox')).toEqual([['before', 1]]);
    expect(await s.get('seen-activities', 'conv|a1')).toBeUndefined();
    roomAgain();
    expect(await s.setIfAbsent('outbox', 'ev|2', bulky)).toBe(true);
    expect(await s.setIfAbsent('seen-activities', 'conv|a1', 1)).toBe(true);
    expect(s.isReady()).toBe(true);
  });

  it('changes that share a commit with one the disk refuses: each acknowledged one is on disk, each refused one is not', async () => {
    const s = open();
    const roomAgain = await fillDisk(s);
    roomAgain();
    // Room for a few small rows, not for a large one, all in one turn of the event loop (one transaction).
    const db = s['db'];
    db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 2}`);
    const keys = ['a', 'b', 'big', 'c', 'd'];
    const settled = await Promise.allSettled(keys.map((k) => s.set('outbox', k, k === 'big' ? 'x'.repeat(50_000) : k)));
    expect(settled[2]!.status).toBe('rejected');
    const image = open(crashImage());
    for (const [i, k] of keys.entries())
      expect([k, settled[i]!.status, await image.get('outbox', k)]).toEqual([
        k,
        settled[i]!.status,
        settled[i]!.status === 'fulfilled' ? k : undefined,
      ]);
    // The same holds for what this store answers now.
    for (const [i, k] of keys.entries()) expect(await s.get('outbox', k)).toEqual(settled[i]!.status === 'fulfilled' ? k : undefined);
  });

  it("a BILL webhook whose outbox write hits a full disk is answered 503, not marked as seen, and BILL's retry is accepted once there is room", async () => {
    const s = open();
    const secrets = new SecretRegistry();
    const log = createLogger({ level: 'silent', secrets });
    const key = 'k'.repeat(44);
    const receiver = new WebhookReceiver({
      state: s,
      clock,
      log,
      keys: new WebhookKeys({ state: s, clock, log, secrets, secretsKey: undefined }),
      envKeys: { '00801ORG': key },
      servesOrg: () => true,
      stale: () => undefined,
      kick: () => undefined,
    });
    const eventId = randomUUID();
    const raw = Buffer.from(
      JSON.stringify({
        metadata: { eventId, subscriptionId: 'sub-1', organizationId: '00801ORG', eventType: 'vendor.created', version: '1' },
        vendor: { id: '00901v', name: 'Acme Supply' },
      }),
    );
    const signature = createHmac('sha256', key).update(raw).digest('base64');
    const roomAgain = await fillDisk(s);
    const refused = await receiver.accept(raw, signature);
    expect(refused).toMatchObject({ status: 503, body: { status: 'retry' } });
    expect(await s.get(NS.webhookEvents, eventKey('00801ORG', eventId))).toBeUndefined();
    expect(await s.get(NS.outbox, outboxKey('00801ORG', eventId))).toBeUndefined();
    // BILL retries while the disk is still full: still not acknowledged, and not taken for a duplicate.
    expect((await receiver.accept(raw, signature)).status).toBe(503);
    roomAgain();
    expect(await receiver.accept(raw, signature)).toMatchObject({ status: 200, body: { status: 'accepted', eventId } });
    expect(await s.get(NS.outbox, outboxKey('00801ORG', eventId))).toMatchObject({ eventId });
    expect(await receiver.accept(raw, signature)).toMatchObject({ status: 200, body: { status: 'duplicate' } });
  });
});
