// Vendor and customer cards: one match with its open bills or invoices, or the list of matches to pick from.
import type { Bill, Customer, Invoice, Vendor } from '../../bill/types.js';
import { executeAction, shortId, shorten, type CardAction, type CardReply } from '../../cards/card.js';
import { currencyOf, type PartyKind } from '../../mirror/records.js';
import { calendarDay } from '../../infra/calendar.js';
import { calendarDate, daysBetween, money } from '../../cards/format.js';
import { amountDue, byDueDate, openBillRow, OPEN_ITEM_COLUMNS, partyArgument } from '../payables/cards.js';
import { listCard, type ListContext } from '../../cards/list.js';
import { count, invoiceStatusWords, moneyTotal, type Tone } from '../../cards/words.js';
import { networkStatusWords } from '../network/cards.js';

/** "Balance in BILL" in the party's currency, or a dash when BILL gave none. */
export function balanceWords(p: Vendor | Customer, locale: string): string {
  const b = p.balance?.amount;
  return typeof b === 'number' && Number.isFinite(b) ? money(b, currencyOf(p), locale) : '—';
}

/** What the card of one vendor or customer shows besides the party and its open items. */
export interface OneMatchBase extends ListContext {
  today: string;
  /** Other vendors or customers whose names start with what was typed (shown as a hint). */
  others: number;
  typed: string;
  /** The party's BILL network status (default: a vendor's own) and, if not connected, the signed Invite button. */
  network?: { status?: string; invite?: CardAction };
}

/** Each kind's words; unknownStatus: a vendor's network status BILL did not give, a customer's not read (no card does). */
const WORDS: Record<PartyKind, { label: string; noun: 'bill' | 'invoice'; unknownStatus: string }> = {
  vendor: { label: 'Vendor', noun: 'bill', unknownStatus: 'not known' },
  customer: { label: 'Customer', noun: 'invoice', unknownStatus: 'not checked (Invite checks it in BILL)' },
};

/** Due before today: the totals count it overdue and a vendor card marks its row. */
const pastDue = (item: { dueDate: string }, today: string) => daysBetween(item.dueDate.slice(0, 10), today) > 0;

interface OpenItems<T> {
  items: T[];
  amountOf(item: T): number;
  row(item: T, currency: string | undefined): string[];
  tone: (item: T) => Tone;
  empty: string;
  /** Lines after Overdue in the totals (a vendor's last payment). */
  moreTotals?: Array<[string, string]>;
}

/** One vendor or customer: balance, open and overdue totals, then the open items soonest due first. */
function partyCard<T extends { dueDate: string }>(
  kind: PartyKind,
  party: Vendor | Customer,
  input: OneMatchBase,
  open: OpenItems<T>,
): CardReply {
  const { fmt, today } = input;
  const { label, noun, unknownStatus } = WORDS[kind];
  const cur = currencyOf(party);
  const rows = open.items;
  const overdue = rows.filter((i) => pastDue(i, today));
  const total = (items: T[]) => {
    const amounts = items.map((i) => ({ amount: open.amountOf(i), currency: cur }));
    return moneyTotal(amounts, fmt.locale);
  };
  const openTotal = total(rows);
  const totals: Array<[string, string]> = [
    ['Balance in BILL', balanceWords(party, fmt.locale)],
    [`Open ${noun}s`, `${openTotal} · ${count(rows.length, noun, fmt.locale)}`],
    ['Overdue', overdue.length ? `${total(overdue)} · ${count(overdue.length, noun, fmt.locale)}` : 'none'],
    ...(open.moreTotals ?? []),
    ['BILL network', networkStatusWords(input.network?.status ?? (party as Vendor).networkStatus) ?? unknownStatus],
  ];
  const others = `${count(input.others, `other ${kind}`)} also start with "${input.typed}". Type more of the name to see another.`;
  const notes = input.others > 0 ? [{ text: others, subtle: true }] : [];
  return listCard({
    ...input,
    title: party.name || `${label} ${shortId(party.id)}`,
    subtitle: `${label}${party.archived ? ' (archived)' : ''} · BILL id ${shortId(party.id)}`,
    totals,
    notes,
    columns: OPEN_ITEM_COLUMNS,
    items: rows,
    row: (i) => open.row(i, cur),
    tone: open.tone,
    noun: `open ${noun}s`,
    empty: open.empty,
    summary: `${party.name}: ${count(rows.length, `open ${noun}`)}, ${openTotal}${overdue.length ? `, ${overdue.length} overdue` : ''}.`,
    actions: input.network?.invite && !party.archived ? [input.network.invite] : undefined,
  });
}

/** A vendor with its unpaid, non-archived bills. */
export function vendorCard(vendor: Vendor, openBills: Bill[], input: OneMatchBase): CardReply {
  const { fmt, today } = input;
  const last = vendor.paymentInformation?.lastPaymentDate;
  return partyCard<Bill>('vendor', vendor, input, {
    items: [...openBills].sort(byDueDate),
    amountOf: amountDue,
    row: (b, cur) => openBillRow(b, today, fmt, cur),
    tone: (b) => (pastDue(b, today) ? 'Attention' : undefined),
    empty: `No open bills from ${vendor.name}.`,
    moreTotals: calendarDay(last) ? [['Last payment', calendarDate(last, fmt.locale)]] : [],
  });
}

/** A customer with its unpaid, non-archived invoices. */
export function customerCard(customer: Customer, openInvoices: Invoice[], input: OneMatchBase): CardReply {
  const { fmt, today } = input;
  return partyCard<Invoice>('customer', customer, input, {
    items: [...openInvoices].sort((a, b) => a.dueDate.localeCompare(b.dueDate) || a.invoiceNumber.localeCompare(b.invoiceNumber)),
    amountOf: (i) => i.dueAmount,
    row: (i, cur) => [
      i.invoiceNumber || shortId(i.id),
      calendarDate(i.dueDate, fmt.locale),
      money(i.dueAmount, cur, fmt.locale),
      invoiceStatusWords(i, today).words,
    ],
    tone: (i) => invoiceStatusWords(i, today).tone,
    empty: `No open invoices for ${customer.name}.`,
  });
}

export interface PartyMatchesInput extends ListContext {
  kind: PartyKind;
  typed: string;
  /** Each party with its open bills or invoices: how many, and the amount due on them. */
  matches: Array<{ party: Vendor | Customer; open: number; openAmount: number }>;
  /** BILL had more matches than one answer reads. */
  more: boolean;
}

/** Several vendors (or customers) start with what was typed: each with open items and balance, and a button to pick. */
export function partyMatchesCard(input: PartyMatchesInput): CardReply {
  const { fmt, kind } = input;
  const rows = input.matches;
  const actions: CardAction[] = rows
    .slice(0, 4)
    .map((m) => executeAction(shorten(m.party.name, 28), { verb: 'run', command: `${kind} ${partyArgument(m.party)}` }));
  const n = `${rows.length}${input.more ? '+' : ''}`;
  return listCard({
    ...input,
    title: `${n} ${kind}s start with "${input.typed}"`,
    subtitle: `Type more of the name to pick one, e.g. ${kind} ${rows[0]?.party.name ?? input.typed}`,
    columns: [WORDS[kind].label, `Open ${WORDS[kind].noun}s`, { header: 'Amount open', figure: true }, 'Balance in BILL'],
    items: rows,
    row: ({ party, open, openAmount }) => [
      party.name || shortId(party.id),
      open.toLocaleString(fmt.locale),
      money(openAmount, currencyOf(party), fmt.locale),
      balanceWords(party, fmt.locale),
    ],
    noun: `${kind}s`,
    empty: `No ${kind} starts with "${input.typed}".`,
    footnotes: [input.more ? `Only the first ${rows.length} matches are listed` : undefined],
    summary: `${n} ${kind}s start with "${input.typed}"; type more of the name to pick one.`,
    actions,
  });
}
