// Accounts payable cards: bills due (with a chart of cash out by due day), overdue bills, one bill, bills sharing an
// invoice number. Pure: data in, card out.
import type { Bill } from '../../bill/types.js';
import { executeAction, shortId, type CardReply } from '../../cards/card.js';
import { byCurrency, verticalBarChart } from '../../cards/chart.js';
import { calendarDate, daysBetween, dueInWords, dueShort, instantDate, money, sum, type FormatOptions } from '../../cards/format.js';
import { addDays } from '../../infra/calendar.js';
import { detailCard, listCard, type AsOf, type DetailCardSpec, type ListCardSpec, type ListContext } from '../../cards/list.js';
import { billApprovalWords, billPaymentWords, codeWords, count, moneyTotal } from '../../cards/words.js';
import { normalizeCommandText } from '../parse.js';

export interface ApCardContext extends AsOf {
  /** "Today" (yyyy-MM-dd) in BOT_TIMEZONE. */
  today: string;
  /** A vendor's bill currency (vendor.billCurrency), when known. */
  currencyOf: (vendorId: string) => string | undefined;
}

/** The bill's vendor name (commands put the vendor record's name there first), or its vendor's shortened id. */
export function vendorName(bill: { vendorName?: string; vendorId?: string }): string {
  return bill.vendorName || `Vendor ${shortId(bill.vendorId ?? '')}`;
}

export function amountDue(bill: Pick<Bill, 'dueAmount' | 'amount'>): number {
  return typeof bill.dueAmount === 'number' ? bill.dueAmount : bill.amount;
}

function invoiceNumber(bill: Pick<Bill, 'invoice' | 'id'>): string {
  return bill.invoice?.invoiceNumber || `id ${shortId(bill.id)}`;
}

/** An open bill's (or invoice's) columns after its vendor (customer): `bills due`, a vendor's and a customer's card. */
export const OPEN_ITEM_COLUMNS: ListCardSpec<Bill>['columns'] = ['Invoice #', 'Due', { header: 'Amount due', figure: true }, 'Status'];

export function openBillRow(b: Bill, today: string, fmt: FormatOptions, currency: string | undefined): string[] {
  return [
    invoiceNumber(b),
    `${calendarDate(b.dueDate, fmt.locale)} · ${dueShort(b.dueDate, today)}`,
    money(amountDue(b), currency, fmt.locale),
    `${billPaymentWords(b)} · ${billApprovalWords(b)}`,
  ];
}

/** Names by the default collator (what localeCompare uses), made once. */
const NAME_ORDER = new Intl.Collator();

/** Soonest first (ISO dates order as strings); then vendor, then id, so every answer lists the same bills in the same order. */
export function byDueDate(a: Bill, b: Bill): number {
  return (
    (a.dueDate < b.dueDate ? -1 : a.dueDate > b.dueDate ? 1 : 0) ||
    NAME_ORDER.compare(vendorName(a), vendorName(b)) ||
    a.id.localeCompare(b.id)
  );
}

const windowWords = (days: number) => ['today', 'today or tomorrow'][days] ?? `in the next ${days} days`;

/** What is scheduled of a scheduled bill: BILL's scheduledAmount (a part may be scheduled), else the amount due; never more. */
function scheduledPart(bill: Pick<Bill, 'scheduledAmount' | 'dueAmount' | 'amount'>): number {
  const s = bill.scheduledAmount;
  return typeof s === 'number' && Number.isFinite(s) && s > 0 ? Math.min(s, amountDue(bill)) : amountDue(bill);
}

/** The bills' amounts (amount due unless `of` says), per currency ("$1,250.00"), and as a totals line ("$1,250.00 · 3 bills"). */
function billsTotal(bills: Bill[], ctx: ApCardContext, of: (b: Bill) => number = amountDue): { money: string; line: string } {
  const amounts = bills.map((b) => ({ amount: of(b), currency: ctx.currencyOf(b.vendorId) }));
  const total = moneyTotal(amounts, ctx.fmt.locale);
  return { money: total, line: `${total} · ${count(bills.length, 'bill', ctx.fmt.locale)}` };
}

/** `due`: unpaid bills due today..today+days; `overdue`: due before; `truncated`: BILL had more than one answer reads. */
export function billsDueCard(
  input: ApCardContext & ListContext & { days: number; due: Bill[]; overdue: Bill[]; truncated?: boolean },
): CardReply {
  const { fmt, today, days } = input;
  const due = [...input.due].sort(byDueDate);
  const scheduled = due.filter((b) => b.paymentStatus === 'SCHEDULED');
  const awaiting = due.filter((b) => b.approvalStatus === 'ASSIGNED');
  const owed = (bills: Bill[]) => billsTotal(bills, input).money;
  const totals: Array<[string, string]> = [['Due', billsTotal(due, input).line]];
  if (scheduled.length > 0) totals.push(['Of which scheduled', billsTotal(scheduled, input, scheduledPart).line]);
  if (awaiting.length > 0) totals.push(['Awaiting approval', count(awaiting.length, 'bill', fmt.locale)]);
  const overdue = input.overdue.length;
  const notes = overdue
    ? [{ text: `Overdue: ${count(overdue, 'bill', fmt.locale)}, ${owed(input.overdue)}, not counted above.` }]
    : [{ text: 'Nothing overdue.', subtle: true }];
  const range =
    days === 0 ? calendarDate(today, fmt.locale) : `${calendarDate(today, fmt.locale)} – ${calendarDate(addDays(today, days), fmt.locale)}`;
  // Cash out by due day, one chart per currency; a host without charts drops it (the table lists every bill).
  const periods = cashOutPeriods(today, days, fmt.locale);
  const currencies = byCurrency(due, (b) => input.currencyOf(b.vendorId));
  const charts = currencies.map(([code, bills]) =>
    verticalBarChart({
      title: `Cash out by due ${periods.unit}${currencies.length > 1 ? `, ${code}` : ''}`,
      xAxisTitle: periods.unit === 'day' ? 'Due' : 'Due in the week from',
      yAxisTitle: code,
      colorSet: 'categorical',
      points: periods.list.map((p) => ({
        label: p.label,
        value: sum(bills.filter((b) => b.dueDate.slice(0, 10) >= p.from && b.dueDate.slice(0, 10) <= p.to).map(amountDue)),
      })),
      fallback: 'drop',
    }),
  );
  const overdueWords = overdue ? `; ${due.length ? overdue : count(overdue, 'bill')} overdue (${owed(input.overdue)})` : '';
  return listCard({
    ...input,
    title: `Bills due ${windowWords(days)}`,
    subtitle: `${range} · ${fmt.timeZone} time`,
    totals,
    notes,
    charts,
    columns: ['Vendor', ...OPEN_ITEM_COLUMNS],
    items: due,
    row: (b) => [vendorName(b), ...openBillRow(b, today, fmt, input.currencyOf(b.vendorId))],
    tone: (b) => (b.dueDate.slice(0, 10) === today ? 'Warning' : undefined),
    noun: 'bills',
    empty: `No bills due ${windowWords(days)}.`,
    footnotes: [input.truncated ? 'BILL has more bills than one answer reads: totals cover the bills shown in the count' : undefined],
    summary: due.length
      ? `${count(due.length, 'bill')} due ${windowWords(days)}, ${owed(due)}${overdueWords}.`
      : `No bills due ${windowWords(days)}${overdueWords}.`,
    actions: overdue > 0 ? [executeAction('Show overdue bills', { verb: 'run', command: 'bills overdue' })] : [],
  });
}

/** A window of `days` after today has a bar a day up to two weeks, and a bar a week beyond (90 days: 13 bars, not 91). */
const DAILY_BARS_UP_TO = 14;

/** The bars of a cash-out chart: each one's first and last day (yyyy-MM-dd) and its label ("Mar 10"). */
export function cashOutPeriods(
  today: string,
  days: number,
  locale: string,
): { unit: 'day' | 'week'; list: Array<{ from: string; to: string; label: string }> } {
  const step = days <= DAILY_BARS_UP_TO ? 1 : 7;
  const short = new Intl.DateTimeFormat(locale, { month: 'short', day: 'numeric', timeZone: 'UTC' });
  const list = [];
  for (let d = 0; d <= days; d += step) {
    const from = addDays(today, d);
    list.push({ from, to: addDays(today, Math.min(days, d + step - 1)), label: short.format(new Date(`${from}T00:00:00Z`)) });
  }
  return { unit: step === 1 ? 'day' : 'week', list };
}

export const AGING_BUCKETS = [
  { label: '1–30 days', max: 30 },
  { label: '31–60 days', max: 60 },
  { label: '61–90 days', max: 90 },
  { label: '90+ days', max: Number.POSITIVE_INFINITY },
] as const;

export function agingBucket(daysLate: number): number {
  return AGING_BUCKETS.findIndex((b) => daysLate <= b.max);
}

export function billsOverdueCard(input: ApCardContext & ListContext & { overdue: Bill[]; truncated?: boolean }): CardReply {
  const { fmt, today } = input;
  const rows = [...input.overdue].sort(byDueDate);
  const late = (b: Bill) => daysBetween(b.dueDate.slice(0, 10), today);
  const total = billsTotal(rows, input);
  const totals: Array<[string, string]> = [['Overdue', total.line]];
  const [oldest] = rows;
  if (oldest) {
    totals.push(['Oldest', `${count(late(oldest), 'day', fmt.locale)} late — ${vendorName(oldest)}`]);
    AGING_BUCKETS.forEach((bucket, i) => {
      const list = rows.filter((b) => agingBucket(late(b)) === i);
      if (list.length > 0) totals.push([bucket.label, billsTotal(list, input).line]);
    });
  }
  return listCard({
    ...input,
    title: 'Overdue bills',
    subtitle: `Unpaid bills due before ${calendarDate(today, fmt.locale)} · oldest first`,
    totals,
    columns: ['Vendor', 'Invoice #', 'Was due', 'Days late', { header: 'Amount due', figure: true }, 'Status'],
    items: rows,
    row: (b) => [
      vendorName(b),
      invoiceNumber(b),
      calendarDate(b.dueDate, fmt.locale),
      late(b).toLocaleString(fmt.locale),
      money(amountDue(b), input.currencyOf(b.vendorId), fmt.locale),
      billPaymentWords(b),
    ],
    tone: (b) => (late(b) > 30 ? 'Attention' : undefined),
    noun: 'bills',
    empty: 'No overdue bills. Every unpaid bill is due today or later.',
    footnotes: [input.truncated ? 'BILL has more overdue bills than one answer reads' : undefined],
    summary: oldest
      ? `${count(rows.length, 'overdue bill')}, ${total.money}; the oldest is ${count(late(oldest), 'day')} late.`
      : 'No overdue bills.',
  });
}

/** What `vendor` or `customer` is given to show this party: its name, or its BILL id for a name BILL's filter cannot carry
 * or that a command line reads as another name (parse.ts; trailing punctuation only shortens it, which still matches). */
export function partyArgument<P extends { id?: string; name: string }>(party: P): P['id'] | string {
  // After a word, as it stands in `vendor <name>` (a leading "@…" or "/" would otherwise be read as a mention or a slash).
  const read = normalizeCommandText(`x ${party.name}`).slice(2);
  // BILL filters refuse a quote, a backslash or a control character (below U+0020).
  const typeable = party.name.trim().length > 0 && party.name.length <= 200 && !/["\\]|[^\x20-\uffff]/.test(party.name);
  return typeable && read !== '' && party.name.startsWith(read) ? party.name : party.id;
}

export function billCard(input: ApCardContext & { bill: Bill; command: string }): CardReply {
  const { bill, fmt, today } = input;
  const m = (n: number | undefined) => money(n ?? 0, input.currencyOf(bill.vendorId), fmt.locale);
  const name = vendorName(bill);
  const number = bill.invoice?.invoiceNumber;
  const open = bill.paymentStatus !== 'PAID' && !bill.archived;
  const dueWords = open ? dueInWords(bill.dueDate, today) : undefined;
  const vendorArgument = partyArgument({ id: bill.vendorId || undefined, name });
  const late = open && bill.dueDate && daysBetween(bill.dueDate.slice(0, 10), today) > 0;
  const sections: DetailCardSpec['sections'] = [];
  const approvers = [...(bill.approvers ?? [])].sort((a, b) => a.approverOrder - b.approverOrder);
  if (approvers.length > 0) {
    const lines = approvers.slice(0, 8).map((a, i): [string, string] => {
      const day = instantDate(a.statusChangedTime, fmt);
      const when = day ? ` (${day})` : '';
      return [`Approver ${i + 1}`, `${codeWords(a.status)}${when} · user ${shortId(a.userId)}`];
    });
    if (approvers.length > 8) lines.push(['…', `${approvers.length - 8} more`]);
    sections.push({ heading: 'Approvers', facts: lines });
  }
  const items = bill.billLineItems ?? [];
  if (items.length > 0) {
    const lines = items.slice(0, 5).map((li): [string, string] => [li.description || 'Line item', m(li.amount)]);
    if (items.length > 5) lines.push([`${items.length - 5} more lines`, m(items.slice(5).reduce((s, li) => s + li.amount, 0))]);
    sections.push({ heading: `Line items (${items.length})`, facts: lines });
  } else if (bill.description) {
    sections.push({ note: bill.description, separator: true });
  }
  const status = `${billPaymentWords(bill).toLowerCase()}${dueWords && bill.dueDate ? `, ${dueWords.toLowerCase()}` : ''}`;
  return detailCard({
    ...input,
    title: number ? `Bill ${number}` : `Bill ${shortId(bill.id)}`,
    subtitle: `${name}${bill.archived ? ' · archived' : ''}`,
    status: late ? dueWords : undefined,
    facts: [
      [
        ['Amount', m(bill.amount)],
        ['Paid', m(bill.paidAmount)],
        ['Due', m(amountDue(bill))],
        ['Scheduled', m(bill.scheduledAmount)],
        (bill.creditAmount ?? 0) > 0 ? ['Credits applied', m(bill.creditAmount)] : undefined,
      ],
      [
        ['Vendor', name],
        ['Invoice #', number ?? '—'],
        ['Invoice date', calendarDate(bill.invoice?.invoiceDate, fmt.locale)],
        ['Due date', `${calendarDate(bill.dueDate, fmt.locale)}${dueWords ? ` (${dueWords.toLowerCase()})` : ''}`],
        ['Payment', billPaymentWords(bill)],
        ['Approval', billApprovalWords(bill)],
        bill.purchaseOrderNumber ? ['PO number', bill.purchaseOrderNumber] : undefined,
        ['BILL id', shortId(bill.id)],
      ],
    ],
    sections,
    summary: `Bill ${number ?? shortId(bill.id)} from ${name}: ${m(amountDue(bill))} due, ${status}.`,
    actions: bill.vendorName && vendorArgument ? [executeAction('This vendor', { verb: 'run', command: `vendor ${vendorArgument}` })] : [],
  });
}

/** Several vendors' bills carry the same invoice number: list them, with a button to open each. */
export function billMatchesCard(input: ApCardContext & ListContext & { typed: string; bills: Bill[] }): CardReply {
  const { fmt } = input;
  const rows = [...input.bills].sort(byDueDate);
  // One vendor's bills share a number when it re-entered a bill (the old one archived), not only across vendors.
  const who = new Set(rows.map((b) => b.vendorId)).size > 1 ? 'Different vendors used' : 'These bills carry';
  return listCard({
    ...input,
    // The number leads its own line: at the end of a title line the browser breaks it at its hyphen (INV- / 100).
    title: `${rows.length} bills have invoice number`,
    subtitle: `${input.typed} · ${who} the same number. Pick one, or type bill {BILL id}.`,
    // The BILL id leads the row's second line: at a line's end the browser would break it after its ellipsis.
    columns: ['Vendor', 'BILL id', 'Due', { header: 'Amount due', figure: true }, 'Status'],
    items: rows,
    row: (b) => [
      vendorName(b),
      shortId(b.id),
      calendarDate(b.dueDate, fmt.locale),
      money(amountDue(b), input.currencyOf(b.vendorId), fmt.locale),
      b.archived ? 'Archived' : billPaymentWords(b),
    ],
    noun: 'bills',
    empty: `No bill has invoice number ${input.typed}.`,
    summary: `${rows.length} bills have invoice number ${input.typed}; pick one.`,
    actions: rows.slice(0, 4).map((b) => executeAction(vendorName(b).slice(0, 30), { verb: 'run', command: `bill ${b.id}` })),
  });
}
