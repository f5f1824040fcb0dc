// Walking BILL lists over HTTP: every row exactly once, across empty pages, page caps and rows added mid-walk.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BillFilter } from '../../src/bill/filters.js';
import { addDays } from '../../src/sandbox/model.js';
import { billClient, startTestSandbox, type TestClient, type TestSandbox } from '../harness/sandbox.js';

let sb: TestSandbox;
let c: TestClient;
const org = () => c.gateway.org(sb.credentials.orgId);

beforeAll(async () => {
  sb = await startTestSandbox({ invoices: 1000, bills: 240 });
  c = billClient(sb);
});
afterAll(async () => {
  await c.close();
  await sb.stop();
});

function expectEachOnce(ids: string[], expected: string[]): void {
  expect(ids).toHaveLength(expected.length);
  expect(new Set(ids).size).toBe(ids.length);
  expect([...ids].sort()).toEqual([...expected].sort());
}

describe('AP/AR paging with page= cursors', () => {
  const seeded = () => sb.sandbox.org.invoices.all().map((i) => i.id);

  it('returns every one of 1,000 seeded invoices exactly once, 100 to a page', async () => {
    const seededIds = seeded();
    expect(seededIds).toHaveLength(1000);
    const result = await org().invoices.list({ pageSize: 100, maxPages: 20 }).all();
    expect(result.truncated).toBe(false);
    expect(result.pages).toBe(10);
    expectEachOnce(
      result.items.map((i) => i.id),
      seededIds,
    );
  });

  it('returns them exactly once with an odd page size too', async () => {
    const result = await org().invoices.list({ pageSize: 37, maxPages: 40 }).all();
    expect(result.pages).toBe(28);
    expectEachOnce(
      result.items.map((i) => i.id),
      seeded(),
    );
  });

  it('keeps going past empty pages that still carry a cursor', async () => {
    await sb.fault({ kind: 'emptyPage', path: '/v3/invoices', count: 2 });
    const result = await org().invoices.list({ pageSize: 100, maxPages: 20 }).all();
    expect(result.pages).toBe(12);
    expectEachOnce(
      result.items.map((i) => i.id),
      seeded(),
    );
  });

  it('stops at the page cap and says the list was cut short', async () => {
    const first = await org().invoices.list({ pageSize: 100, maxPages: 3 }).all();
    expect(first.items).toHaveLength(300);
    expect(new Set(first.items.map((i) => i.id)).size).toBe(300);
    expect(first).toMatchObject({ truncated: true, pages: 3 });
  });

  it('rows created while a walk is under way do not repeat or hide the others', async () => {
    const before = seeded();
    const pages = org().invoices.list({ pageSize: 100, maxPages: 20 }).pages();
    const ids: string[] = [];
    let n = 0;
    for await (const page of pages) {
      ids.push(...page.results.map((i) => i.id));
      if (n++ === 2) expect((await sb.control('POST', '/invoices', { totalAmount: 500 })).status).toBe(201);
    }
    const original = ids.filter((id) => before.includes(id));
    expectEachOnce(original, before);
  });

  it('lists payments in the order asked for', async () => {
    const { items } = await org()
      .payments.list({ sort: [{ field: 'processDate', order: 'asc' }], maxPages: 10 })
      .all();
    expect(items.length).toBe(sb.sandbox.org.payments.size);
    const dates = items.map((p) => p.processDate);
    expect(dates).toEqual([...dates].sort());
  });

  it('finds the unpaid bills due in the next seven days with the typed filters', async () => {
    const today = sb.sandbox.model.today();
    const end = addDays(today, 6);
    const { items } = await org()
      .bills.list({
        filter: new BillFilter().add('paymentStatus', 'eq', 'UNPAID'),
        archived: false,
        dueDate: { gte: today, lte: end },
        sort: [{ field: 'dueDate', order: 'asc' }],
      })
      .all();
    const expected = sb.sandbox.org.bills
      .all()
      .filter((b) => b.paymentStatus === 'UNPAID' && !b.archived && b.dueDate >= today && b.dueDate <= end);
    expect(expected.length).toBeGreaterThan(0);
    expectEachOnce(
      items.map((b) => b.id),
      expected.map((b) => b.id),
    );
    expect(items.map((b) => b.dueDate)).toEqual(items.map((b) => b.dueDate).sort());
  });
});

describe('Spend & Expense paging with nextPage= cursors', () => {
  it('walks every card transaction, 50 to a page, with receipts', async () => {
    const seeded = sb.sandbox.org.spend.transactions.all();
    const result = await c.gateway.spend(sb.credentials.orgId)!.transactions.list({ pageSize: 50, maxPages: 10 }).all();
    expect(result.pages).toBe(Math.ceil(seeded.length / 50));
    expectEachOnce(
      result.items.map((t) => t.id),
      seeded.map((t) => t.id),
    );
    const missing = result.items.filter((t) => t.receiptRequired && t.receiptStatus === 'MISSING');
    expect(missing.length).toBeGreaterThan(0);
    expect(result.items.every((t) => Array.isArray(t.receipts))).toBe(true);
    const times = result.items.map((t) => t.occurredTime);
    expect(times).toEqual([...times].sort().reverse());
  });

  it('refuses a transactions page above 50 before calling', () => {
    expect(() => c.gateway.spend(sb.credentials.orgId)!.transactions.list({ pageSize: 51 })).toThrow(RangeError);
  });

  it('lists reimbursements and the budgets that are not retired, and gets one by its base64 id', async () => {
    const spend = c.gateway.spend(sb.credentials.orgId)!;
    const reimbursements = await spend.reimbursements.list({ pageSize: 5 }).all();
    expect(reimbursements.items).toHaveLength(sb.sandbox.org.spend.reimbursements.size);
    const live = await spend.budgets.list({ retired: false }).all();
    expect(live.items.length).toBe(sb.sandbox.org.spend.budgets.all().filter((b) => !b.retired).length);
    const one = await spend.budgets.get(live.items[0]!.id);
    expect(one.name).toBe(live.items[0]!.name);
  });
});
