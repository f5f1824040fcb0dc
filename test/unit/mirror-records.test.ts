// What the org mirror keeps of each record is enough for every card: for every invoice, bill, vendor and customer of a
// seeded organisation, the card drawn from the record as kept (and stored) is exactly the card drawn from what BILL sent.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { isOpenBill, keepBill, keepCustomer, keepInvoice, keepVendor } from '../../src/mirror/records.js';
import type { Bill, Invoice, Vendor } from '../../src/bill/types.js';
import { billCard, billsDueCard, billsOverdueCard } from '../../src/features/payables/cards.js';
import { invoiceCard, invoicesOverdueCard } from '../../src/features/receivables/cards.js';
import { customerCard, vendorCard } from '../../src/features/parties/cards.js';
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

/** Round trip through JSON too: records are stored and read back. */
const stored = <T>(row: T): T => JSON.parse(JSON.stringify(row)) as T;
const withoutLines = ({ billLineItems: _dropped, ...rest }: Bill): Bill => rest;

const ap = { today: TODAY, fmt: FMT, asOf: NOW, currencyOf: () => 'USD' };
const ar = { today: TODAY, fmt: FMT, asOf: NOW, customerOf: () => ({ name: 'Contoso Ltd', currency: 'EUR' }) };

function manyLines(b: Bill, n: number): Bill {
  return {
    ...b,
    billLineItems: Array.from({ length: n }, (_, i) => ({ id: `bli${i}`, amount: 10.1 + i, description: i % 3 ? `Line ${i}` : undefined })),
  };
}

describe('the records the mirror keeps show what BILL sent', () => {
  it('every invoice card drawn from the kept invoice is the card drawn from the invoice (status, payments received, lines)', () => {
    expect(invoices.some((i) => (i.payments ?? []).length > 0)).toBe(true);
    const long: Invoice = {
      ...invoices[0]!,
      invoiceLineItems: Array.from({ length: 27 }, (_, i) => ({ id: `ili${i}`, description: i % 2 ? `Item ${i}` : undefined })),
    };
    for (const inv of [...invoices, long]) {
      const kept = stored(keepInvoice(inv)!);
      expect(invoiceCard({ ...ar, invoice: kept, command: 'invoice x' })).toEqual(
        invoiceCard({ ...ar, invoice: inv, command: 'invoice x' }),
      );
    }
  });

  it('every bill card drawn from the kept bill is the card drawn from the bill (amounts, approvers, line items)', () => {
    expect(bills.some((b) => (b.approvers ?? []).length > 0)).toBe(true);
    for (const b of [...bills, manyLines(bills[0]!, 6), manyLines(bills[1]!, 33)]) {
      const kept = stored(keepBill(b)!);
      expect(billCard({ ...ap, bill: kept, command: 'bill x' })).toEqual(billCard({ ...ap, bill: b, command: 'bill x' }));
    }
  });

  it('the AP list cards from kept bills equal those from the bills BILL lists (same rows, totals, statuses, paging)', () => {
    const open = bills.filter((b) => !b.archived && b.paymentStatus !== 'PAID');
    const lines = bills.map((b) => stored(keepBill(b)!)).filter(isOpenBill);
    expect(lines.map((r) => r.id).sort()).toEqual(open.map((b) => b.id).sort());
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
      vendorCard(stored(keepVendor(vendor)!), mine(lines), {
        today: TODAY,
        fmt: FMT,
        asOf: NOW,
        page: 0,
        command: 'vendor x',
        others: 0,
        typed: 'x',
      }),
    ).toEqual(vendorCard(vendor, mine(open), { today: TODAY, fmt: FMT, asOf: NOW, page: 0, command: 'vendor x', others: 0, typed: 'x' }));
  });

  it("the AR list cards from kept invoices equal those from the invoices (aging, a customer's open invoices)", () => {
    const rows = invoices.map((i) => stored(keepInvoice(i)!));
    expect(invoicesOverdueCard({ ...ar, invoices: rows, page: 0, command: 'invoices overdue' })).toEqual(
      invoicesOverdueCard({ ...ar, invoices, page: 0, command: 'invoices overdue' }),
    );
    const customer = org.customers.get(invoices[0]!.customerId)!;
    const owed = (i: Invoice) => i.customerId === customer.id && !i.archived && i.status !== 'PAID' && i.dueAmount > 0;
    expect(
      customerCard(stored(keepCustomer(customer)!), rows.filter(owed), {
        today: TODAY,
        fmt: FMT,
        asOf: NOW,
        page: 0,
        command: 'customer x',
        others: 0,
        typed: 'x',
      }),
    ).toEqual(
      customerCard(customer, invoices.filter(owed), {
        today: TODAY,
        fmt: FMT,
        asOf: NOW,
        page: 0,
        command: 'customer x',
        others: 0,
        typed: 'x',
      }),
    );
  });

  it('a record BILL sent without optional amounts stays without them (a bill with no dueAmount counts its whole amount as due)', () => {
    const { dueAmount: _d, paidAmount: _p, scheduledAmount: _s, ...bare } = bills.find((b) => b.paymentStatus === 'UNPAID')!;
    const kept = stored(keepBill(bare as Bill)!);
    expect(kept.dueAmount).toBeUndefined();
    expect(billCard({ ...ap, bill: kept, command: 'bill x' })).toEqual(billCard({ ...ap, bill: bare, command: 'bill x' }));
    expect(keepBill(undefined as unknown as Bill)).toBeUndefined();
    expect(keepInvoice({ invoiceNumber: '1' } as unknown as Invoice)).toBeUndefined();
    expect(keepVendor({ name: 'no id' } as unknown as Vendor)).toBeUndefined();
  });
});
