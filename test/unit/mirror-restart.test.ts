// The mirror is kept in the state store: a process that starts from it must not trust records a webhook said had
// changed before the restart (the stale marks of the process that got the webhook were in its memory only).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { Mirror } from '../../src/mirror/mirror.js';
import { billClient, startTestSandbox, type TestClient, type TestSandbox } from '../harness/sandbox.js';

let sb: TestSandbox;
let dir: string;
let store: SqliteStateStore;
const clients: TestClient[] = [];

function mirror(): Mirror {
  const client = billClient(sb);
  clients.push(client);
  return new Mirror({ bill: client.gateway, state: store, clock: systemClock, log: client.log });
}

beforeAll(async () => {
  sb = await startTestSandbox();
  dir = mkdtempSync(join(tmpdir(), 'billbridge-mirror-restart-'));
  store = new SqliteStateStore(dir, systemClock);
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await store.close();
  await sb.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('a bill paid and marked stale by its webhook just before a restart is not shown unpaid after it', async () => {
  const org = sb.credentials.orgId;
  const fresh = { maxAgeMs: 3_600_000, waitMs: 20_000, priority: 'interactive' as const, scope: 'open' as const };
  const statusOf = (m: Mirror, id: string) =>
    m.rows(org, 'bill', fresh).then((r) => ('rows' in r ? (r.rows.find((x) => x.id === id)?.paymentStatus ?? 'not listed') : 'building'));
  const before = mirror();
  const bill = sb.sandbox.org.bills.all().find((x) => x.paymentStatus === 'UNPAID' && !x.archived)!;
  expect(await statusOf(before, bill.id)).toBe('UNPAID');
  await before.flush();

  expect((await sb.control('POST', `/bills/${bill.id}/pay`, {})).status).toBe(200);
  await before.markStale(org, 'bill', bill.id);

  // The process restarts before anyone asks: the next one starts from the stored mirror.
  expect(await statusOf(mirror(), bill.id)).toBe('not listed');
});
