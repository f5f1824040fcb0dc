// Cards for what BILL tells us without being asked: one event in words ("Payment to Acme Supply failed — $4,200.00,
// bill INV-778") with its key facts and a Refresh, and the scheduled digest. Pure: data in, card out.
import type { OutboxEvent } from '../../notify/types.js';
import type { DigestContent, DigestRow } from '../../notify/digests.js';
import type { EntityKind } from '../../mirror/records.js';
import { networkStatusWords } from '../network/cards.js';
import { obj, paymentBillIds, vendorOf } from '../../notify/project.js';
import { describeSchedule, type DigestSchedule } from '../../notify/schedule.js';
import {
  adaptiveCard,
  escapeMarkdown,
  executeAction,
  facts,
  footer,
  keepTogether,
  shortRef,
  subtitle,
  table,
  text,
  title,
  type CardElement,
  type CardReply,
  clipped,
  unescapeMarkdown,
} from '../../cards/card.js';
import { calendarDate, clockTime, dateTime, money, sum, type FormatOptions } from '../../cards/format.js';
import { codeWords, count, moneyTotal } from '../../cards/words.js';

/** `note`: the footer note, e.g. "Demo organisation — simulated data". */
export type PresenterOptions = FormatOptions & { note?: string };

/** A digest's schedule with the bot's time zone: "every day at 09:00 (Europe/London)". */
export const scheduleIn = (schedule: DigestSchedule, fmt: { timeZone: string }): string =>
  `${describeSchedule(schedule)} (${escapeMarkdown(fmt.timeZone)})`;

export const REFRESH_VERB = 'notify.refresh';

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
/** An invoice or bill number in card text: cut short, escaped, and kept on one line (it breaks at its hyphens otherwise). */
const ref = (n: string): string => keepTogether(clipped(n));
/** A status code BILL sends, in words and escaped: cards here compose markdown themselves (codeWords leaves that to the caller). */
const statusWords = (code: string | undefined): string => escapeMarkdown(codeWords(code));

/** What a payment's single status means for the person who paid. */
const PAYMENT_OUTCOMES = new Map<string, string>([
  ['SCHEDULED', 'is scheduled'],
  ['APPROVING', 'is waiting for approval'],
  ...['FUNDING_STARTED', 'PROCESSED', 'PAID'].map((s) => [s, 'is being processed'] as const),
  ['SENT', 'was sent'],
  ...['DELIVERED', 'CLEARED'].map((s) => [s, 'was delivered'] as const),
  ...['CANCELED', 'CANCELLED'].map((s) => [s, 'was cancelled'] as const),
  ...['VOIDED', 'VOID_PENDING'].map((s) => [s, 'was voided'] as const),
  ['DISBURSEMENT_ON_HOLD', 'is on hold'],
  ['FUNDS_ESCHEATED', 'was not claimed by the vendor'],
  ['EXPIRING', 'is about to expire'],
  ...[
    'FAILED',
    'FUNDING_FAILED_VOIDED',
    'FUNDING_FAILED_ACTION_NEEDED',
    'DISBURSEMENT_FAILED_ACTION_NEEDED',
    'DISBURSEMENT_FAILED_VENDOR_BANK_REJECTED',
  ].map((s) => [s, 'failed'] as const),
]);

/** A bill's approval status in words; other statuses are spelled out as they are. */
const APPROVAL_WORDS = new Map([
  ['ASSIGNED', 'Awaiting approval'],
  ['UNASSIGNED', 'No approvers'],
]);

function billsPhrase(ids: string[], numbers: Record<string, string> | undefined): string | undefined {
  if (ids.length === 0) return undefined;
  const names = ids.slice(0, 3).map((id) => {
    // Own entries only: a bill id from the payload is never looked up among the properties every object inherits.
    const number = numbers && Object.hasOwn(numbers, id) ? numbers[id] : undefined;
    return number ? ref(number) : shortRef(id);
  });
  const more = ids.length > 3 ? ` and ${ids.length - 3} more` : '';
  return `${ids.length === 1 ? 'bill' : 'bills'} ${names.join(', ')}${more}`;
}

function sayBill(ev: OutboxEvent, rows: Array<[string, string]>, fmt: FormatOptions): string {
  const e = ev.entity;
  const vendor = clipped(str(e.vendorName) ?? ev.enrichment?.vendorName ?? 'a vendor');
  const number = str(obj(e.invoice).invoiceNumber);
  const cur = ev.enrichment?.currency;
  const amount = num(e.amount);
  const due = num(e.dueAmount) ?? amount;
  const dueDate = str(e.dueDate);
  const label = number ? `Bill ${ref(number)}` : 'A bill';
  const lower = number ? `bill ${ref(number)}` : 'a bill';
  rows.push(['Vendor', vendor]);
  if (number) rows.push(['Invoice number', ref(number)]);
  if (amount !== undefined) rows.push(['Amount', money(amount, cur, fmt.locale)]);
  if (due !== undefined && due !== amount) rows.push(['Still due', money(due, cur, fmt.locale)]);
  if (dueDate) rows.push(['Due', calendarDate(dueDate, fmt.locale)]);
  const payment = str(e.paymentStatus);
  if (payment) rows.push(['Payment', payment === 'UNPAID' && (num(e.paidAmount) ?? 0) > 0 ? 'Partly paid' : statusWords(payment)]);
  const approval = str(e.approvalStatus);
  if (approval) rows.push(['Approval', APPROVAL_WORDS.get(approval) ?? statusWords(approval)]);
  const money1 = (n: number | undefined) => (n === undefined ? '' : ` — ${money(n, cur, fmt.locale)}`);
  switch (ev.type) {
    case 'bill.created':
      return `New bill from ${vendor}${money1(amount)}${number ? `, invoice ${ref(number)}` : ''}${dueDate ? `, due ${calendarDate(dueDate, fmt.locale)}` : ''}`;
    case 'bill.archived':
      return `${label} from ${vendor} was archived${money1(amount)}`;
    case 'bill.restored':
      return `${label} from ${vendor} was restored${money1(amount)}`;
  }
  if (e.archived === true) return `${label} from ${vendor} is archived${money1(amount)}`;
  if (e.paymentStatus === 'PAID') return `${label} from ${vendor} is paid${money1(amount)}`;
  if (e.paymentStatus === 'SCHEDULED') return `Payment scheduled for ${lower} from ${vendor}${money1(num(e.scheduledAmount) ?? due)}`;
  if (e.approvalStatus === 'DENIED') return `${label} from ${vendor} was denied${money1(amount)}`;
  return `${label} from ${vendor} changed${money1(due)}${dueDate ? ` due ${calendarDate(dueDate, fmt.locale)}` : ''}`;
}

function sayPayment(ev: OutboxEvent, rows: Array<[string, string]>, fmt: FormatOptions): string {
  const e = ev.entity;
  const vendor = clipped(vendorOf(e).name ?? ev.enrichment?.vendorName ?? 'a vendor');
  const cur = ev.enrichment?.currency ?? str(e.currency);
  const amount = num(e.amount);
  const bills = billsPhrase(paymentBillIds(e), ev.enrichment?.billNumbers);
  const tail = [amount !== undefined ? money(amount, cur, fmt.locale) : undefined, bills].filter(Boolean).join(', ');
  rows.push(['Vendor', vendor]);
  if (amount !== undefined) rows.push(['Amount', money(amount, cur, fmt.locale)]);
  if (bills) rows.push([bills.startsWith('bills') ? 'Bills' : 'Bill', bills.replace(/^bills? /, '')]);
  if (str(e.processDate)) rows.push(['Process date', calendarDate(str(e.processDate), fmt.locale)]);
  const arrives = str(obj(e.disbursement).arrivesByDate);
  if (arrives) rows.push(['Arrives by', calendarDate(arrives, fmt.locale)]);
  // What BILL said went wrong (failed payments and AutoPay runs).
  const why = ev.errors
    .map((x) => x.message)
    .filter(Boolean)
    .join('; ');
  if (ev.type === 'autopay.failed') {
    if (why) rows.push(['Reason', escapeMarkdown(why.slice(0, 200))]);
    return `AutoPay to ${vendor} failed${why ? ` — ${escapeMarkdown(why.slice(0, 120))}` : ''}`;
  }
  const status = str(e.singleStatus) ?? str(e.status);
  if (status) rows.push(['Status', statusWords(status)]);
  const outcome =
    PAYMENT_OUTCOMES.get(ev.type === 'payment.failed' ? 'FAILED' : (status ?? '')) ?? `changed (${statusWords(status).toLowerCase()})`;
  if (ev.type === 'payment.failed' && why) rows.push(['Reason', escapeMarkdown(why.slice(0, 200))]);
  const when = outcome === 'is scheduled' && str(e.processDate) ? ` for ${calendarDate(str(e.processDate), fmt.locale)}` : '';
  return `Payment to ${vendor} ${outcome}${when}${tail ? ` — ${tail}` : ''}`;
}

function sayInvoice(ev: OutboxEvent, rows: Array<[string, string]>, fmt: FormatOptions): string {
  const e = ev.entity;
  const customer = clipped(ev.enrichment?.customerName ?? str(obj(e.customer).name) ?? 'a customer');
  const number = str(e.invoiceNumber);
  const label = number ? `Invoice ${ref(number)}` : 'An invoice';
  const lower = number ? `invoice ${ref(number)}` : 'an invoice';
  const cur = ev.enrichment?.currency;
  const total = num(e.totalAmount);
  const due = num(e.dueAmount);
  const dueDate = str(e.dueDate);
  rows.push(['Customer', customer]);
  if (number) rows.push(['Invoice', ref(number)]);
  if (total !== undefined) rows.push(['Total', money(total, cur, fmt.locale)]);
  if (due !== undefined) rows.push(['Still due', money(due, cur, fmt.locale)]);
  if (dueDate) rows.push(['Due', calendarDate(dueDate, fmt.locale)]);
  if (str(e.status)) rows.push(['Status', statusWords(str(e.status))]);
  const totalText = total !== undefined ? ` — ${money(total, cur, fmt.locale)}` : '';
  switch (ev.type) {
    case 'invoice.created':
      return `${label} to ${customer} was created${totalText}${dueDate ? `, due ${calendarDate(dueDate, fmt.locale)}` : ''}`;
    case 'invoice.archived':
      return `${label} to ${customer} was archived (cancelled)`;
    case 'invoice.restored':
      return `${label} to ${customer} was restored`;
  }
  if (e.archived === true) return `${label} to ${customer} is archived (cancelled)`;
  if (e.status === 'PAID' || (due === 0 && total !== undefined && total > 0))
    return `${label} from ${customer} is paid in full${totalText}`;
  if (e.status === 'PARTIAL_PAYMENT' && total !== undefined && due !== undefined) {
    return `Payment received on ${lower} from ${customer} — ${money(sum([total, -due]), cur, fmt.locale)} of ${money(total, cur, fmt.locale)} paid, ${money(due, cur, fmt.locale)} still due`;
  }
  return `${label} to ${customer} changed${due !== undefined ? ` — ${money(due, cur, fmt.locale)} due` : ''}${dueDate ? ` ${calendarDate(dueDate, fmt.locale)}` : ''}`;
}

function sayVendor(ev: OutboxEvent, rows: Array<[string, string]>): string {
  const e = ev.entity;
  const vendor = clipped(str(e.name) ?? 'A vendor');
  rows.push(['Vendor', vendor]);
  const currency = str(e.billCurrency);
  if (currency) rows.push(['Currency', escapeMarkdown(currency)]);
  const network = networkStatusWords(str(e.networkStatus));
  if (network) rows.push(['BILL network', escapeMarkdown(network)]);
  const said: Record<string, string> = {
    'vendor.created': `New vendor: ${vendor}`,
    'vendor.archived': `Vendor ${vendor} was archived`,
    'vendor.restored': `Vendor ${vendor} was restored`,
  };
  return said[ev.type] ?? `Vendor ${vendor} was updated`;
}

function saySpend(ev: OutboxEvent, rows: Array<[string, string]>, fmt: FormatOptions): string {
  const e = ev.entity;
  const who = escapeMarkdown(str(e.userName) ?? 'someone');
  const merchantName = str(e.merchantName);
  const merchant = merchantName ? escapeMarkdown(merchantName) : undefined;
  const amount = num(e.amount);
  const amountText = amount !== undefined ? ` — ${money(amount, str(e.currency), fmt.locale)}` : '';
  if (merchant) rows.push(['Merchant', merchant]);
  if (amount !== undefined) rows.push(['Amount', money(amount, str(e.currency), fmt.locale)]);
  if (str(e.userName)) rows.push(['By', who]);
  const budget = str(e.budgetName);
  if (budget) rows.push(['Budget', escapeMarkdown(budget)]);
  if (str(e.status)) rows.push(['Status', statusWords(str(e.status))]);
  const at = merchant ? ` at ${merchant}` : '';
  switch (ev.type) {
    case 'spend.transaction.updated': {
      const reason = str(e.declineReason);
      const declined = e.transactionType === 'DECLINE' || reason !== undefined;
      if (reason) rows.push(['Declined because', escapeMarkdown(reason)]);
      return `Card ${declined ? 'payment declined' : 'transaction'}${at}${amountText}${str(e.userName) ? ` by ${who}` : ''}`;
    }
    case 'spend.reimbursement.created':
      return `Reimbursement request from ${who}${amountText}${at}`;
    case 'spend.reimbursement.deleted':
      return `Reimbursement from ${who} was deleted${amountText}`;
    case 'spend.three-ds-challenge.created':
      return `A card payment${at} needs a 3-D Secure check${amountText}`;
    default:
      return `Reimbursement from ${who} is now ${statusWords(str(e.status)).toLowerCase()}${amountText}`;
  }
}

/** How each kind of record is put in words: the headline, with its key facts added to `rows` (spend: everything else). */
const SAY: Partial<Record<EntityKind, typeof saySpend>> = {
  bill: sayBill,
  payment: sayPayment,
  invoice: sayInvoice,
  vendor: sayVendor,
};

/** The card for one BILL event. `refreshedAt` marks a card rebuilt from BILL's current record by Refresh. */
export function notificationCard(ev: OutboxEvent, opts: PresenterOptions, extra: { refreshedAt?: number } = {}): CardReply {
  const rows: Array<[string, string]> = [];
  const headline = (SAY[ev.entityType] ?? saySpend)(ev, rows, opts);
  const body: CardElement[] = [text(headline, { weight: 'Bolder', size: 'Medium' })];
  if (rows.length > 0) body.push(facts(rows));
  const when =
    extra.refreshedAt !== undefined
      ? `Refreshed from BILL ${dateTime(extra.refreshedAt, opts)}`
      : `BILL event ${escapeMarkdown(ev.type)} · ${dateTime(ev.receivedAt, opts)}`;
  body.push(footer([when, opts.note].filter(Boolean).join(' · ')));
  // Refresh re-reads the record from BILL; Spend & Expense records are refreshed with the `spend` command.
  const id = str(ev.entity.id);
  const refresh =
    ev.entityType === 'spend'
      ? executeAction('Refresh', { verb: 'run', command: 'spend', refresh: true })
      : id && executeAction('Refresh', { verb: REFRESH_VERB, entity: ev.entityType, id, type: ev.type });
  return adaptiveCard(body, { summary: unescapeMarkdown(headline).replace(/\u2060/g, ''), actions: refresh ? [refresh] : undefined });
}

const DIGEST_ROWS = 5;

/** One part of a digest: its heading with the count and total, the first DIGEST_ROWS rows, and where to see the rest. */
function digestSection(
  part: { heading: string; party: 'Vendor' | 'Customer'; more: string; empty: string },
  rows: DigestRow[],
  fmt: FormatOptions,
): CardElement[] {
  const amounts = rows.map((r) => ({ amount: r.dueAmount, currency: r.currency }));
  const said = rows.length === 0 ? 'none' : `${rows.length}, ${moneyTotal(amounts, fmt.locale)}`;
  const heading = text(`${part.heading}: ${said}`, { weight: 'Bolder', separator: true });
  if (rows.length === 0) return [heading, text(part.empty, { subtle: true })];
  const record = part.party === 'Vendor' ? 'Bill' : 'Invoice';
  const columns = [{ header: part.party }, { header: record }, { header: 'Due' }, { header: 'Amount', figure: true }];
  const shown = rows
    .slice(0, DIGEST_ROWS)
    .map((r) => [
      clipped(r.partyName || `Unknown ${part.party.toLowerCase()}`),
      r.number ? ref(r.number) : shortRef(r.id),
      calendarDate(r.dueDate, fmt.locale),
      money(r.dueAmount, r.currency, fmt.locale),
    ]);
  const out = [heading, table(columns, shown)];
  if (rows.length > DIGEST_ROWS) out.push(text(`…and ${rows.length - DIGEST_ROWS} more: type **${part.more}**.`, { subtle: true }));
  return out;
}

/** The digest's parts (overdue invoices are left out while the invoice index is still being built). */
const DIGEST_PARTS = {
  dueSoon: {
    party: 'Vendor',
    heading: 'Bills due in the next 7 days',
    more: 'bills due',
    empty: 'No unpaid bills due in the next 7 days.',
  },
  overdueBills: { party: 'Vendor', heading: 'Overdue bills', more: 'bills overdue', empty: 'No overdue bills.' },
  overdueInvoices: { party: 'Customer', heading: 'Overdue invoices', more: 'invoices overdue', empty: 'No overdue invoices.' },
} as const;

export function digestCard(content: DigestContent, opts: PresenterOptions): CardReply {
  const heading = content.cadence === 'daily' ? 'Daily digest' : content.cadence === 'weekly' ? 'Weekly digest' : 'Digest';
  const body: CardElement[] = [title(heading), subtitle(calendarDate(content.today, opts.locale))];
  for (const key of ['dueSoon', 'overdueBills', 'overdueInvoices'] as const) {
    const rows = content[key];
    if (rows) body.push(...digestSection(DIGEST_PARTS[key], rows, opts));
    else
      body.push(
        text('Overdue invoices: not available yet (billbridge is still reading your invoices).', { weight: 'Bolder', separator: true }),
      );
  }
  const cut = content.truncated ? 'some lists were cut short: use the commands for everything' : undefined;
  body.push(footer([`As of ${clockTime(content.asOf, opts)}`, cut, opts.note].filter(Boolean).join(' · ')));
  const parts = [
    `${count(content.dueSoon.length, 'bill')} due in the next 7 days`,
    count(content.overdueBills.length, 'overdue bill'),
    content.overdueInvoices ? count(content.overdueInvoices.length, 'overdue invoice') : undefined,
  ].filter(Boolean);
  return adaptiveCard(body, {
    summary: `${heading}: ${parts.join(', ')}`,
    actions: [
      executeAction('Refresh', { verb: 'run', command: 'digest now', refresh: true }),
      executeAction('Bills due', { verb: 'run', command: 'bills due' }),
      executeAction('Overdue invoices', { verb: 'run', command: 'invoices overdue' }),
    ],
  });
}
