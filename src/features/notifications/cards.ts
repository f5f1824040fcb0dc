// Cards for what BILL tells us without being asked: one event in words ("Payment to Acme Supply failed — $4,200.00,
// bill INV-778") with its key facts and a Refresh, and the scheduled digest. Pure: data in, card out.
import type { DigestBill, DigestContent, DigestInvoice, NotificationPresenter, OutboxEvent } from '../../notify/index.js';
import { networkStatusWords } from '../network/cards.js';
import { paymentBillIds, vendorOf } from '../../notify/project.js';
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
  type CardAction,
  type CardElement,
  type CardReply,
  unescapeMarkdown,
} from '../../cards/card.js';
import { calendarDate, clockTime, dateTime, money, sum, type FormatOptions } from '../../cards/format.js';

export interface PresenterOptions extends FormatOptions {
  /** Footer note, e.g. "Demo organisation — simulated data". */
  note?: string;
}

/** Card button verb that re-reads the record of a notification from BILL. */
export const REFRESH_VERB = 'notify.refresh';

type Tone = 'Attention' | 'Warning' | 'Good' | undefined;

interface Said {
  headline: string;
  tone: Tone;
  facts: Array<[string, string]>;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
/** An invoice or bill number in card text: escaped, and kept on one line (it breaks at its hyphens otherwise). */
const ref = (n: string): string => keepTogether(escapeMarkdown(n));
const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** "PARTIAL_PAYMENT" -> "Partial payment". */
function codeWords(code: string | undefined): string {
  if (!code) return 'Unknown';
  const flat = code
    .replace(/[_\s]+/g, ' ')
    .trim()
    .toLowerCase()
    .slice(0, 60);
  return flat ? flat.charAt(0).toUpperCase() + flat.slice(1) : 'Unknown';
}

const FAILED_PAYMENT = new Set([
  'FAILED',
  'FUNDING_FAILED_VOIDED',
  'FUNDING_FAILED_ACTION_NEEDED',
  'DISBURSEMENT_FAILED_ACTION_NEEDED',
  'DISBURSEMENT_FAILED_VENDOR_BANK_REJECTED',
]);

/** What a payment's single status means for the person who paid. */
function paymentOutcome(status: string | undefined): { words: string; tone: Tone } {
  switch (status) {
    case 'SCHEDULED':
      return { words: 'is scheduled', tone: undefined };
    case 'APPROVING':
      return { words: 'is waiting for approval', tone: 'Warning' };
    case 'FUNDING_STARTED':
    case 'PROCESSED':
    case 'PAID':
      return { words: 'is being processed', tone: undefined };
    case 'SENT':
      return { words: 'was sent', tone: 'Good' };
    case 'DELIVERED':
    case 'CLEARED':
      return { words: 'was delivered', tone: 'Good' };
    case 'CANCELED':
    case 'CANCELLED':
      return { words: 'was cancelled', tone: 'Warning' };
    case 'VOIDED':
    case 'VOID_PENDING':
      return { words: 'was voided', tone: 'Warning' };
    case 'DISBURSEMENT_ON_HOLD':
      return { words: 'is on hold', tone: 'Warning' };
    case 'FUNDS_ESCHEATED':
      return { words: 'was not claimed by the vendor', tone: 'Attention' };
    case 'EXPIRING':
      return { words: 'is about to expire', tone: 'Warning' };
    default:
      if (status && FAILED_PAYMENT.has(status)) return { words: 'failed', tone: 'Attention' };
      return { words: `changed (${codeWords(status).toLowerCase()})`, tone: undefined };
  }
}

function billsPhrase(ids: string[], numbers: Record<string, string> | undefined): string | undefined {
  if (ids.length === 0) return undefined;
  const names = ids.slice(0, 3).map((id) => {
    const number = numbers?.[id];
    return number ? ref(number) : shortRef(id);
  });
  const more = ids.length > 3 ? ` and ${ids.length - 3} more` : '';
  return `${ids.length === 1 ? 'bill' : 'bills'} ${names.join(', ')}${more}`;
}

function sayBill(ev: OutboxEvent, fmt: FormatOptions): Said {
  const e = ev.entity;
  const vendor = escapeMarkdown(str(e.vendorName) ?? ev.enrichment?.vendorName ?? 'a vendor');
  const number = str(obj(e.invoice).invoiceNumber);
  const cur = ev.enrichment?.currency;
  const amount = num(e.amount);
  const due = num(e.dueAmount) ?? amount;
  const dueDate = str(e.dueDate);
  const label = number ? `Bill ${ref(number)}` : 'A bill';
  const lower = number ? `bill ${ref(number)}` : 'a bill';
  const rows: Array<[string, string]> = [['Vendor', vendor]];
  if (number) rows.push(['Invoice number', ref(number)]);
  if (amount !== undefined) rows.push(['Amount', money(amount, cur, fmt.locale)]);
  if (due !== undefined && due !== amount) rows.push(['Still due', money(due, cur, fmt.locale)]);
  if (dueDate) rows.push(['Due', calendarDate(dueDate, fmt.locale)]);
  if (str(e.paymentStatus))
    rows.push([
      'Payment',
      str(e.paymentStatus) === 'UNPAID' && (num(e.paidAmount) ?? 0) > 0 ? 'Partly paid' : codeWords(str(e.paymentStatus)),
    ]);
  const approval = str(e.approvalStatus);
  if (approval)
    rows.push([
      'Approval',
      ({ ASSIGNED: 'Awaiting approval', UNASSIGNED: 'No approvers' } as Record<string, string>)[approval] ?? codeWords(approval),
    ]);
  const money1 = (n: number | undefined) => (n === undefined ? '' : ` — ${money(n, cur, fmt.locale)}`);
  switch (ev.type) {
    case 'bill.created':
      return {
        headline: `New bill from ${vendor}${money1(amount)}${number ? `, invoice ${ref(number)}` : ''}${dueDate ? `, due ${calendarDate(dueDate, fmt.locale)}` : ''}`,
        tone: undefined,
        facts: rows,
      };
    case 'bill.archived':
      return { headline: `${label} from ${vendor} was archived${money1(amount)}`, tone: 'Warning', facts: rows };
    case 'bill.restored':
      return { headline: `${label} from ${vendor} was restored${money1(amount)}`, tone: undefined, facts: rows };
    default: {
      if (e.archived === true) return { headline: `${label} from ${vendor} is archived${money1(amount)}`, tone: 'Warning', facts: rows };
      if (e.paymentStatus === 'PAID') return { headline: `${label} from ${vendor} is paid${money1(amount)}`, tone: 'Good', facts: rows };
      if (e.paymentStatus === 'SCHEDULED')
        return {
          headline: `Payment scheduled for ${lower} from ${vendor}${money1(num(e.scheduledAmount) ?? due)}`,
          tone: undefined,
          facts: rows,
        };
      if (e.approvalStatus === 'DENIED')
        return { headline: `${label} from ${vendor} was denied${money1(amount)}`, tone: 'Attention', facts: rows };
      return {
        headline: `${label} from ${vendor} changed${money1(due)}${dueDate ? ` due ${calendarDate(dueDate, fmt.locale)}` : ''}`,
        tone: undefined,
        facts: rows,
      };
    }
  }
}

function sayPayment(ev: OutboxEvent, fmt: FormatOptions): Said {
  const e = ev.entity;
  const vendor = escapeMarkdown(vendorOf(e).name ?? ev.enrichment?.vendorName ?? 'a vendor');
  const cur = ev.enrichment?.currency ?? str(e.currency);
  const amount = num(e.amount);
  const bills = billsPhrase(paymentBillIds(e), ev.enrichment?.billNumbers);
  const tail = [amount !== undefined ? money(amount, cur, fmt.locale) : undefined, bills].filter(Boolean).join(', ');
  const rows: Array<[string, string]> = [['Vendor', vendor]];
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
    return {
      headline: `AutoPay to ${vendor} failed${why ? ` — ${escapeMarkdown(why.slice(0, 120))}` : ''}`,
      tone: 'Attention',
      facts: rows,
    };
  }
  const status = str(e.singleStatus) ?? str(e.status);
  if (status) rows.push(['Status', codeWords(status)]);
  const outcome = ev.type === 'payment.failed' ? { words: 'failed', tone: 'Attention' as Tone } : paymentOutcome(status);
  if (ev.type === 'payment.failed' && why) rows.push(['Reason', escapeMarkdown(why.slice(0, 200))]);
  const when = outcome.words === 'is scheduled' && str(e.processDate) ? ` for ${calendarDate(str(e.processDate), fmt.locale)}` : '';
  return { headline: `Payment to ${vendor} ${outcome.words}${when}${tail ? ` — ${tail}` : ''}`, tone: outcome.tone, facts: rows };
}

function sayInvoice(ev: OutboxEvent, fmt: FormatOptions): Said {
  const e = ev.entity;
  const customer = escapeMarkdown(ev.enrichment?.customerName ?? str(obj(e.customer).name) ?? 'a customer');
  const number = str(e.invoiceNumber);
  const label = number ? `Invoice ${ref(number)}` : 'An invoice';
  const lower = number ? `invoice ${ref(number)}` : 'an invoice';
  const cur = ev.enrichment?.currency;
  const total = num(e.totalAmount);
  const due = num(e.dueAmount);
  const dueDate = str(e.dueDate);
  const rows: Array<[string, string]> = [['Customer', customer]];
  if (number) rows.push(['Invoice', ref(number)]);
  if (total !== undefined) rows.push(['Total', money(total, cur, fmt.locale)]);
  if (due !== undefined) rows.push(['Still due', money(due, cur, fmt.locale)]);
  if (dueDate) rows.push(['Due', calendarDate(dueDate, fmt.locale)]);
  if (str(e.status)) rows.push(['Status', codeWords(str(e.status))]);
  switch (ev.type) {
    case 'invoice.created':
      return {
        headline: `${label} to ${customer} was created${total !== undefined ? ` — ${money(total, cur, fmt.locale)}` : ''}${dueDate ? `, due ${calendarDate(dueDate, fmt.locale)}` : ''}`,
        tone: undefined,
        facts: rows,
      };
    case 'invoice.archived':
      return { headline: `${label} to ${customer} was archived (cancelled)`, tone: 'Warning', facts: rows };
    case 'invoice.restored':
      return { headline: `${label} to ${customer} was restored`, tone: undefined, facts: rows };
    default: {
      if (e.archived === true) return { headline: `${label} to ${customer} is archived (cancelled)`, tone: 'Warning', facts: rows };
      if (e.status === 'PAID' || (due === 0 && total !== undefined && total > 0)) {
        return {
          headline: `${label} from ${customer} is paid in full${total !== undefined ? ` — ${money(total, cur, fmt.locale)}` : ''}`,
          tone: 'Good',
          facts: rows,
        };
      }
      if (e.status === 'PARTIAL_PAYMENT' && total !== undefined && due !== undefined) {
        return {
          headline: `Payment received on ${lower} from ${customer} — ${money(sum([total, -due]), cur, fmt.locale)} of ${money(total, cur, fmt.locale)} paid, ${money(due, cur, fmt.locale)} still due`,
          tone: 'Good',
          facts: rows,
        };
      }
      return {
        headline: `${label} to ${customer} changed${due !== undefined ? ` — ${money(due, cur, fmt.locale)} due` : ''}${dueDate ? ` ${calendarDate(dueDate, fmt.locale)}` : ''}`,
        tone: undefined,
        facts: rows,
      };
    }
  }
}

function sayVendor(ev: OutboxEvent): Said {
  const e = ev.entity;
  const name = escapeMarkdown(str(e.name) ?? 'A vendor');
  const rows: Array<[string, string]> = [['Vendor', name]];
  const currency = str(e.billCurrency);
  if (currency) rows.push(['Currency', escapeMarkdown(currency)]);
  const network = networkStatusWords(str(e.networkStatus));
  if (network) rows.push(['BILL network', escapeMarkdown(network)]);
  const said: Record<string, string> = {
    'vendor.created': `New vendor: ${name}`,
    'vendor.archived': `Vendor ${name} was archived`,
    'vendor.restored': `Vendor ${name} was restored`,
  };
  return {
    headline: said[ev.type] ?? `Vendor ${name} was updated`,
    tone: ev.type === 'vendor.archived' ? 'Warning' : undefined,
    facts: rows,
  };
}

function saySpend(ev: OutboxEvent, fmt: FormatOptions): Said {
  const e = ev.entity;
  const who = escapeMarkdown(str(e.userName) ?? 'someone');
  const merchantName = str(e.merchantName);
  const merchant = merchantName ? escapeMarkdown(merchantName) : undefined;
  const amount = num(e.amount);
  const amountText = amount !== undefined ? money(amount, str(e.currency), fmt.locale) : undefined;
  const rows: Array<[string, string]> = [];
  if (merchant) rows.push(['Merchant', merchant]);
  if (amountText) rows.push(['Amount', amountText]);
  if (str(e.userName)) rows.push(['By', who]);
  const budget = str(e.budgetName);
  if (budget) rows.push(['Budget', escapeMarkdown(budget)]);
  if (str(e.status)) rows.push(['Status', codeWords(str(e.status))]);
  const at = merchant ? ` at ${merchant}` : '';
  switch (ev.type) {
    case 'spend.transaction.updated': {
      const reason = str(e.declineReason);
      const declined = e.transactionType === 'DECLINE' || reason !== undefined;
      if (reason) rows.push(['Declined because', escapeMarkdown(reason)]);
      return {
        headline: `Card ${declined ? 'payment declined' : 'transaction'}${at}${amountText ? ` — ${amountText}` : ''}${str(e.userName) ? ` by ${who}` : ''}`,
        tone: declined ? 'Attention' : undefined,
        facts: rows,
      };
    }
    case 'spend.reimbursement.created':
      return { headline: `Reimbursement request from ${who}${amountText ? ` — ${amountText}` : ''}${at}`, tone: undefined, facts: rows };
    case 'spend.reimbursement.deleted':
      return { headline: `Reimbursement from ${who} was deleted${amountText ? ` — ${amountText}` : ''}`, tone: 'Warning', facts: rows };
    case 'spend.three-ds-challenge.created':
      return {
        headline: `A card payment${at} needs a 3-D Secure check${amountText ? ` — ${amountText}` : ''}`,
        tone: 'Warning',
        facts: rows,
      };
    default:
      return {
        headline: `Reimbursement from ${who} is now ${codeWords(str(e.status)).toLowerCase()}${amountText ? ` — ${amountText}` : ''}`,
        tone: e.status === 'PAYMENT_FAILED' ? 'Attention' : undefined,
        facts: rows,
      };
  }
}

function describeEvent(ev: OutboxEvent, fmt: FormatOptions): Said {
  switch (ev.entityType) {
    case 'bill':
      return sayBill(ev, fmt);
    case 'payment':
      return sayPayment(ev, fmt);
    case 'invoice':
      return sayInvoice(ev, fmt);
    case 'vendor':
      return sayVendor(ev);
    default:
      return saySpend(ev, fmt);
  }
}

/** Refresh re-reads the record from BILL; Spend & Expense records are refreshed with the `spend` command. */
function refreshAction(ev: OutboxEvent): CardAction | undefined {
  const id = str(ev.entity.id);
  if (ev.entityType === 'spend') return executeAction('Refresh', { verb: 'run', command: 'spend', refresh: true });
  if (!id) return undefined;
  return executeAction('Refresh', { verb: REFRESH_VERB, entity: ev.entityType, id, type: ev.type });
}

/** The card for one BILL event. `refreshedAt` marks a card rebuilt from BILL's current record by Refresh. */
export function notificationCard(ev: OutboxEvent, opts: PresenterOptions, extra: { refreshedAt?: number } = {}): CardReply {
  const said = describeEvent(ev, opts);
  const body: CardElement[] = [text(said.headline, { weight: 'Bolder', size: 'Medium', ...(said.tone ? { color: said.tone } : {}) })];
  if (said.facts.length > 0) body.push(facts(said.facts));
  const when =
    extra.refreshedAt !== undefined
      ? `Refreshed from BILL ${dateTime(extra.refreshedAt, opts)}`
      : `BILL event ${escapeMarkdown(ev.type)} · ${dateTime(ev.receivedAt, opts)}`;
  body.push(footer([when, opts.note].filter(Boolean).join(' · ')));
  const refresh = refreshAction(ev);
  return adaptiveCard(body, { summary: unescapeMarkdown(said.headline).replace(/\u2060/g, ''), actions: refresh ? [refresh] : undefined });
}

/** Amounts per currency ("$1,200.00 + €300.00"): never adds two currencies together. */
function totals(rows: Array<{ dueAmount: number; currency?: string }>, locale: string): string {
  const by = new Map<string, number[]>();
  for (const r of rows) {
    const c = r.currency && /^[A-Z]{3}$/.test(r.currency) ? r.currency : 'USD';
    by.set(c, [...(by.get(c) ?? []), r.dueAmount]);
  }
  if (by.size === 0) return money(0, 'USD', locale);
  return [...by].map(([c, amounts]) => money(sum(amounts), c, locale)).join(' + ');
}

const DIGEST_ROWS = 5;

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** A digest's table of bills or invoices: whom, which, when due, how much (the first DIGEST_ROWS). */
function dueTable(headers: { party: string; record: string }, rows: Array<DigestBill | DigestInvoice>, fmt: FormatOptions): CardElement {
  return table(
    [
      { header: headers.party, width: 4 },
      { header: headers.record, width: 3 },
      { header: 'Due', width: 3 },
      { header: 'Amount', width: 3, align: 'Right' },
    ],
    rows
      .slice(0, DIGEST_ROWS)
      .map((r) => [
        escapeMarkdown(('vendorName' in r ? r.vendorName : r.customerName) || `Unknown ${headers.party.toLowerCase()}`),
        r.number ? ref(r.number) : shortRef(r.id),
        calendarDate(r.dueDate, fmt.locale),
        money(r.dueAmount, r.currency, fmt.locale),
      ]),
  );
}

const billTable = (rows: DigestBill[], fmt: FormatOptions) => dueTable({ party: 'Vendor', record: 'Bill' }, rows, fmt);
const invoiceTable = (rows: DigestInvoice[], fmt: FormatOptions) => dueTable({ party: 'Customer', record: 'Invoice' }, rows, fmt);

function section(
  heading: string,
  rows: Array<{ dueAmount: number; currency?: string }>,
  tableEl: CardElement,
  more: string,
  empty: string,
  fmt: FormatOptions,
  tone?: Tone,
): CardElement[] {
  const out: CardElement[] = [
    text(`${heading}: ${rows.length === 0 ? 'none' : `${rows.length}, ${totals(rows, fmt.locale)}`}`, {
      weight: 'Bolder',
      separator: true,
      ...(tone && rows.length > 0 ? { color: tone } : {}),
    }),
  ];
  if (rows.length === 0) out.push(text(empty, { subtle: true }));
  else {
    out.push(tableEl);
    if (rows.length > DIGEST_ROWS) out.push(text(`…and ${rows.length - DIGEST_ROWS} more: type **${more}**.`, { subtle: true }));
  }
  return out;
}

export function digestCard(content: DigestContent, opts: PresenterOptions): CardReply {
  const heading = content.cadence === 'daily' ? 'Daily digest' : content.cadence === 'weekly' ? 'Weekly digest' : 'Digest';
  const body: CardElement[] = [title(heading), subtitle(calendarDate(content.today, opts.locale))];
  body.push(
    ...section(
      'Bills due in the next 7 days',
      content.dueSoon,
      billTable(content.dueSoon, opts),
      'bills due',
      'No unpaid bills due in the next 7 days.',
      opts,
    ),
  );
  body.push(
    ...section(
      'Overdue bills',
      content.overdueBills,
      billTable(content.overdueBills, opts),
      'bills overdue',
      'No overdue bills.',
      opts,
      'Attention',
    ),
  );
  if (content.overdueInvoices) {
    body.push(
      ...section(
        'Overdue invoices',
        content.overdueInvoices,
        invoiceTable(content.overdueInvoices, opts),
        'invoices overdue',
        'No overdue invoices.',
        opts,
        'Warning',
      ),
    );
  } else {
    body.push(
      text('Overdue invoices: not available yet (billbridge is still reading your invoices).', { weight: 'Bolder', separator: true }),
    );
  }
  body.push(
    footer(
      [
        `As of ${clockTime(content.asOf, opts)}`,
        content.truncated ? 'some lists were cut short: use the commands for everything' : undefined,
        opts.note,
      ]
        .filter(Boolean)
        .join(' · '),
    ),
  );
  const parts = [
    `${plural(content.dueSoon.length, 'bill')} due in the next 7 days`,
    plural(content.overdueBills.length, 'overdue bill'),
    content.overdueInvoices ? plural(content.overdueInvoices.length, 'overdue invoice') : undefined,
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

/** The cards the notification worker and the digest scheduler post (wired in app.ts). */
export function notificationPresenter(opts: PresenterOptions): NotificationPresenter {
  return {
    event: (ev) => notificationCard(ev, opts),
    digest: (content) => digestCard(content, opts),
  };
}
