// A walk of BILL's list that fails answers none of the stale marks made before it: the next answer still reads BILL first.
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
let client: TestClient;

beforeAll(async () => {
  sb = await startTestSandbox();
  dir = mkdtempSync(join(tmpdir(), 'billbridge-mirror-failed-walk-'));
  store = new SqliteStateStore(dir, systemClock);
  client = billClient(sb);
});
afterAll(async () => {
  await client.close();
  await store.close();
  await sb.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('bills marked stale, then the build of every bill fails: the open bills are refreshed before the next answer', async () => {
  const org = sb.credentials.orgId;
  const mirror = new Mirror({ bill: client.gateway, state: store, clock: systemClock, log: client.log });
  const fresh = { maxAgeMs: 3_600_000, waitMs: 20_000, priority: 'interactive' as const, scope: 'open' as const };
  const statusOf = (id: string) =>
    mirror
      .rows(org, 'bill', fresh)
      .then((r) => ('rows' in r ? (r.rows.find((x) => x.id === id)?.paymentStatus ?? 'not listed') : 'building'));
  const bill = sb.sandbox.org.bills.all().find((x) => x.paymentStatus === 'UNPAID' && !x.archived)!;
  expect(await statusOf(bill.id)).toBe('UNPAID');

  expect((await sb.control('POST', `/bills/${bill.id}/pay`, {})).status).toBe(200);
  // Every bill of the org may have changed (a mark without an id).
  await mirror.markStale(org, 'bill');
  // A lookup by number builds every bill; BILL refuses the first page of that build.
  await sb.fault({ kind: 'noCodeError', method: 'GET', path: '/v3/bills' });
  await expect(mirror.lookup(org, 'bill', 'NO-SUCH-NUMBER', { waitMs: 20_000 })).rejects.toThrow();

  expect(await statusOf(bill.id)).toBe('not listed');
});
