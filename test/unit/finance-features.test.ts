// Each finance feature's commands run with only the parts the feature declares: a mirror that holds a few records, a
// stand-in for BILL, the settings. No app, no sandbox, no HTTP.
import { describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { Answers } from '../../src/mirror/answers.js';
import type { Bill, Invoice, Payment, Vendor } from '../../src/bill/types.js';
import type { CommandContext } from '../../src/features/types.js';
import type { FinanceSettings } from '../../src/features/finance.js';
import { billsDueCommand, billCommand, payablesCommands, type PayablesDeps } from '../../src/features/payables/commands.js';
import { invoiceCommand, invoicesOverdueCommand, type ReceivablesDeps } from '../../src/features/receivables/commands.js';
import { vendorCommand, type PartiesDeps } from '../../src/features/parties/commands.js';
import { paymentsCommand, type PaymentsDeps } from '../../src/features/payments/commands.js';
import { spendCommand, type SpendDeps } from '../../src/features/spend/commands.js';
import { InputError } from '../../src/errors.js';
import { expectValidCard, tableRows, textOf } from '../harness/finance.js';

const NOW = Date.parse('2026-03-10T12:00:00.000Z');
const ORG = '00801ORGUNDERTEST';
const clock = { now: () => NOW };

const settings: FinanceSettings = {
  locale: 'en-US',
  timeZone: 'UTC',
  note: undefined,
  waitMs: 1_000,
  cache: { listTtlS: 60, pushedTtlS: 600, objectTtlS: 60, namesTtlS: 3_600 },
  pushFed: () => false,
};

/** A command line as the dispatcher hands it over, in a channel bound to ORG. */
function ctx(line: string): CommandContext {
  const [name, ...args] = line.split(' ');
  const words = name === 'bills' || name === 'invoices' ? [`${name} ${args.shift()!}`, args] : [name!, args];
  return {
    input: { name: words[0] as string, args: words[1] as string[], argText: (words[1] as string[]).join(' '), page: 0 },
    scope: {
      kind: 'channel',
      tenantId: 't',
      teamId: '19:team',
      aadGroupId: undefined,
      channelId: '19:c',
      conversationId: '19:c',
      serviceUrl: 'http://x',
    },
    caller: { id: '29:a', aadObjectId: 'a', name: 'Avery' },
    orgId: ORG,
    correlationId: 'unit',
    now: new Date(NOW),
    log: pino({ level: 'silent' }),
  };
}

/** BILL must not be asked: the mirror holds the answer. */
const noBill = { org: () => expect.fail('BILL was called although the mirror holds the answer') };

const bill = (over: Partial<Bill>): Bill => ({
  id: '00n000000000001',
  archived: false,
  vendorId: 'v1',
  vendorName: 'Acme (old name)',
  amount: 100,
  dueAmount: 100,
  dueDate: '2026-03-12',
  invoice: { invoiceNumber: 'ACM-1' },
  paymentStatus: 'UNPAID',
  createdTime: '2026-03-01T00:00:00.000Z',
  updatedTime: '2026-03-01T00:00:00.000Z',
  ...over,
});

const invoice = (over: Partial<Invoice>): Invoice => ({
  id: '00e000000000001',
  archived: false,
  invoiceNumber: '1042',
  invoiceDate: '2026-01-01',
  dueDate: '2026-02-01',
  customerId: 'c1',
  totalAmount: 500,
  dueAmount: 500,
  status: 'OPEN',
  createdTime: '2026-01-01T00:00:00.000Z',
  updatedTime: '2026-01-01T00:00:00.000Z',
  ...over,
});

const names = (entries: Record<string, string>) => async () =>
  new Map(Object.entries(entries).map(([id, name]) => [id, { name, currency: 'USD' }]));

describe('payables builds only its mirror, BILL and settings', () => {
  const bills = [
    bill({ id: '00n000000000001', dueDate: '2026-03-12', amount: 100, dueAmount: 100 }),
    bill({ id: '00n000000000002', dueDate: '2026-03-01', amount: 40, dueAmount: 40, invoice: { invoiceNumber: 'ACM-2' } }),
  ];
  const deps = {
    mirror: {
      rows: async (_org: string, _kind: string, opts: { where?: (b: Bill) => boolean }) => ({
        rows: bills.filter((b) => !opts.where || opts.where(b)),
        refreshedAt: NOW,
      }),
      lookup: async (_org: string, _kind: string, number: string) => {
        const rows = bills.filter((b) => b.invoice?.invoiceNumber === number);
        return { rows, refreshedAt: NOW };
      },
      prepare: () => undefined,
      names: names({ v1: 'Acme Office Supplies' }),
      answers: new Answers(clock, 100),
      dropAnswer: () => undefined,
    },
    bill: noBill,
    settings,
  } as unknown as PayablesDeps;

  it('bills due answers from the mirror with the vendor name as it is now, and the overdue bill apart', async () => {
    const reply = await billsDueCommand.run(ctx('bills due'), deps);
    expectValidCard(reply.card);
    const card = JSON.stringify(reply.card);
    expect(card).toContain('Acme Office Supplies');
    expect(card).not.toContain('Acme (old name)');
    expect(textOf(reply.card)).toMatch(/overdue/i);
  });

  it('a bill whose BILL due date is no calendar day is in no list: never "NaN days late", never counted overdue', async () => {
    bills.push(bill({ id: '00n000000000003', dueDate: '2025-13-45', amount: 999, dueAmount: 999 }));
    try {
      for (const line of ['bills overdue', 'bills due']) {
        const command = payablesCommands.find((c) => c.name === line)!;
        const reply = await command.run(ctx(line), deps);
        expectValidCard(reply.card);
        expect(JSON.stringify(reply.card), line).not.toMatch(/NaN|999/);
      }
    } finally {
      bills.pop();
    }
  });

  it('an unpaid bill with $0 due (fully credited) is in neither bills due nor bills overdue, nor in their totals', async () => {
    bills.push(
      bill({
        id: '00n000000000004',
        dueDate: '2026-03-11',
        amount: 250,
        dueAmount: 0,
        creditAmount: 250,
        invoice: { invoiceNumber: 'CRD-0' },
      }),
      bill({
        id: '00n000000000005',
        dueDate: '2026-03-02',
        amount: 75,
        dueAmount: 0,
        creditAmount: 75,
        invoice: { invoiceNumber: 'CRD-1' },
      }),
    );
    try {
      const due = await billsDueCommand.run(ctx('bills due'), deps);
      expectValidCard(due.card);
      expect(JSON.stringify(due.card)).not.toMatch(/CRD-/);
      expect(JSON.stringify(due.card)).toContain('$100.00 · 1 bill');
      expect(textOf(due.card)).toContain('Overdue: 1 bill, $40.00, not counted above.');
      const overdue = await payablesCommands.find((c) => c.name === 'bills overdue')!.run(ctx('bills overdue'), deps);
      expectValidCard(overdue.card);
      expect(JSON.stringify(overdue.card)).not.toMatch(/CRD-/);
      expect(tableRows(overdue.card)).toHaveLength(1);
    } finally {
      bills.splice(2);
    }
  });

  it('before the mirror is built, a $0-due unpaid bill BILL returns is left out of bills due as well', async () => {
    const fromBill = [
      bills[0]!,
      bill({ id: '00n000000000006', dueDate: '2026-03-11', amount: 60, dueAmount: 0, invoice: { invoiceNumber: 'CRD-2' } }),
    ];
    const cold = {
      ...deps,
      mirror: { ...deps.mirror, rows: async () => ({ building: 0 }), answers: new Answers(clock, 100) },
      bill: { org: () => ({ bills: { list: () => ({ all: async () => ({ items: fromBill, truncated: false }) }) } }) },
    } as unknown as PayablesDeps;
    const reply = await billsDueCommand.run(ctx('bills due'), cold);
    expectValidCard(reply.card);
    expect(JSON.stringify(reply.card)).not.toContain('CRD-2');
    expect(JSON.stringify(reply.card)).toContain('$100.00 · 1 bill');
  });

  it('bill <number> finds the bill by its invoice number in the mirror', async () => {
    const reply = await billCommand.run(ctx('bill ACM-2'), deps);
    expect(JSON.stringify(reply.card)).toContain('ACM-2');
    await expect(billCommand.run(ctx('bill NOPE-9'), deps)).rejects.toThrow(InputError);
  });
});

describe('receivables builds only its mirror and settings', () => {
  const invoices = [invoice({}), invoice({ id: '00e000000000002', invoiceNumber: '1043', dueDate: '2026-04-01' })];
  const deps = {
    mirror: {
      rows: async (_org: string, _kind: string, opts: { where?: (i: Invoice) => boolean }) => ({
        rows: invoices.filter((i) => !opts.where || opts.where(i)),
        refreshedAt: NOW,
      }),
      lookup: async (_org: string, _kind: string, number: string) => {
        const rows = invoices.filter((i) => i.invoiceNumber === number);
        return { rows, refreshedAt: NOW };
      },
      names: names({ c1: 'Contoso' }),
    },
    settings,
  } as unknown as ReceivablesDeps;

  it('invoices overdue lists only what is past due, by customer', async () => {
    const reply = await invoicesOverdueCommand.run(ctx('invoices overdue'), deps);
    expectValidCard(reply.card);
    const card = JSON.stringify(reply.card);
    expect(card).toContain('Contoso');
    // 1042 (due Feb 1) is overdue; 1043 (due Apr 1) is not.
    expect(card).toContain('$500.00 · 1 invoice · 1 customer');
  });

  it('invoice <number> says so when the mirror holds no such invoice', async () => {
    await expect(invoiceCommand.run(ctx('invoice 9999'), deps)).rejects.toThrow('No invoice 9999');
  });
});

describe('parties builds only its mirror, BILL and settings', () => {
  const vendor = { id: 'v1', archived: false, name: 'Acme Office Supplies' } as Vendor;
  const deps = {
    mirror: {
      search: async () => ({ rows: [vendor], refreshedAt: NOW }),
      confirm: async (_org: string, _kind: string, records: Vendor[]) => records,
      rows: async () => ({ rows: [bill({})], refreshedAt: NOW }),
      prepare: () => undefined,
      names: names({ v1: 'Acme Office Supplies' }),
      answers: new Answers(clock, 100),
      dropAnswer: () => undefined,
    },
    bill: noBill,
    settings,
  } as unknown as PartiesDeps;

  it("a vendor's open bills and balance leave out an unpaid bill with $0 due, from the mirror and from BILL", async () => {
    const held = [
      bill({}),
      bill({ id: '00n000000000007', amount: 80, dueAmount: 0, creditAmount: 80, invoice: { invoiceNumber: 'CRD-3' } }),
    ];
    const warm = {
      ...deps,
      mirror: {
        ...deps.mirror,
        rows: async (_o: string, _k: string, o: { where: (b: Bill) => boolean }) => ({ rows: held.filter(o.where), refreshedAt: NOW }),
      },
    } as unknown as PartiesDeps;
    const cold = {
      ...deps,
      mirror: { ...deps.mirror, rows: async () => ({ building: 0 }), answers: new Answers(clock, 100) },
      bill: { org: () => ({ bills: { list: () => ({ all: async () => ({ items: held, truncated: false }) }) } }) },
    } as unknown as PartiesDeps;
    for (const [how, d] of [
      ['mirror', warm],
      ['BILL', cold],
    ] as const) {
      const card = JSON.stringify((await vendorCommand.run(ctx('vendor acme'), d)).card);
      expect(card, how).toContain('ACM-1');
      expect(card, how).not.toContain('CRD-3');
      expect(card, how).toMatch(/\$100\.00 · 1 bill\b/);
    }
  });

  it('vendor <name> shows the one match with its open bill from the mirror', async () => {
    const reply = await vendorCommand.run(ctx('vendor acme'), deps);
    expectValidCard(reply.card);
    const card = JSON.stringify(reply.card);
    expect(card).toContain('Acme Office Supplies');
    expect(card).toContain('ACM-1');
  });
});

describe('payments builds only the answer cache, BILL and settings', () => {
  const payments = [1, 2, 3].map(
    (n) =>
      ({
        id: `stp0${n}`,
        vendorId: 'v1',
        vendorName: 'Acme Office Supplies',
        amount: n * 10,
        processDate: `2026-03-0${n}`,
        status: 'PAID',
        singleStatus: 'PAID',
      }) as unknown as Payment,
  );
  const take = vi.fn(async () => ({ items: payments }));
  const deps = {
    mirror: { names: names({ v1: 'Acme Office Supplies' }), answers: new Answers(clock, 100), dropAnswer: () => undefined },
    bill: { org: () => ({ payments: { list: () => ({ take }) } }) },
    settings,
  } as unknown as PaymentsDeps;

  it('payments 2 shows two of one BILL page, and payments asks no more while the answer is kept', async () => {
    const two = await paymentsCommand.run(ctx('payments 2'), deps);
    expectValidCard(two.card);
    expect(textOf(two.card)).toContain('The last 2 payments');
    expect(JSON.stringify(two.card)).toContain('$30.00 · 2 payments');
    await paymentsCommand.run(ctx('payments'), deps);
    expect(take).toHaveBeenCalledTimes(1);
  });
});

describe('payments name each vendor as bills due does', () => {
  it("a payment to a vendor renamed since (or BILL sent without its name) shows the vendor record's name now", async () => {
    const paid = (id: string, vendorName: string | undefined) =>
      ({
        id,
        vendorId: 'v1',
        vendorName,
        amount: 10,
        processDate: '2026-03-01',
        status: 'PAID',
        singleStatus: 'CLEARED',
      }) as unknown as Payment;
    const deps = {
      mirror: { names: names({ v1: 'Acme Office Supplies' }), answers: new Answers(clock, 100), dropAnswer: () => undefined },
      bill: {
        org: () => ({
          payments: { list: () => ({ take: async () => ({ items: [paid('stp01', 'Acme (old name)'), paid('stp02', undefined)] }) }) },
        }),
      },
      settings,
    } as unknown as PaymentsDeps;
    const { card } = await paymentsCommand.run(ctx('payments'), deps);
    expect(tableRows(card).map((r) => r[0])).toEqual(['Acme Office Supplies', 'Acme Office Supplies']);
  });
});

describe('spend builds only the answer cache, BILL and settings', () => {
  const deps = (spendConfigured: boolean) =>
    ({
      mirror: { answers: new Answers(clock, 100), dropAnswer: () => undefined },
      bill: { spend: () => undefined, status: () => ({ spendConfigured }) },
      settings,
    }) as unknown as SpendDeps;

  it('without a token for this organisation says how to add one; without any token says how to enable it', async () => {
    const other = await spendCommand.run(ctx('spend'), deps(true));
    expect(textOf(other.card)).toContain('BILL_SPEND_API_TOKENS');
    const none = await spendCommand.run(ctx('spend'), deps(false));
    expect(textOf(none.card)).toContain('BILL_SPEND_API_TOKEN');
  });
});
