// Accounts receivable cards: one invoice; overdue receivables aged by customer, with a chart. Pure: data in, card out.
import type { Invoice } from '../../bill/types.js';
import { executeAction, shortId, type CardReply } from '../../cards/card.js';
import { byCurrency, verticalBarChart } from '../../cards/chart.js';
import { calendarDate, daysBetween, money, sum } from '../../cards/format.js';
import { calendarDay } from '../../infra/calendar.js';
import { AGING_BUCKETS, agingBucket, partyArgument } from '../payables/cards.js';
import { detailCard, listCard, plainFacts, type AsOf, type DetailCardSpec, type ListContext } from '../../cards/list.js';
import { codeWords, count, invoiceStatusWords, moneyTotal } from '../../cards/words.js';

interface ArCardContext extends AsOf {
  today: string;
  /** A customer's name and invoice currency, when known. */
  customerOf: (customerId: string) => { name: string; currency?: string } | undefined;
}

/** The customer's name, or its shortened id; BILL records have come without a customer id. */
function customerName(customerId: string | undefined, ctx: Pick<ArCardContext, 'customerOf'>): string {
  return (customerId ? ctx.customerOf(customerId)?.name : undefined) || `Customer ${shortId(customerId ?? '')}`;
}

export function invoiceCard(input: ArCardContext & { invoice: Invoice; command: string }): CardReply {
  const { invoice: inv, fmt, today } = input;
  const customer = input.customerOf(inv.customerId);
  const customerArgument = customer?.name ? partyArgument({ id: inv.customerId || undefined, name: customer.name }) : undefined;
  const name = customerName(inv.customerId, input);
  const m = (n: number | undefined) => money(n ?? 0, customer?.currency, fmt.locale);
  const status = invoiceStatusWords(inv, today);
  const sections: DetailCardSpec['sections'] = [];
  const payments = inv.payments ?? [];
  if (payments.length > 0) {
    const received = sum(payments.filter((p) => p.status !== 'VOID').map((p) => p.amount));
    const lines = [...payments]
      .sort((a, b) => b.date.localeCompare(a.date))
      .slice(0, 6)
      .map((p): [string, string] => [calendarDate(p.date, fmt.locale), `${m(p.amount)} · ${codeWords(p.status)}`]);
    if (payments.length > 6) lines.push(['…', `${payments.length - 6} more`]);
    sections.push({ heading: `Payments received: ${m(received)}`, facts: lines });
  } else {
    sections.push({ note: 'No payments received yet.', separator: true });
  }
  const items = inv.invoiceLineItems ?? [];
  if (items.length > 0) {
    const shown = items.slice(0, 4).map((li) => li.description || 'Line item');
    sections.push({ note: `Lines: ${shown.join('; ')}${items.length > 4 ? `; and ${items.length - 4} more` : ''}` });
  }
  return detailCard({
    ...input,
    title: `Invoice ${inv.invoiceNumber || shortId(inv.id)}`,
    subtitle: name,
    status: status.words,
    facts: [
      [
        ['Customer', name],
        ['Invoice date', calendarDate(inv.invoiceDate, fmt.locale)],
        ['Due date', calendarDate(inv.dueDate, fmt.locale)],
        ['Total', m(inv.totalAmount)],
        ['Amount due', m(inv.dueAmount)],
        (inv.scheduledAmount ?? 0) > 0 ? ['Payment scheduled', m(inv.scheduledAmount)] : undefined,
        (inv.creditAmount ?? 0) > 0 ? ['Credits applied', m(inv.creditAmount)] : undefined,
        ['BILL id', shortId(inv.id)],
      ],
    ],
    sections,
    summary: `Invoice ${inv.invoiceNumber} for ${name}: ${m(inv.dueAmount)} due of ${m(inv.totalAmount)}, ${status.words.toLowerCase()}.`,
    actions: customerArgument ? [executeAction('This customer', { verb: 'run', command: `customer ${customerArgument}` })] : [],
  });
}

/** The invoice fields aging needs (the invoice index rows have them). */
export type AgingInvoice = Pick<Invoice, 'id' | 'customerId' | 'dueDate' | 'dueAmount' | 'status' | 'archived'> & { totalAmount?: number };

/** An invoice still owed: not archived, not paid, something due (what `customer` lists). */
export function isOwed(inv: Pick<Invoice, 'archived' | 'status' | 'dueAmount'>): boolean {
  return !inv.archived && inv.status !== 'PAID' && inv.dueAmount > 0;
}

/** Owed and due before today: what `invoices overdue` counts. */
export function isOverdue(inv: AgingInvoice, today: string): boolean {
  const day = calendarDay(inv.dueDate);
  return isOwed(inv) && day !== undefined && day < today;
}

/** Each overdue invoice's aging bucket (AGING_BUCKETS index), amount due and currency: the card's chart and the dashboard tab's. */
export function agedOverdue(invoices: AgingInvoice[], today: string, currencyOf: (customerId: string) => string | undefined) {
  return invoices
    .filter((i) => isOverdue(i, today))
    .map((i) => ({
      customerId: i.customerId,
      bucket: agingBucket(daysBetween(i.dueDate.slice(0, 10), today)),
      amount: i.dueAmount,
      currency: currencyOf(i.customerId),
    }));
}

/** Overdue receivables of any `invoices`: the total, the four aging buckets (a bar chart per currency where Teams draws
 * charts; the bucket lines anywhere else) and the customers, largest first, with what each owes per bucket. */
export function invoicesOverdueCard(input: ArCardContext & ListContext & { invoices: AgingInvoice[] }): CardReply {
  const { fmt, today } = input;
  const aged = agedOverdue(input.invoices, today, (id) => input.customerOf(id)?.currency);
  // Each customer's amounts due, per aging bucket.
  const byCustomer = new Map<string, number[][]>();
  for (const a of aged) {
    const buckets = byCustomer.get(a.customerId) ?? AGING_BUCKETS.map((): number[] => []);
    buckets[a.bucket]?.push(a.amount);
    byCustomer.set(a.customerId, buckets);
  }
  const customers = [...byCustomer].map(([customerId, buckets]) => ({
    customerId,
    name: customerName(customerId, input),
    currency: input.customerOf(customerId)?.currency,
    buckets,
    invoices: buckets.flat().length,
    total: sum(buckets.flat()),
  }));
  customers.sort((a, b) => b.total - a.total || a.name.localeCompare(b.name) || a.customerId.localeCompare(b.customerId));
  const total = moneyTotal(aged, fmt.locale);
  const overdueLine: [string, string] = [
    'Overdue',
    `${total} · ${count(aged.length, 'invoice', fmt.locale)} · ${count(customers.length, 'customer', fmt.locale)}`,
  ];
  const bucketLines = AGING_BUCKETS.map((bucket, i): [string, string] => {
    const list = aged.filter((a) => a.bucket === i);
    return [bucket.label, list.length ? `${moneyTotal(list, fmt.locale)} · ${count(list.length, 'invoice', fmt.locale)}` : '—'];
  });
  // The bucket lines are the chart's fallback: a host without charts shows the same lines it always did.
  const currencies = byCurrency(aged, (a) => a.currency);
  const charts = currencies.map(([code, list], n) =>
    verticalBarChart({
      title: currencies.length > 1 ? `Overdue by days past due, ${code}` : 'Overdue by days past due',
      xAxisTitle: 'Days past due',
      yAxisTitle: code,
      colorSet: 'sequentialred',
      points: AGING_BUCKETS.map((bucket, i) => ({
        label: bucket.label,
        value: sum(list.filter((a) => a.bucket === i).map((a) => a.amount)),
      })),
      fallback: n === 0 ? plainFacts(bucketLines) : 'drop',
    }),
  );
  return listCard({
    ...input,
    title: 'Overdue receivables',
    subtitle: `Unpaid invoices due before ${calendarDate(today, fmt.locale)}, by customer · days past due`,
    totals: charts.length > 0 ? [overdueLine] : [overdueLine, ...bucketLines],
    charts,
    columns: ['Customer', ...AGING_BUCKETS.map((b) => b.label.replace(' days', '')), { header: 'Total', figure: true }],
    items: customers,
    row: (c) => [
      c.name,
      ...c.buckets.map((list) => (list.length ? money(sum(list), c.currency, fmt.locale) : '—')),
      `${money(c.total, c.currency, fmt.locale)} (${c.invoices})`,
    ],
    tone: (c) => ((c.buckets[3]?.length ?? 0) > 0 ? 'Attention' : undefined),
    noun: 'customers',
    empty: 'No overdue invoices. Every open invoice is due today or later.',
    summary:
      aged.length === 0
        ? 'No overdue invoices.'
        : `${count(aged.length, 'overdue invoice')} from ${count(customers.length, 'customer')}, ${total}.`,
  });
}
