// What the org replicas keep of each record is enough for every card: for every invoice and bill of a seeded
// organisation, the card drawn from its replica row is exactly the card drawn from the record BILL sent.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { billOf, billRow, invoiceOf, invoiceRow, isOpenBill } from '../../src/bill/invoiceIndex.js';
import type { Bill, Invoice } from '../../src/bill/types.js';
import { billCard, billsDueCard, billsOverdueCard } from '../../src/bot/cards/bills.js';
import { invoiceCard, invoicesOverdueCard } from '../../src/bot/cards/invoices.js';
import { customerCard, vendorCard } from '../../src/bot/cards/parties.js';
import { SandboxModel } from '../../src/sandbox/index.js';
import { seedDemoOrg } from '../../src/sandbox/seed.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
const TODAY = '2026-03-10';
const FMT = { locale: 'en-US', timeZone: 'UTC' };

const model = new SandboxModel(new ManualClock(NOW));
seedDemoOrg(model, { bills: 400, invoices: 400 });
const org = [...model.orgs.values()][0]!;
const bills = org.bills.all();
const invoices = org.invoices.all();

/** Round trip through JSON too: rows are stored and read back. */
const stored = <T>(row: T): T => JSON.parse(JSON.stringify(row)) as T;
const withoutLines = ({ billLineItems: _dropped, ...rest }: Bill): Bill => rest;

const ap = { today: TODAY, fmt: FMT, asOf: NOW, currencyOf: () => 'USD', vendorNameOf: () => undefined };
const ar = { today: TODAY, fmt: FMT, asOf: NOW, customerOf: () => ({ name: 'Contoso Ltd', currency: 'EUR' }) };

function manyLines(b: Bill, n: number): Bill {
  return {
    ...b,
    billLineItems: Array.from({ length: n }, (_, i) => ({ id: `bli${i}`, amount: 10.1 + i, description: i % 3 ? `Line ${i}` : undefined })),
  };
}

describe('replica rows keep what the cards show', () => {
  it('every invoice card drawn from its row is the card drawn from the invoice (status, payments received, lines)', () => {
    expect(invoices.some((i) => (i.payments ?? []).length > 0)).toBe(true);
    const long: Invoice = {
      ...invoices[0]!,
      invoiceLineItems: Array.from({ length: 27 }, (_, i) => ({ id: `ili${i}`, description: i % 2 ? `Item ${i}` : undefined })),
    };
    for (const inv of [...invoices, long]) {
      const row = stored(invoiceRow(inv)!);
      expect(row.f).toBe(1);
      expect(invoiceCard({ ...ar, invoice: invoiceOf(row), command: 'invoice x' })).toEqual(
        invoiceCard({ ...ar, invoice: inv, command: 'invoice x' }),
      );
    }
  });

  it('every bill card drawn from its row is the card drawn from the bill (amounts, approvers, line items, even past the lines kept)', () => {
    expect(bills.some((b) => (b.approvers ?? []).length > 0)).toBe(true);
    for (const b of [...bills, manyLines(bills[0]!, 6), manyLines(bills[1]!, 33)]) {
      const row = stored(billRow(b)!);
      expect(billCard({ ...ap, bill: billOf(row), command: 'bill x' })).toEqual(billCard({ ...ap, bill: b, command: 'bill x' }));
    }
  });

  it('the AP list cards from rows equal those from the bills BILL lists (same rows, totals, statuses, paging)', () => {
    const open = bills.filter((b) => !b.archived && b.paymentStatus !== 'PAID');
    const rows = bills.map((b) => stored(billRow(b)!)).filter(isOpenBill);
    expect(rows.map((r) => r.id).sort()).toEqual(open.map((b) => b.id).sort());
    const lines = rows.map((r) => billOf(r, { lineItems: false }));
    const due = (list: Bill[]) => list.filter((b) => b.dueDate >= TODAY && b.dueDate <= '2026-04-09');
    const late = (list: Bill[]) => list.filter((b) => b.dueDate < TODAY);
    for (const page of [0, 1, 2]) {
      expect(billsDueCard({ ...ap, days: 30, due: due(lines), overdue: late(lines), page, command: 'bills due 30' })).toEqual(
        billsDueCard({
          ...ap,
          days: 30,
          due: due(open.map(withoutLines)),
          overdue: late(open.map(withoutLines)),
          page,
          command: 'bills due 30',
        }),
      );
      expect(billsOverdueCard({ ...ap, overdue: late(lines), page, command: 'bills overdue' })).toEqual(
        billsOverdueCard({ ...ap, overdue: late(open.map(withoutLines)), page, command: 'bills overdue' }),
      );
    }
    const vendor = org.vendors.get(open[0]!.vendorId)!;
    const mine = (list: Bill[]) => list.filter((b) => b.vendorId === vendor.id);
    expect(
      vendorCard({
        today: TODAY,
        fmt: FMT,
        asOf: NOW,
        page: 0,
        command: 'vendor x',
        vendor,
        openBills: mine(lines),
        others: 0,
        typed: 'x',
      }),
    ).toEqual(
      vendorCard({ today: TODAY, fmt: FMT, asOf: NOW, page: 0, command: 'vendor x', vendor, openBills: mine(open), others: 0, typed: 'x' }),
    );
  });

  it("the AR list cards from rows equal those from the invoices (aging, a customer's open invoices)", () => {
    const rows = invoices.map((i) => stored(invoiceRow(i)!));
    expect(invoicesOverdueCard({ ...ar, invoices: rows, page: 0, command: 'invoices overdue' })).toEqual(
      invoicesOverdueCard({ ...ar, invoices, page: 0, command: 'invoices overdue' }),
    );
    const customer = org.customers.get(invoices[0]!.customerId)!;
    const owed = (i: Invoice) => i.customerId === customer.id && !i.archived && i.status !== 'PAID' && i.dueAmount > 0;
    expect(
      customerCard({
        today: TODAY,
        fmt: FMT,
        asOf: NOW,
        page: 0,
        command: 'customer x',
        customer,
        openInvoices: rows.map(invoiceOf).filter(owed),
        others: 0,
        typed: 'x',
      }),
    ).toEqual(
      customerCard({
        today: TODAY,
        fmt: FMT,
        asOf: NOW,
        page: 0,
        command: 'customer x',
        customer,
        openInvoices: invoices.filter(owed),
        others: 0,
        typed: 'x',
      }),
    );
  });

  it('a record BILL sent without optional amounts stays without them (a bill with no dueAmount counts its whole amount as due)', () => {
    const { dueAmount: _d, paidAmount: _p, scheduledAmount: _s, ...bare } = bills.find((b) => b.paymentStatus === 'UNPAID')!;
    const row = stored(billRow(bare as Bill)!);
    expect(row.dueAmount).toBeUndefined();
    expect(billCard({ ...ap, bill: billOf(row), command: 'bill x' })).toEqual(billCard({ ...ap, bill: bare, command: 'bill x' }));
    expect(billRow(undefined as unknown as Bill)).toBeUndefined();
    expect(invoiceRow({ invoiceNumber: '1' } as unknown as Invoice)).toBeUndefined();
  });
});
