// Vendor and customer cards: one match with its open bills or invoices, or the list of matches to pick from.
import type { Customer, Vendor } from '../../bill/types.js';
import { executeAction, type CardAction, type CardReply } from '../../cards/card.js';
import { calendarDate, daysBetween, money, type FormatOptions } from '../../cards/format.js';
import { amountDue, byDueDate, dueShort, typeableName, type BillLine } from '../payables/cards.js';
import { lazyRows, listCard } from '../../cards/list.js';
import { shortId } from '../../cards/redact.js';
import { billApprovalWords, billPaymentWords, count, invoiceStatusWords, moneyTotal } from '../../cards/words.js';
import type { Invoice } from '../../bill/types.js';

export type PartyKind = 'vendor' | 'customer';

interface PartyCardBase {
  today: string;
  fmt: FormatOptions;
  asOf: number;
  page: number;
  command: string;
  note?: string;
}

function balanceOf(p: Vendor | Customer): number | undefined {
  const b = p.balance?.amount;
  return typeof b === 'number' && Number.isFinite(b) ? b : undefined;
}

function currencyOf(kind: PartyKind, p: Vendor | Customer): string | undefined {
  return kind === 'vendor' ? (p as Vendor).billCurrency : (p as Customer).invoiceCurrency;
}

export interface VendorCardInput extends PartyCardBase {
  vendor: Vendor;
  /** The vendor's unpaid, non-archived bills. */
  openBills: BillLine[];
  /** Other vendors whose names start with what was typed (shown as a hint). */
  others: number;
  typed: string;
}

export function vendorCard(input: VendorCardInput): CardReply {
  const { vendor, fmt, today } = input;
  const cur = vendor.billCurrency;
  const rows = [...input.openBills].sort(byDueDate({}));
  const overdue = rows.filter((b) => daysBetween(b.dueDate.slice(0, 10), today) > 0);
  const openTotal = moneyTotal(
    rows.map((b) => ({ amount: amountDue(b), currency: cur })),
    fmt.locale,
  );
  const totals: Array<[string, string]> = [
    ['Balance in BILL', balanceOf(vendor) === undefined ? '—' : money(balanceOf(vendor), cur, fmt.locale)],
    ['Open bills', `${openTotal} · ${count(rows.length, 'bill', fmt.locale)}`],
    [
      'Overdue',
      overdue.length
        ? `${moneyTotal(
            overdue.map((b) => ({ amount: amountDue(b), currency: cur })),
            fmt.locale,
          )} · ${count(overdue.length, 'bill', fmt.locale)}`
        : 'none',
    ],
  ];
  if (vendor.paymentInformation?.lastPaymentDate && /^\d{4}-\d{2}-\d{2}/.test(vendor.paymentInformation.lastPaymentDate)) {
    totals.push(['Last payment', calendarDate(vendor.paymentInformation.lastPaymentDate.slice(0, 10), fmt.locale)]);
  }
  const notes =
    input.others > 0
      ? [
          {
            text: `${count(input.others, 'other vendor')} also start with "${input.typed}". Type more of the name to see another.`,
            subtle: true,
          },
        ]
      : [];
  return listCard({
    title: vendor.name || `Vendor ${shortId(vendor.id)}`,
    subtitle: `Vendor${vendor.archived ? ' (archived)' : ''} · BILL id ${shortId(vendor.id)}`,
    totals,
    notes,
    columns: [
      { header: 'Invoice #', width: 2 },
      { header: 'Due', width: 3 },
      { header: 'Amount due', width: 2, align: 'Right' },
      { header: 'Status', width: 3 },
    ],
    rows: lazyRows(rows, (b) => [
      b.invoice?.invoiceNumber || `id ${shortId(b.id)}`,
      `${calendarDate(b.dueDate, fmt.locale)} · ${dueShort(b.dueDate, today)}`,
      money(amountDue(b), cur, fmt.locale),
      `${billPaymentWords(b)} · ${billApprovalWords(b)}`,
    ]),
    tones: (i) => {
      const b = rows[i];
      return b && daysBetween(b.dueDate.slice(0, 10), today) > 0 ? 'Attention' : undefined;
    },
    page: input.page,
    noun: 'open bills',
    empty: `No open bills from ${vendor.name}.`,
    command: input.command,
    asOf: input.asOf,
    fmt,
    footnotes: [input.note],
    summary: `${vendor.name}: ${count(rows.length, 'open bill')}, ${openTotal}${overdue.length ? `, ${overdue.length} overdue` : ''}.`,
  });
}

export interface CustomerCardInput extends PartyCardBase {
  customer: Customer;
  /** The customer's unpaid, non-archived invoices. */
  openInvoices: Invoice[];
  others: number;
  typed: string;
}

export function customerCard(input: CustomerCardInput): CardReply {
  const { customer, fmt, today } = input;
  const cur = customer.invoiceCurrency;
  const rows = [...input.openInvoices].sort((a, b) => a.dueDate.localeCompare(b.dueDate) || a.invoiceNumber.localeCompare(b.invoiceNumber));
  const overdue = rows.filter((i) => daysBetween(i.dueDate.slice(0, 10), today) > 0);
  const openTotal = moneyTotal(
    rows.map((i) => ({ amount: i.dueAmount, currency: cur })),
    fmt.locale,
  );
  const totals: Array<[string, string]> = [
    ['Balance in BILL', balanceOf(customer) === undefined ? '—' : money(balanceOf(customer), cur, fmt.locale)],
    ['Open invoices', `${openTotal} · ${count(rows.length, 'invoice', fmt.locale)}`],
    [
      'Overdue',
      overdue.length
        ? `${moneyTotal(
            overdue.map((i) => ({ amount: i.dueAmount, currency: cur })),
            fmt.locale,
          )} · ${count(overdue.length, 'invoice', fmt.locale)}`
        : 'none',
    ],
  ];
  const notes =
    input.others > 0
      ? [
          {
            text: `${count(input.others, 'other customer')} also start with "${input.typed}". Type more of the name to see another.`,
            subtle: true,
          },
        ]
      : [];
  return listCard({
    title: customer.name || `Customer ${shortId(customer.id)}`,
    subtitle: `Customer${customer.archived ? ' (archived)' : ''} · BILL id ${shortId(customer.id)}`,
    totals,
    notes,
    columns: [
      { header: 'Invoice #', width: 2 },
      { header: 'Due', width: 2 },
      { header: 'Amount due', width: 2, align: 'Right' },
      { header: 'Status', width: 3 },
    ],
    rows: lazyRows(rows, (i) => [
      i.invoiceNumber || shortId(i.id),
      calendarDate(i.dueDate, fmt.locale),
      money(i.dueAmount, cur, fmt.locale),
      invoiceStatusWords(i, today).words,
    ]),
    tones: (k) => {
      const i = rows[k];
      return i && invoiceStatusWords(i, today).tone;
    },
    page: input.page,
    noun: 'open invoices',
    empty: `No open invoices for ${customer.name}.`,
    command: input.command,
    asOf: input.asOf,
    fmt,
    footnotes: [input.note],
    summary: `${customer.name}: ${count(rows.length, 'open invoice')}, ${openTotal}${overdue.length ? `, ${overdue.length} overdue` : ''}.`,
  });
}

export interface PartyMatch {
  party: Vendor | Customer;
  open: number;
  /** Open amount (bills due / invoices due). */
  openAmount: number;
}

export interface PartyMatchesInput extends PartyCardBase {
  kind: PartyKind;
  typed: string;
  matches: PartyMatch[];
  /** BILL had more matches than one answer reads. */
  more: boolean;
}

/** Several vendors (or customers) start with what was typed: each with open items and balance, and a button to pick. */
export function partyMatchesCard(input: PartyMatchesInput): CardReply {
  const { fmt, kind } = input;
  const noun = kind === 'vendor' ? 'vendor' : 'customer';
  const open = kind === 'vendor' ? 'Open bills' : 'Open invoices';
  const rows = input.matches;
  const actions: CardAction[] = rows
    .filter((m) => typeableName(m.party.name))
    .slice(0, 4)
    .map((m) =>
      executeAction(m.party.name.length > 28 ? `${m.party.name.slice(0, 27)}…` : m.party.name, {
        verb: 'run',
        command: `${noun} ${m.party.name}`,
      }),
    );
  const n = `${rows.length}${input.more ? '+' : ''}`;
  return listCard({
    title: `${n} ${noun}s start with "${input.typed}"`,
    subtitle: `Type more of the name to pick one, e.g. ${noun} ${rows[0]?.party.name ?? input.typed}`,
    columns: [
      { header: noun === 'vendor' ? 'Vendor' : 'Customer', width: 4 },
      { header: open, width: 2, align: 'Right' },
      { header: 'Amount open', width: 2, align: 'Right', figure: true },
      { header: 'Balance in BILL', width: 2, align: 'Right' },
    ],
    rows: rows.map((m) => {
      const cur = currencyOf(kind, m.party);
      const bal = balanceOf(m.party);
      return [
        m.party.name || shortId(m.party.id),
        m.open.toLocaleString(fmt.locale),
        money(m.openAmount, cur, fmt.locale),
        bal === undefined ? '—' : money(bal, cur, fmt.locale),
      ];
    }),
    page: input.page,
    noun: `${noun}s`,
    empty: `No ${noun} starts with "${input.typed}".`,
    command: input.command,
    asOf: input.asOf,
    fmt,
    footnotes: [input.more ? `Only the first ${rows.length} matches are listed` : undefined, input.note],
    summary: `${n} ${noun}s start with "${input.typed}"; type more of the name to pick one.`,
    actions,
  });
}
