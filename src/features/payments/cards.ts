// AP payments: the last N with vendor, amount, process date and where the money is (singleStatus in words).
import type { Payment } from '../../bill/types.js';
import type { CardReply } from '../../cards/card.js';
import { calendarDate, money } from '../../cards/format.js';
import { listCard, type ListContext } from '../../cards/list.js';
import { vendorName, type ApCardContext } from '../payables/cards.js';
import { count, moneyTotal, paymentMovesMoney, paymentStatusWords, type Amount } from '../../cards/words.js';

export function paymentsCard(input: ApCardContext & ListContext & { payments: Payment[]; limit: number }): CardReply {
  const { fmt, today } = input;
  const rows = input.payments;
  const listed = rows.map((payment) => ({ payment, status: paymentStatusWords(payment.singleStatus) }));
  const attention = listed.filter((l) => l.status.tone === 'Attention').map((l) => l.payment);
  // The total is money that moved or will move; canceled, voided and failed payments stay in the list, not in it.
  const moving = rows.filter(paymentMovesMoney);
  const stopped = rows.filter((p) => !paymentMovesMoney(p));
  const scheduled = moving.filter((p) => p.singleStatus === 'SCHEDULED' || p.processDate > today);
  const amount = (p: Payment): Amount => ({ amount: p.amount, currency: input.currencyOf(p.vendorId) });
  const amounts = (list: Payment[]) => moneyTotal(list.map(amount), fmt.locale);
  const line = (list: Payment[]) => `${amounts(list)} · ${count(list.length, 'payment', fmt.locale)}`;
  const totals: Array<[string, string]> = [['Total', line(moving)]];
  if (scheduled.length > 0) totals.push(['Scheduled', line(scheduled)]);
  if (stopped.length > 0) totals.push(['Not counted', line(stopped)]);
  totals.push(['Need attention', attention.length ? `${count(attention.length, 'payment', fmt.locale)} (${amounts(attention)})` : 'none']);
  const leftOut =
    'The total counts paid, scheduled and in process payments only; canceled, voided and failed ones are listed with their status and left out.';
  return listCard({
    ...input,
    title: input.limit === 1 ? 'The last payment' : `The last ${input.limit} payments`,
    subtitle: 'Bill payments to vendors, newest process date first',
    totals,
    notes: stopped.length > 0 ? [{ text: leftOut, subtle: true }] : [],
    columns: ['Vendor', { header: 'Amount', figure: true }, 'Process date', 'Status'],
    items: listed,
    row: ({ payment: p, status }) => [
      vendorName(p),
      money(p.amount, input.currencyOf(p.vendorId), fmt.locale),
      calendarDate(p.processDate, fmt.locale),
      status.words,
    ],
    tone: ({ status }) => (status.tone === 'Good' ? undefined : status.tone),
    noun: 'payments',
    empty: 'No bill payments in BILL yet.',
    summary:
      rows.length === 0
        ? 'No bill payments yet.'
        : `${count(moving.length, 'payment')}, ${amounts(moving)}${stopped.length ? `; ${stopped.length} canceled, voided or failed not counted` : ''}${attention.length ? `; ${attention.length} need attention` : ''}.`,
  });
}
