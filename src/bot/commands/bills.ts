// `bills due [days]`, `bills overdue`, `bill <BILL id | invoice number>`: accounts payable, with server-side filters.
//
// BILL filters bills by dueDate (gt/gte/lt/lte), paymentStatus (eq/ne/in), archived and vendorId
// (developer.bill.com /docs/filterable-fields), so each list asks BILL for exactly the rows it shows: never a scan.
// "Unpaid" is paymentStatus ne PAID: UNPAID and SCHEDULED bills (and any partial status BILL may add) still owe money.
import { BillApiError, InputError } from '../../errors.js';
import { BillFilter } from '../../bill/filters.js';
import type { Bill } from '../../bill/types.js';
import type { IndexedBill } from '../../bill/invoiceIndex.js';
import { queryKey } from '../../cache/index.js';
import { billCard, billMatchesCard, billsDueCard, billsOverdueCard, type BillLine } from '../cards/bills.js';
import { addDays } from '../cards/format.js';
import { indexBuildingCard } from '../cards/invoices.js';
import { shortId } from '../cards/redact.js';
import type { CommandContext, CommandDefinition } from './types.js';
import {
  answerWaitMs,
  billIndexOf,
  boundOrg,
  cachedAnswer,
  countArgument,
  demoNote,
  formatOf,
  noArguments,
  orgClient,
  resolveParties,
  shorten,
  textArgument,
  todayOf,
} from './finance.js';

export const MAX_DUE_DAYS = 90;
export const DEFAULT_DUE_DAYS = 7;

/** What a list answer keeps of a bill (line items dropped: they are not shown and would bloat the cache). */
export function billLine(bill: Bill): BillLine {
  const { billLineItems: _dropped, ...rest } = bill;
  return rest;
}

export interface BillList {
  items: BillLine[];
  truncated: boolean;
  pages: number;
}

/** Unpaid, non-archived bills in a due-date range, soonest first, filtered by BILL. */
export async function unpaidBills(ctx: CommandContext, orgId: string, dueDate: { gte?: string; lte?: string; lt?: string }, vendorId?: string | string[]): Promise<BillList> {
  const { items, truncated, pages } = await orgClient(ctx, orgId)
    .bills.list({ dueDate, vendorId, archived: false, filter: new BillFilter().ne('paymentStatus', 'PAID'), sort: [{ field: 'dueDate', order: 'asc' }] })
    .all();
  return { items: items.map(billLine), truncated, pages };
}

/** The overdue list both `bills due` and `bills overdue` use (one cached answer per day). */
function overdueBills(ctx: CommandContext, orgId: string, today: string) {
  return cachedAnswer(ctx, orgId, 'list', queryKey('bills.overdue', { before: today }), () => unpaidBills(ctx, orgId, { lt: today }), ['bill']);
}

async function currencies(ctx: CommandContext, orgId: string, bills: Array<Pick<Bill, 'vendorId'>>): Promise<(vendorId: string) => string | undefined> {
  const vendors = await resolveParties(ctx, orgId, 'vendor', bills.map((b) => b.vendorId));
  return (id) => vendors.get(id)?.currency;
}

export const billsDueCommand: CommandDefinition = {
  name: 'bills due',
  usage: 'bills due [days]',
  description: 'Unpaid bills due in the next 7 days (or up to 90), soonest first, with totals and overdue',
  examples: ['bills due', 'bills due 14'],
  upstream: true,
  rank: 10,
  async run(ctx) {
    const days = countArgument(ctx, {
      min: 0,
      max: MAX_DUE_DAYS,
      fallback: DEFAULT_DUE_DAYS,
      unit: 'days',
      hint: `Type **bills due** for the next ${DEFAULT_DUE_DAYS} days, or **bills due 14** for any number of days up to ${MAX_DUE_DAYS}.`,
    });
    const orgId = boundOrg(ctx);
    const today = todayOf(ctx);
    const to = addDays(today, days);
    const [due, overdue] = await Promise.all([
      cachedAnswer(ctx, orgId, 'list', queryKey('bills.due', { from: today, to }), () => unpaidBills(ctx, orgId, { gte: today, lte: to }), ['bill']),
      overdueBills(ctx, orgId, today),
    ]);
    const currencyOf = await currencies(ctx, orgId, [...due.value.items, ...overdue.value.items]);
    return billsDueCard({
      days,
      today,
      due: due.value.items,
      overdue: overdue.value.items,
      truncated: due.value.truncated,
      page: ctx.input.page,
      command: `bills due ${days}`,
      fmt: formatOf(ctx),
      asOf: Math.min(due.fetchedAt, overdue.fetchedAt),
      currencyOf,
      note: demoNote(ctx),
    });
  },
};

export const billsOverdueCommand: CommandDefinition = {
  name: 'bills overdue',
  usage: 'bills overdue',
  description: 'Unpaid bills past their due date, oldest first, with days overdue and totals',
  examples: ['bills overdue'],
  upstream: true,
  rank: 35,
  async run(ctx) {
    noArguments(ctx, 'Type **bills overdue** on its own; for one vendor\'s bills type **vendor <name>**.');
    const orgId = boundOrg(ctx);
    const today = todayOf(ctx);
    const overdue = await overdueBills(ctx, orgId, today);
    return billsOverdueCard({
      today,
      overdue: overdue.value.items,
      truncated: overdue.value.truncated,
      page: ctx.input.page,
      command: 'bills overdue',
      fmt: formatOf(ctx),
      asOf: overdue.fetchedAt,
      currencyOf: await currencies(ctx, orgId, overdue.value.items),
      note: demoNote(ctx),
    });
  },
};

/** BILL bill ids start with 00n (shared/reference/bill-v3-api.md §8). */
const BILL_ID = /^00n[A-Za-z0-9]{5,61}$/;

const BILL_HINT = 'Type **bill** and the vendor\'s invoice number or the BILL id, e.g. **bill ACM-12345**. To browse a vendor\'s bills, type **vendor <name>**.';

async function billById(ctx: CommandContext, orgId: string, id: string): Promise<{ bill: Bill; fetchedAt: number }> {
  try {
    const got = await cachedAnswer(ctx, orgId, 'object', queryKey('bill', { id }), () => orgClient(ctx, orgId).bills.get(id), [{ entity: 'bill', id }]);
    return { bill: got.value, fetchedAt: got.fetchedAt };
  } catch (err) {
    if (err instanceof BillApiError && err.category === 'notFound') throw new InputError(`No bill with BILL id ${shortId(id)}`, BILL_HINT, `bill ${id}`);
    throw err;
  }
}

function matchLine(row: IndexedBill): BillLine {
  return {
    id: row.id,
    archived: row.archived,
    vendorId: row.vendorId,
    vendorName: row.vendorName || undefined,
    amount: row.amount,
    dueAmount: row.dueAmount,
    dueDate: row.dueDate,
    invoice: { invoiceNumber: row.number },
    paymentStatus: row.paymentStatus,
    createdTime: '',
    updatedTime: row.updatedTime,
  };
}

export const billCommand: CommandDefinition = {
  name: 'bill',
  usage: 'bill <invoice number | BILL id>',
  description: 'One bill: vendor, amounts, dates, statuses, approvers and line items',
  examples: ['bill ACM-12345'],
  upstream: true,
  rank: 45,
  async run(ctx) {
    const typed = textArgument(ctx);
    if (typed === '') throw new InputError('Which bill?', BILL_HINT);
    if (typed.length > 100) throw new InputError('That is too long for an invoice number', BILL_HINT, `bill ${shorten(typed)}`);
    const orgId = boundOrg(ctx);
    const fmt = formatOf(ctx);
    const today = todayOf(ctx);
    const note = demoNote(ctx);
    let found: { bill: Bill; fetchedAt: number };
    if (BILL_ID.test(typed)) {
      found = await billById(ctx, orgId, typed);
    } else {
      const index = billIndexOf(ctx);
      const result = await index.lookup(orgId, typed, { waitMs: answerWaitMs(ctx) });
      if (result.state === 'building') return indexBuildingCard({ what: 'bills', indexed: result.indexed, command: `bill ${typed}`, fmt, asOf: ctx.now.getTime(), note });
      if (result.state === 'missing') {
        throw new InputError(`No bill with invoice number "${shorten(typed)}"`, 'Check the number on the vendor\'s invoice, or find the bill with **vendor <name>**.', `bill ${typed}`);
      }
      if (result.rows.length > 1) {
        const lines = result.rows.map(matchLine);
        const vendors = await resolveParties(ctx, orgId, 'vendor', lines.map((l) => l.vendorId));
        return billMatchesCard({
          typed,
          bills: lines,
          page: ctx.input.page,
          command: `bill ${typed}`,
          today,
          fmt,
          asOf: result.refreshedAt,
          currencyOf: (id) => vendors.get(id)?.currency,
          vendorNameOf: (id) => vendors.get(id)?.name,
          note,
        });
      }
      found = await billById(ctx, orgId, result.rows[0]!.id);
      await index.apply(orgId, found.bill);
    }
    const vendors = await resolveParties(ctx, orgId, 'vendor', [found.bill.vendorId]);
    return billCard({
      bill: found.bill,
      command: `bill ${typed}`,
      today,
      fmt,
      asOf: found.fetchedAt,
      currencyOf: (id) => vendors.get(id)?.currency,
      vendorNameOf: (id) => vendors.get(id)?.name,
      note,
    });
  },
};
