// The single-instance store keeps every change on disk before it answers, stays small, and survives crashes mid-write.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { DISK_ONLY_CHARS, FileStateStore, readNamespaceFile } from '../../src/state/fileStore.js';

let dir: string;
let clock: ManualClock;
const stores: FileStateStore[] = [];

function open(): FileStateStore {
  const store = new FileStateStore(dir, clock);
  stores.push(store);
  return store;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'billbridge-state-'));
  clock = new ManualClock(Date.parse('2026-11-21T10:00:00Z'));
});
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
  rmSync(dir, { recursive: true, force: true });
});

describe('the file store', () => {
  it('has a change on disk by the time the call resolves, and a new process reads it back', async () => {
    const a = open();
    await a.set('bindings', 'team-1', { orgId: '008A' });
    expect(readNamespaceFile(dir, 'bindings')).toEqual({ 'team-1': { orgId: '008A' } });
    await a.set('bindings', 'team-2', { orgId: '008B' });
    expect(await a.delete('bindings', 'team-1')).toBe(true);
    expect(await a.delete('bindings', 'nope')).toBe(false);
    const b = open();
    expect(await b.entries('bindings')).toEqual([['team-2', { orgId: '008B' }]]);
  });

  it('setIfAbsent creates once, and again only after the entry expired', async () => {
    const s = open();
    expect(await s.setIfAbsent('seen-activities', 'a1', 1, { ttlMs: 600_000 })).toBe(true);
    expect(await s.setIfAbsent('seen-activities', 'a1', 2, { ttlMs: 600_000 })).toBe(false);
    clock.advance(600_001);
    expect(await s.get('seen-activities', 'a1')).toBeUndefined();
    expect(await s.setIfAbsent('seen-activities', 'a1', 3, { ttlMs: 600_000 })).toBe(true);
    expect(await open().get('seen-activities', 'a1')).toBe(3);
  });

  it('claim decides at once and is on disk when `durable` resolves: a second claim, here or after a restart, loses', async () => {
    const s = open();
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => s.claim('seen-activities', 'conv|a7', i, { ttlMs: 600_000 })));
    expect(claims.filter((c) => c.created)).toHaveLength(1);
    const winner = claims.find((c) => c.created)!;
    await winner.durable;
    expect(Object.keys(readNamespaceFile(dir, 'seen-activities', clock.now()))).toEqual(['conv|a7']);
    const restarted = open();
    expect((await restarted.claim('seen-activities', 'conv|a7', 99, { ttlMs: 600_000 })).created).toBe(false);
    expect(await restarted.setIfAbsent('seen-activities', 'conv|a7', 100)).toBe(false);
  });

  it('returns copies, so callers cannot change stored values by accident', async () => {
    const s = open();
    const value = { list: [1] };
    await s.set('conversations', 'c', value);
    value.list.push(2);
    const read = await s.get<{ list: number[] }>('conversations', 'c');
    read!.list.push(3);
    expect(await s.get('conversations', 'c')).toEqual({ list: [1] });
  });

  it('writes 1,000 concurrent changes and loses none', async () => {
    const s = open();
    await Promise.all(Array.from({ length: 1000 }, (_, i) => s.set('outbox', `ev-${i}`, { i })));
    expect(Object.keys(readNamespaceFile(dir, 'outbox'))).toHaveLength(1000);
    expect((await open().entries('outbox')).length).toBe(1000);
  });

  it('keeps the journal bounded when one large record is rewritten many times', async () => {
    const s = open();
    const rows = Array.from({ length: 2000 }, (_, i) => ({ n: `INV-${i}`, id: `00e${i}` }));
    for (let round = 0; round < 60; round++) await s.set('invoice-index', 'invoice:008A', { round, rows });
    const live = JSON.stringify({ round: 59, rows }).length;
    const size = statSync(join(dir, 'invoice-index.jsonl')).size;
    expect(size).toBeLessThan(Math.max(1024 * 1024, 3 * live) + 2 * live);
    expect(await open().get('invoice-index', 'invoice:008A')).toEqual({ round: 59, rows });
    // Writes after a rewrite land in the new file, not in the one it replaced.
    await s.set('invoice-index', 'bill:008A', { after: true });
    expect(readNamespaceFile(dir, 'invoice-index')).toEqual({ 'invoice:008A': { round: 59, rows }, 'bill:008A': { after: true } });
  });

  it('keeps large values on disk only once written, and reads them back through rewrites, restarts and replacements', async () => {
    const s = open();
    // Non-ASCII text, so byte offsets and string lengths differ.
    const shard = (i: number, tag: string) => ({ v: 2, tag, rows: Array.from({ length: 400 }, (_, r) => ({ id: `00e${i}-${r}`, name: `Café Müller № ${r}`, amount: r * 1.5 })) });
    expect(JSON.stringify(shard(0, 'a')).length).toBeGreaterThan(DISK_ONLY_CHARS);
    await Promise.all(Array.from({ length: 8 }, (_, i) => s.set('invoice-index', `shard:${i}`, shard(i, 'a'))));
    await s.set('invoice-index', 'head', { v: 2, shards: 8 });
    expect(await s.residency('invoice-index')).toEqual({ entries: 9, diskOnly: 8, textChars: JSON.stringify({ v: 2, shards: 8 }).length });
    for (let i = 0; i < 8; i++) expect(await s.get('invoice-index', `shard:${i}`)).toEqual(shard(i, 'a'));

    // Rewrite shards until the journal is compacted (it moves every value), reading while it happens.
    const reads: Array<Promise<unknown>> = [];
    for (let round = 0; round < 64; round++) {
      const i = round % 8;
      const write = s.set('invoice-index', `shard:${i}`, shard(i, `r${round}`));
      reads.push(s.get('invoice-index', `shard:${(i + 3) % 8}`));
      await write;
    }
    const settled = await Promise.all(reads);
    settled.forEach((value, round) => expect((value as { rows: unknown[] }).rows).toEqual(shard((round + 3) % 8, 'x').rows));
    const expected = (i: number) => shard(i, `r${56 + i}`);
    for (let i = 0; i < 8; i++) expect(await s.get('invoice-index', `shard:${i}`)).toEqual(expected(i));
    // The journal was rewritten (64 writes of ~25 KB would be 1.6 MB) and still answers from the new offsets.
    expect(statSync(join(dir, 'invoice-index.jsonl')).size).toBeLessThan(48 * Buffer.byteLength(JSON.stringify(shard(0, 'r00'))));
    expect((await s.residency('invoice-index')).diskOnly).toBe(8);
    const all = new Map(await s.entries<unknown>('invoice-index'));
    expect(all.get('head')).toEqual({ v: 2, shards: 8 });
    for (let i = 0; i < 8; i++) expect(all.get(`shard:${i}`)).toEqual(expected(i));
    await s.delete('invoice-index', 'shard:7');
    expect(await s.get('invoice-index', 'shard:7')).toBeUndefined();

    // After a restart, large values are found in the file as read: on disk only from the start.
    await s.close();
    const again = open();
    expect(await again.residency('invoice-index')).toMatchObject({ entries: 8, diskOnly: 7 });
    for (let i = 0; i < 7; i++) expect(await again.get('invoice-index', `shard:${i}`)).toEqual(expected(i));
    await again.set('invoice-index', 'shard:0', shard(0, 'after restart'));
    expect(await again.get('invoice-index', 'shard:0')).toEqual(shard(0, 'after restart'));
    expect(readNamespaceFile(dir, 'invoice-index')['shard:1']).toEqual(expected(1));
  });

  it('skips a line torn by a crash mid-append', async () => {
    const s = open();
    await s.set('subscriptions', 'k1', { kinds: ['bills'] });
    await s.close();
    appendFileSync(join(dir, 'subscriptions.jsonl'), '{"k":"k2","v":{"kin');
    const again = open();
    expect(await again.entries('subscriptions')).toEqual([['k1', { kinds: ['bills'] }]]);
    await again.set('subscriptions', 'k3', 1);
    expect(readNamespaceFile(dir, 'subscriptions')).toEqual({ k1: { kinds: ['bills'] }, k3: 1 });
  });

  it('reads a store written in the earlier one-object-per-namespace format and moves it to a journal', async () => {
    writeFileSync(join(dir, 'bindings.json'), JSON.stringify({ t1: { v: { orgId: '008A' } }, old: { v: 1, e: clock.now() - 1 } }));
    const s = open();
    expect(await s.entries('bindings')).toEqual([['t1', { orgId: '008A' }]]);
    await s.set('bindings', 't2', { orgId: '008B' });
    expect(existsSync(join(dir, 'bindings.json'))).toBe(false);
    expect(readNamespaceFile(dir, 'bindings')).toEqual({ t1: { orgId: '008A' }, t2: { orgId: '008B' } });
  });

  it('appends audit records as JSON lines and refuses names that are not plain', async () => {
    const s = open();
    await s.append('audit', { a: 1 });
    await s.append('audit', { a: 2 });
    expect(readFileSync(join(dir, 'audit.log'), 'utf8')).toBe('{"a":1}\n{"a":2}\n');
    // Many at once: every record on its own whole line, none lost.
    await Promise.all(Array.from({ length: 500 }, (_, i) => s.append('audit', { i, pad: 'x'.repeat(i) })));
    const lines = readFileSync(join(dir, 'audit.log'), 'utf8').trimEnd().split('\n').slice(2).map((l) => JSON.parse(l) as { i: number });
    expect(lines.map((l) => l.i).sort((a, b) => a - b)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    // The log removed or moved under a running store (log rotation): the next record starts a new file.
    rmSync(join(dir, 'audit.log'));
    await s.append('audit', { a: 3 });
    expect(readFileSync(join(dir, 'audit.log'), 'utf8')).toBe('{"a":3}\n');
    renameSync(join(dir, 'audit.log'), join(dir, 'audit.log.1'));
    await s.append('audit', { a: 4 });
    expect(readFileSync(join(dir, 'audit.log.1'), 'utf8')).toBe('{"a":3}\n');
    expect(readFileSync(join(dir, 'audit.log'), 'utf8')).toBe('{"a":4}\n');
    await expect(s.set('../etc', 'k', 1)).rejects.toThrow(/Invalid state namespace/);
    await expect(s.append('Audit.Log', {})).rejects.toThrow(/Invalid state log/);
  });
});
