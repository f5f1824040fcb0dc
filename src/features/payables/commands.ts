// `bills due [days]`, `bills overdue`, `bill <BILL id | invoice number>`: accounts payable.
//
// Answered from the org's mirror of open bills, filtered by due date in BOT_TIMEZONE; until it is built, BILL filters a
// list (dueDate, paymentStatus, archived) while the build starts in the background: never a full scan for a list answer.
// "Unpaid" is paymentStatus ne PAID (any partial status BILL may add still owes money); nothing left due is left out.
import { InputError } from '../../errors.js';
import { BillFilter } from '../../bill/filters.js';
import type { Bill } from '../../bill/types.js';
import { answerKey } from '../../mirror/answers.js';
import { isOwedBill, type PartyInfo } from '../../mirror/records.js';
import { billCard, billMatchesCard, billsDueCard, billsOverdueCard } from './cards.js';
import { addDays, calendarDay } from '../../infra/calendar.js';
import { indexBuildingCard } from '../../cards/list.js';
import { shortId, shorten } from '../../cards/card.js';
import type { BillGateway } from '../../bill/gateway.js';
import type { Mirror } from '../../mirror/mirror.js';
import type { Command, CommandContext } from '../types.js';
import {
  boundOrg,
  cachedAnswer,
  countArgument,
  listContext,
  noArguments,
  mirrorRead,
  orgClient,
  findById,
  resolveParties,
  numberArgument,
  todayOf,
  type WithSettings,
} from '../finance.js';

/** What accounts payable reads: the org's mirror of bills (and vendor names), BILL for bills not mirrored yet. */
export interface PayablesDeps extends WithSettings {
  mirror: Pick<Mirror, 'rows' | 'lookup' | 'byId' | 'prepare' | 'names' | 'answers' | 'dropAnswer'>;
  bill: Pick<BillGateway, 'org'>;
}

const MAX_DUE_DAYS = 90;
/** The window `bills due` (and the dashboard tab) shows without a number of days. */
export const DEFAULT_DUE_DAYS = 7;

/** Unpaid, non-archived bills in a due-date range, soonest first, filtered by BILL; nothing due left out, line items dropped. */
export async function unpaidBills(deps: Pick<PayablesDeps, 'bill'>, orgId: string, dueDate: DueRange, vendorId?: string | string[]) {
  const { items, truncated } = await orgClient(deps, orgId)
    .bills.list({
      dueDate,
      vendorId,
      archived: false,
      filter: new BillFilter().add('paymentStatus', 'ne', 'PAID'),
      sort: [{ field: 'dueDate', order: 'asc' }],
    })
    .all();
  return { items: items.filter(isOwedBill).map(({ billLineItems: _dropped, ...rest }) => rest), truncated };
}

/** The org's open bills with money due that `where` keeps, from its mirror; `building` while not built (then ask BILL and
 * call `mirror.prepare(orgId, 'bill', 'open')`). */
export function openBills(
  ctx: CommandContext,
  deps: WithSettings & { mirror: Pick<Mirror, 'rows'> },
  orgId: string,
  where: (bill: Bill) => boolean,
) {
  const read = mirrorRead(ctx, deps, 'bill');
  return deps.mirror.rows(orgId, 'bill', { ...read, scope: 'open', whileBuilding: 'skip', where: (b) => isOwedBill(b) && where(b) });
}

/** Vendor names as the vendor records have them now (a bill carries the name its vendor had when the bill last changed). */
export function withVendorNames<T extends Pick<Bill, 'vendorId' | 'vendorName'>>(bills: T[], vendors: Map<string, PartyInfo>): T[] {
  return bills.map((b) => {
    const name = vendors.get(b.vendorId)?.name;
    return name && name !== b.vendorName ? { ...b, vendorName: name } : b;
  });
}

/** A range of due days (yyyy-MM-dd) as BILL filters it; the mirror's rows are tested against it the same way. */
type DueRange = Partial<Record<'gte' | 'lte' | 'lt', string>>;

/** A bill without a due day (or one that is no day: 2026-13-45) is in no range (BILL's dueDate filters never match those either). */
function dueIn(b: Pick<Bill, 'dueDate'>, r: DueRange): boolean {
  const day = calendarDay(typeof b.dueDate === 'string' ? b.dueDate : undefined);
  return !!day && (r.gte === undefined || day >= r.gte) && (r.lte === undefined || day <= r.lte) && (r.lt === undefined || day < r.lt);
}

/** The unpaid bills due in each range, with their vendors' names and currencies. `truncated`: BILL had more rows in the
 * first range than one answer reads. */
async function billsDueIn(ctx: CommandContext, deps: PayablesDeps, ranges: DueRange[]) {
  const orgId = boundOrg(ctx);
  const warm = await openBills(ctx, deps, orgId, (b) => ranges.some((r) => dueIn(b, r)));
  const { lists, truncated, asOf } =
    'rows' in warm
      ? { lists: ranges.map((r) => warm.rows.filter((b) => dueIn(b, r))), truncated: false, asOf: warm.refreshedAt }
      : await billsDueInBill(ctx, deps, orgId, ranges);
  const vendors = await resolveParties(deps, orgId, 'vendor', new Set(lists.flat().map((b) => b.vendorId)));
  const currencyOf = (vendorId: string) => vendors.get(vendorId)?.currency;
  return { lists: lists.map((list) => withVendorNames(list, vendors)), truncated, asOf, currencyOf };
}

/** The unpaid bills due in each range asked of BILL (one kept answer per range and day), while the mirror is built. */
async function billsDueInBill(ctx: CommandContext, deps: PayablesDeps, orgId: string, ranges: DueRange[]) {
  const asked = await Promise.all(
    ranges.map((r) => cachedAnswer(ctx, deps, answerKey('bills.due', r), ['bill'], () => unpaidBills(deps, orgId, r))),
  );
  deps.mirror.prepare(orgId, 'bill', 'open');
  const lists: Bill[][] = asked.map((a) => a.value.items);
  return { lists, truncated: asked[0]?.value.truncated ?? false, asOf: Math.min(...asked.map((a) => a.fetchedAt)) };
}

/** The bills due from today to today + `days` and the overdue ones (the card and the dashboard tab). */
export async function billsDueFigures(ctx: CommandContext, deps: PayablesDeps, days: number) {
  const today = todayOf(ctx, deps);
  const { lists, ...rest } = await billsDueIn(ctx, deps, [{ gte: today, lte: addDays(today, days) }, { lt: today }]);
  return { today, due: lists[0] ?? [], overdue: lists[1] ?? [], ...rest };
}

export const billsDueCommand: Command<PayablesDeps> = {
  name: 'bills due',
  usage: 'bills due [days]',
  description: 'Unpaid bills due in the next 7 days (or up to 90), soonest first, with totals and overdue',
  examples: ['bills due', 'bills due 14'],
  upstream: true,
  rank: 10,
  async run(ctx, deps) {
    const days = countArgument(ctx, {
      min: 0,
      max: MAX_DUE_DAYS,
      fallback: DEFAULT_DUE_DAYS,
      unit: 'days',
      hint: `Type **bills due** for the next ${DEFAULT_DUE_DAYS} days, or **bills due 14** for any number of days up to ${MAX_DUE_DAYS}.`,
    });
    const figures = await billsDueFigures(ctx, deps, days);
    return billsDueCard({ ...listContext(ctx, deps, `bills due ${days}`, figures.asOf), ...figures, days });
  },
};

const billsOverdueCommand: Command<PayablesDeps> = {
  name: 'bills overdue',
  usage: 'bills overdue',
  description: 'Unpaid bills past their due date, oldest first, with days overdue and totals',
  examples: ['bills overdue'],
  upstream: true,
  rank: 35,
  async run(ctx, deps) {
    noArguments(ctx, "Type **bills overdue** on its own; for one vendor's bills type **vendor {name}**.");
    const today = todayOf(ctx, deps);
    const { lists, asOf, ...rest } = await billsDueIn(ctx, deps, [{ lt: today }]);
    return billsOverdueCard({ ...listContext(ctx, deps, 'bills overdue', asOf), ...rest, today, overdue: lists[0] ?? [] });
  },
};

/** BILL bill ids start with 00n (shared/reference/bill-v3-api.md §8). */
const BILL_ID = /^00n[A-Za-z0-9]{5,61}$/;

const BILL_HINT =
  "Type **bill** and the vendor's invoice number or the BILL id, e.g. **bill ACM-12345**. To browse a vendor's bills, type **vendor {name}**.";

/** A bill by its BILL id, from the org's mirror or BILL. */
async function billById(ctx: CommandContext, deps: PayablesDeps, id: string) {
  const got = await findById(ctx, deps, 'bill', id);
  if (!got) throw new InputError(`No bill with BILL id ${shortId(id)}`, BILL_HINT, `bill ${id}`);
  return { rows: [got.record], refreshedAt: got.refreshedAt };
}

export const billCommand: Command<PayablesDeps> = {
  name: 'bill',
  usage: 'bill <invoice number | BILL id>',
  description: 'One bill: vendor, amounts, dates, statuses, approvers and line items',
  examples: ['bill ACM-12345'],
  upstream: true,
  rank: 45,
  async run(ctx, deps) {
    const typed = numberArgument(ctx, 'bill', BILL_HINT);
    const orgId = boundOrg(ctx);
    const command = `bill ${typed}`;
    const found = BILL_ID.test(typed)
      ? await billById(ctx, deps, typed)
      : await deps.mirror.lookup(orgId, 'bill', typed, mirrorRead(ctx, deps, 'bill'));
    if ('building' in found)
      return indexBuildingCard({ ...listContext(ctx, deps, command, ctx.now.getTime()), what: 'bills', indexed: found.building });
    if (found.rows.length === 0) {
      throw new InputError(
        `No bill with invoice number "${shorten(typed)}"`,
        "Check the number on the vendor's invoice, or find the bill with **vendor {name}**.",
        command,
      );
    }
    const vendors = await resolveParties(deps, orgId, 'vendor', new Set(found.rows.map((b) => b.vendorId)));
    const bills = withVendorNames(found.rows, vendors);
    const shared = {
      ...listContext(ctx, deps, command, found.refreshedAt),
      today: todayOf(ctx, deps),
      currencyOf: (id: string) => vendors.get(id)?.currency,
    };
    // Several vendors' bills may carry the same invoice number: a card to pick one.
    const [bill] = bills;
    return bill && bills.length === 1 ? billCard({ ...shared, bill }) : billMatchesCard({ ...shared, typed, bills });
  },
};

export const payablesCommands = [billsDueCommand, billsOverdueCommand, billCommand];
