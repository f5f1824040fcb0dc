// The finance cards as pure functions: list paging and totals, money in each record's currency and the person's
// locale, statuses in words, empty states, escaping, and no bank or tax numbers.
import { describe, expect, it } from 'vitest';
import type { Bill, Invoice, SpendTransaction, Vendor } from '../../src/bill/types.js';
import { normalizeNumber } from '../../src/mirror/records.js';
import { billCard, billMatchesCard, billsDueCard, billsOverdueCard } from '../../src/features/payables/cards.js';
import { dueShort, money } from '../../src/cards/format.js';
import { invoiceCard } from '../../src/features/receivables/cards.js';
import { listCard } from '../../src/cards/list.js';
import { reimbursementsCard, transactionsCard } from '../../src/features/spend/cards.js';
import { customerCard, partyMatchesCard, vendorCard } from '../../src/features/parties/cards.js';
import { billApprovalWords, billPaymentWords, invoiceStatusWords, moneyTotal, paymentStatusWords } from '../../src/cards/words.js';
import { chartsOf } from '../harness/charts.js';
import { button, buttons, expectValidCard, factsOf, tableRows, textOf } from '../harness/finance.js';
import { expectNoSensitive, poisonedCustomer, poisonedVendor } from '../harness/sensitive.js';

const FMT = { locale: 'en-US', timeZone: 'UTC' };
const NOW = Date.parse('2026-03-10T10:42:00.000Z');
const TODAY = '2026-03-10';

function bill(n: number, over: Partial<Bill> = {}): Bill {
  return {
    id: `00n01TESTBILL${String(n).padStart(7, '0')}`,
    archived: false,
    vendorId: '00901VENDOR000000001',
    vendorName: 'Acme Office Supplies',
    amount: 100 + n,
    dueAmount: 100 + n,
    paidAmount: 0,
    dueDate: `2026-03-${String(10 + (n % 7)).padStart(2, '0')}`,
    invoice: { invoiceNumber: `ACM-${1000 + n}` },
    paymentStatus: 'UNPAID',
    approvalStatus: 'UNASSIGNED',
    createdTime: '2026-01-01T00:00:00.000Z',
    updatedTime: '2026-01-01T00:00:00.000Z',
    ...over,
  };
}

const ap = { today: TODAY, fmt: FMT, asOf: NOW, currencyOf: () => 'USD' };

describe('the list card', () => {
  const rows = Array.from({ length: 34 }, (_, i) => [`Row ${i + 1}`, String(i)]);
  const spec = {
    title: 'Things',
    columns: [{ header: 'Name' }, { header: 'N' }],
    items: rows,
    row: (r: string[]) => r,
    noun: 'things',
    empty: 'No things.',
    command: 'things 5',
    asOf: NOW,
    fmt: FMT,
    summary: '34 things',
    totals: [['Total', '34 things']] as Array<[string, string]>,
  };

  it('shows 10 rows, totals over all 34, and a Show more that asks for the next page', () => {
    const { card } = listCard({ ...spec, page: 0 });
    expectValidCard(card);
    expect(tableRows(card)).toEqual(rows.slice(0, 10));
    expect(factsOf(card).Total).toBe('34 things');
    expect(textOf(card)).toContain('Showing 1–10 of 34 things');
    expect(button(card, 'Show more')?.data).toEqual({ verb: 'run', command: 'things 5', page: 1 });
    expect(button(card, 'Refresh')?.data).toEqual({ verb: 'run', command: 'things 5', page: 0, refresh: true });
    expect(
      (card.actions as Array<{ type: string; fallback?: { type: string } }>).every(
        (a) => a.type === 'Action.Execute' && a.fallback?.type === 'Action.Submit',
      ),
    ).toBe(true);
    expect(textOf(card)).toContain('As of 10:42 AM');
  });

  it('the last page has the rest and leads back to the first; a page out of range shows the nearest', () => {
    const last = listCard({ ...spec, page: 3 }).card;
    expect(tableRows(last)).toEqual(rows.slice(30));
    expect(button(last, 'Show more')).toBeUndefined();
    expect(button(last, 'Back to the first page')?.data.page).toBe(0);
    expect(tableRows(listCard({ ...spec, page: 99 }).card)).toEqual(rows.slice(30));
    expect(tableRows(listCard({ ...spec, page: Number.NaN }).card)).toEqual(rows.slice(0, 10));
    expect(tableRows(listCard({ ...spec, page: -4 }).card)).toEqual(rows.slice(0, 10));
  });

  it('an empty list says so plainly, without a table', () => {
    const { card } = listCard({ ...spec, items: [], page: 0 });
    expectValidCard(card);
    expect(tableRows(card)).toEqual([]);
    expect(textOf(card)).toContain('No things.');
    expect(buttons(card).map((b) => b.title)).toEqual(['Refresh']);
  });

  it('escapes every string it is given', () => {
    const { card } = listCard({ ...spec, title: '**Bold** [x](http://e)', items: [['_it_ <at>x</at>', '# 1']], page: 0 });
    const json = JSON.stringify(card);
    expect(json).toContain('\\\\*\\\\*Bold\\\\*\\\\*');
    expect(json).toContain('\\\\_it\\\\_');
  });

  it("the as-of time is in the bot's time zone", () => {
    expect(textOf(listCard({ ...spec, page: 0, fmt: { locale: 'en-GB', timeZone: 'Asia/Tokyo' } }).card)).toContain('As of 19:42');
  });
});

describe('bills due', () => {
  it("counts and totals every bill, overdue on a line of its own, in the bill's currency and the person's locale", () => {
    const due = Array.from({ length: 12 }, (_, i) => bill(i));
    const overdue = [bill(50, { dueDate: '2026-03-01' }), bill(51, { dueDate: '2026-02-01' })];
    const { card, summary } = billsDueCard({
      ...ap,
      fmt: { locale: 'de-DE', timeZone: 'UTC' },
      currencyOf: () => 'EUR',
      days: 7,
      due,
      overdue,
      page: 0,
      command: 'bills due 7',
    });
    expectValidCard(card);
    const sum = due.reduce((s, b) => s + (b.dueAmount ?? 0), 0);
    const eur = (n: number) => new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'EUR' }).format(n);
    expect(factsOf(card).Due).toBe(`${eur(sum)} · 12 bills`);
    expect(textOf(card)).toContain(`Overdue: 2 bills, ${eur(301)}, not counted above.`);
    expect(tableRows(card)[0]!.at(-1)).toBe(eur(100));
    // The summary is one plain line: the locale's non-breaking spaces become spaces.
    expect(summary).toBe(`12 bills due in the next 7 days, ${eur(sum)}; 2 overdue (${eur(301)}).`.replace(/\s+/g, ' '));
    expect(button(card, 'Show overdue bills')?.data.command).toBe('bills overdue');
  });

  it('never adds two currencies together', () => {
    expect(
      moneyTotal(
        [
          { amount: 100, currency: 'USD' },
          { amount: 50, currency: 'EUR' },
          { amount: 0.1, currency: 'USD' },
          { amount: 0.2, currency: 'USD' },
        ],
        'en-US',
      ),
    ).toBe('$100.30 + €50.00');
  });

  it('a total in a three-decimal currency (Kuwaiti dinar) is the sum of the rows shown, not rounded to cents', () => {
    const due = [bill(1, { amount: 1.234, dueAmount: 1.234 }), bill(2, { amount: 1.234, dueAmount: 1.234 })];
    const { card } = billsDueCard({ ...ap, currencyOf: () => 'KWD', days: 7, due, overdue: [], page: 0, command: 'bills due 7' });
    const kwd = (n: number) => money(n, 'KWD', 'en-US');
    expect(tableRows(card).map((r) => r.filter((c) => c === kwd(1.234)))).toEqual([[kwd(1.234)], [kwd(1.234)]]);
    expect(factsOf(card).Due).toBe(`${kwd(2.468)} · 2 bills`);
    // Its chart's bars carry the same figures (bill 1 is due on the 11th, bill 2 on the 12th).
    expect(
      chartsOf(card)[0]
        ?.data.map((d) => d.y)
        .filter((y) => y !== 0),
    ).toEqual([1.234, 1.234]);
    expect(
      moneyTotal(
        [
          { amount: 0.1, currency: 'USD' },
          { amount: 0.2, currency: 'USD' },
          { amount: 0.0005, currency: 'BHD' },
        ],
        'en-US',
      ),
    ).toBe(`$0.30 + ${money(0.001, 'BHD', 'en-US')}`);
  });

  it('a bill with $400 of its $1,000 scheduled counts $400 as scheduled, not the whole amount due', () => {
    const due = [
      bill(1, { amount: 1000, dueAmount: 1000, scheduledAmount: 400, paymentStatus: 'SCHEDULED' }),
      bill(2, { amount: 250, dueAmount: 250, scheduledAmount: 250, paymentStatus: 'SCHEDULED' }),
      // As BILL may send it: scheduled, without the figure.
      bill(3, { amount: 30, dueAmount: 30, paymentStatus: 'SCHEDULED' }),
      bill(4, { amount: 70, dueAmount: 70 }),
    ];
    const { card } = billsDueCard({ ...ap, days: 7, due, overdue: [], page: 0, command: 'bills due 7' });
    expect(factsOf(card).Due).toBe('$1,350.00 · 4 bills');
    expect(factsOf(card)['Of which scheduled']).toBe('$680.00 · 3 bills');
  });

  it('overdue bills: the oldest one day late reads "1 day late", and a due date BILL sends with a time is still days, never NaN', () => {
    const one = billsOverdueCard({ ...ap, overdue: [bill(1, { dueDate: '2026-03-09' })], page: 0, command: 'bills overdue' });
    expect(factsOf(one.card).Oldest).toBe('1 day late — Acme Office Supplies');
    expect(one.summary).toBe('1 overdue bill, $101.00; the oldest is 1 day late.');
    const timed = billsOverdueCard({
      ...ap,
      overdue: [bill(2, { dueDate: '2026-03-01T00:00:00.000+0000' })],
      page: 0,
      command: 'bills overdue',
    });
    expect(factsOf(timed.card).Oldest).toBe('9 days late — Acme Office Supplies');
    expect(timed.summary).toBe('1 overdue bill, $102.00; the oldest is 9 days late.');
    expect(tableRows(timed.card)[0]).toContain('9');
  });

  it('a bill re-entered by its vendor under the same number, the first archived: not "different vendors", and the archived one is not Unpaid', () => {
    const bills = [bill(1, { archived: true }), bill(2, { invoice: { invoiceNumber: 'ACM-1001' } })];
    const { card, summary } = billMatchesCard({ ...ap, typed: 'ACM-1001', bills, page: 0, command: 'bill ACM-1001' });
    expect(textOf(card)).not.toContain('Different vendors');
    expect(tableRows(card).map((r) => r.at(-2))).toEqual(['Archived', 'Unpaid']);
    expect(summary).toBe('2 bills have invoice number ACM-1001; pick one.');
    const two = billMatchesCard({
      ...ap,
      typed: 'X-1',
      bills: [bill(3), bill(4, { vendorId: '00901VENDOR000000002', vendorName: 'Zeta' })],
      page: 0,
      command: 'bill X-1',
    });
    expect(textOf(two.card)).toContain('Different vendors used the same number');
  });

  it('an empty week says "No bills due in the next 7 days"', () => {
    const { card, summary } = billsDueCard({ ...ap, days: 7, due: [], overdue: [], page: 0, command: 'bills due 7' });
    expect(textOf(card)).toContain('No bills due in the next 7 days.');
    expect(textOf(card)).toContain('Nothing overdue.');
    expect(summary).toBe('No bills due in the next 7 days.');
  });

  it('says when a bill is due in words', () => {
    expect(
      [0, 1, 3, -1, -5].map((d) => dueShort(new Date(Date.parse(`${TODAY}T00:00:00Z`) + d * 86_400_000).toISOString().slice(0, 10), TODAY)),
    ).toEqual(['today', 'tomorrow', 'in 3 days', '1 day late', '5 days late']);
    const empty = (days: number) => billsDueCard({ ...ap, days, due: [], overdue: [], page: 0, command: `bills due ${days}` }).summary;
    expect([0, 1, 7].map(empty)).toEqual(['No bills due today.', 'No bills due today or tomorrow.', 'No bills due in the next 7 days.']);
  });
});

describe('statuses in words', () => {
  it("payments: BILL's singleStatus lifecycle", () => {
    expect(
      [
        'SCHEDULED',
        'FUNDING_STARTED',
        'PROCESSED',
        'SENT',
        'DELIVERED',
        'CLEARED',
        'CANCELED',
        'VOIDED',
        'FUNDING_FAILED_ACTION_NEEDED',
        'DISBURSEMENT_FAILED_VENDOR_BANK_REJECTED',
        'SOMETHING_NEW',
      ].map((s) => paymentStatusWords(s).words),
    ).toEqual([
      'Scheduled',
      'Collecting funds',
      'Processed',
      'Sent to the vendor',
      'Delivered',
      'Cleared',
      'Canceled',
      'Voided',
      'Funding failed — action needed',
      "Rejected by the vendor's bank",
      'Something new',
    ]);
    expect(paymentStatusWords('FUNDING_FAILED_ACTION_NEEDED').tone).toBe('Attention');
  });

  it('invoices: Open, Partially paid, Paid, Overdue by N days, Archived', () => {
    const inv = (over: Partial<Invoice>) => ({
      status: 'OPEN',
      archived: false,
      dueAmount: 100,
      totalAmount: 100,
      dueDate: '2026-03-20',
      ...over,
    });
    expect(invoiceStatusWords(inv({}), TODAY).words).toBe('Open');
    expect(invoiceStatusWords(inv({ status: 'PARTIAL_PAYMENT', dueAmount: 40 }), TODAY).words).toBe('Partially paid');
    expect(invoiceStatusWords(inv({ status: 'PAID', dueAmount: 0 }), TODAY).words).toBe('Paid');
    expect(invoiceStatusWords(inv({ dueDate: '2026-03-09' }), TODAY).words).toBe('Overdue by 1 day');
    expect(invoiceStatusWords(inv({ dueDate: '2026-02-08', status: 'PARTIAL_PAYMENT', dueAmount: 10 }), TODAY).words).toBe(
      'Overdue by 30 days (partially paid)',
    );
    expect(invoiceStatusWords(inv({ archived: true, dueDate: '2026-01-01' }), TODAY).words).toBe('Archived');
  });

  it('an invoice whose amount due a $100 credit lowered, with no payment, is Open, not Partially paid', () => {
    const inv = { status: 'OPEN', archived: false, totalAmount: 1000, dueAmount: 900, creditAmount: 100, dueDate: '2026-03-20' };
    expect(invoiceStatusWords(inv, TODAY).words).toBe('Open');
    expect(invoiceStatusWords({ ...inv, dueAmount: 850 }, TODAY).words).toBe('Partially paid');
    expect(invoiceStatusWords({ ...inv, dueDate: '2026-03-01' }, TODAY).words).toBe('Overdue by 9 days');
  });

  it('bills: payment and approval', () => {
    expect(billPaymentWords({ paymentStatus: 'UNPAID', paidAmount: 10, dueAmount: 90 })).toBe('Partly paid');
    expect(billPaymentWords({ paymentStatus: 'SCHEDULED' })).toBe('Scheduled');
    expect(
      billApprovalWords({
        approvalStatus: 'ASSIGNED',
        approvers: [
          { userId: 'a', status: 'APPROVED', approverOrder: 1 },
          { userId: 'b', status: 'WAITING', approverOrder: 2 },
        ],
      }),
    ).toBe('Awaiting approval (1 of 2 approved)');
    expect(billApprovalWords({ approvalStatus: 'UNASSIGNED' })).toBe('No approvers');
  });
});

describe('one record', () => {
  it("a bill card shows amounts in the vendor's currency, dates, statuses and line items, and only a short id", () => {
    const b = {
      ...bill(1, {
        paidAmount: 20,
        dueAmount: 81,
        scheduledAmount: 0,
        dueDate: '2026-03-01',
        approvalStatus: 'ASSIGNED',
        approvers: [{ userId: '00601USERAAAAAAAAAAA', status: 'WAITING', approverOrder: 1 }],
      }),
      billLineItems: [{ id: 'bli1', amount: 101, description: 'Paper *and* toner' }],
    } as Bill;
    const { card, summary } = billCard({ ...ap, currencyOf: () => 'GBP', bill: b, command: 'bill ACM-1001' });
    expectValidCard(card);
    const f = factsOf(card);
    expect(f.Amount).toBe('£101.00');
    expect(f.Due).toBe('£81.00');
    expect(f['Due date']).toBe('Mar 1, 2026 (overdue by 9 days)');
    expect(f.Approval).toBe('Awaiting approval (0 of 1 approved)');
    expect(f['Paper *and* toner']).toBe('£101.00');
    expect(JSON.stringify(card)).not.toContain(b.id);
    expect(summary).toBe('Bill ACM-1001 from Acme Office Supplies: £81.00 due, partly paid, overdue by 9 days.');
    expect(button(card, 'This vendor')?.data.command).toBe('vendor Acme Office Supplies');
  });

  it('an approval made at 10 pm in New York (03:00 UTC the next day) is dated the day it was made there, in BOT_TIMEZONE', () => {
    const b = bill(1, {
      approvalStatus: 'ASSIGNED',
      approvers: [
        { userId: '00601USERAAAAAAAAAAA', status: 'APPROVED', approverOrder: 1, statusChangedTime: '2026-03-09T03:00:00.000+00:00' },
        { userId: '00601USERBBBBBBBBBBB', status: 'APPROVED', approverOrder: 2, statusChangedTime: 'later' },
      ],
    });
    const { card } = billCard({ ...ap, fmt: { locale: 'en-US', timeZone: 'America/New_York' }, bill: b, command: 'bill ACM-1001' });
    expect(factsOf(card)['Approver 1']).toBe('Approved (Mar 8, 2026) · user …AAAA');
    expect(factsOf(card)['Approver 2']).toBe('Approved · user …BBBB');
  });

  it("a bill's This vendor and an invoice's This customer open a party whose name cannot be typed back, by its BILL id", () => {
    const quoted = bill(2, { vendorName: 'Qwerty "Best" Pizza' });
    const { card: billShown } = billCard({ ...ap, bill: quoted, command: 'bill ACM-1002' });
    expect(button(billShown, 'This vendor')?.data.command).toBe('vendor 00901VENDOR000000001');
    const inv = {
      id: '00e01INVOICE00000002',
      archived: false,
      invoiceNumber: '1043',
      invoiceDate: '2026-02-01',
      dueDate: '2026-03-03',
      customerId: '0cu01CUSTOMER0000001',
      totalAmount: 10,
      dueAmount: 10,
      status: 'OPEN',
      createdTime: '',
      updatedTime: '',
    } as Invoice;
    const customerOf = () => ({ name: 'Back\\slash Ltd', currency: 'USD' });
    const { card: invoiceShown } = invoiceCard({ today: TODAY, fmt: FMT, asOf: NOW, customerOf, invoice: inv, command: 'invoice 1043' });
    expect(button(invoiceShown, 'This customer')?.data.command).toBe('customer 0cu01CUSTOMER0000001');
  });

  it('an invoice card says its status in words and lists payments received', () => {
    const inv: Invoice = {
      id: '00e01INVOICE00000001',
      archived: false,
      invoiceNumber: '1042',
      invoiceDate: '2026-02-01',
      dueDate: '2026-03-03',
      customerId: '0cu01C',
      totalAmount: 1000,
      dueAmount: 400,
      status: 'PARTIAL_PAYMENT',
      payments: [{ id: '0rp1', amount: 600, status: 'PAID', date: '2026-02-20' }],
      createdTime: '',
      updatedTime: '',
    };
    const { card } = invoiceCard({
      today: TODAY,
      fmt: FMT,
      asOf: NOW,
      customerOf: () => ({ name: 'Contoso Ltd', currency: 'USD' }),
      invoice: inv,
      command: 'invoice 1042',
    });
    expectValidCard(card);
    expect(textOf(card)).toContain('Overdue by 7 days (partially paid)');
    expect(textOf(card)).toContain('Payments received: $600.00');
    expect(factsOf(card)['Feb 20, 2026']).toBe('$600.00 · Paid');
  });
});

describe('vendors and customers', () => {
  it('never show bank account or tax id numbers, whichever card they are on', () => {
    const vendor = poisonedVendor() as unknown as Vendor;
    const customer = poisonedCustomer();
    const opts = { today: TODAY, fmt: FMT, asOf: NOW, page: 0, command: 'vendor Acme' };
    const cards = [
      vendorCard(vendor, [bill(1, { vendorId: vendor.id })], { ...opts, others: 1, typed: 'Acme' }).card,
      partyMatchesCard({ ...opts, kind: 'vendor', typed: 'A', matches: [{ party: vendor, open: 1, openAmount: 10 }], more: false }).card,
      customerCard(customer, [], { ...opts, others: 0, typed: 'Globex' }).card,
      partyMatchesCard({
        ...opts,
        kind: 'customer',
        typed: 'G',
        matches: [{ party: customer, open: 0, openAmount: 0 }],
        more: true,
      }).card,
      billCard({ ...ap, bill: bill(1, { vendorId: vendor.id }), command: 'bill ACM-1001' }).card,
    ];
    for (const card of cards) {
      expectValidCard(card);
      expectNoSensitive(card, vendor, customer);
    }
  });

  it('several matches offer a button per vendor: by name, or by BILL id for a name that cannot be typed back', () => {
    const vendors = ['Summit Print Inc.', 'Summit Cloud LLC', 'Summit "Quoted" Co'].map((name, i) => ({
      ...(poisonedVendor() as unknown as Vendor),
      id: `00901V${i}`,
      name,
    }));
    const { card } = partyMatchesCard({
      fmt: FMT,
      asOf: NOW,
      page: 0,
      command: 'vendor Sum',
      kind: 'vendor',
      typed: 'Sum',
      matches: vendors.map((v) => ({ party: v, open: 0, openAmount: 0 })),
      more: false,
    });
    expect(buttons(card).map((b) => b.data.command)).toEqual([
      'vendor Summit Print Inc.',
      'vendor Summit Cloud LLC',
      'vendor 00901V2',
      'vendor Sum',
    ]);
    expect(textOf(card)).toContain('3 vendors start with "Sum"');
  });
});

describe('invoice numbers', () => {
  it('are matched the way people type them', () => {
    expect(normalizeNumber(' #inv-1042 ')).toBe('INV-1042');
    expect(normalizeNumber('INV  1042')).toBe('INV 1042');
    expect(normalizeNumber('ｉｎｖ１０４２')).toBe('INV1042');
  });
});

describe('spend', () => {
  const nyc = { locale: 'en-US', timeZone: 'America/New_York' };
  it('a card transaction or reimbursement BILL sent without a time (or with one that is no time) is undated, not "Dec 31, 1969"', () => {
    const tx = (id: string, occurredTime: unknown) =>
      ({ id, transactionType: 'CLEAR', amount: 10, merchantName: 'Cafe', occurredTime }) as unknown as SpendTransaction;
    const t = transactionsCard({
      transactions: [tx('t1', undefined), tx('t2', 'yesterday'), tx('t3', '2026-03-10T02:00:00Z')],
      page: 0,
      command: 'spend transactions',
      asOf: NOW,
      fmt: nyc,
    });
    expect(
      tableRows(t.card)
        .map((r) => r[0])
        .sort(),
    ).toEqual(['Mar 9, 2026', '—', '—']);
    const r = reimbursementsCard({
      reimbursements: [{ id: 'r1', amount: 5, status: 'APPROVED', submittedTime: 'soon' }],
      page: 0,
      command: 'spend reimbursements',
      asOf: NOW,
      fmt: nyc,
    });
    expect(tableRows(r.card).map((row) => row[0])).toEqual(['—']);
  });
});
