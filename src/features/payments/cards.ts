// AP payments: the last N with vendor, amount, process date and where the money is (singleStatus in words).
import type { Payment } from '../../bill/types.js';
import type { CardReply } from '../../cards/card.js';
import { calendarDate, type FormatOptions } from '../../cards/format.js';
import { money } from '../../cards/format.js';
import { listCard } from '../../cards/list.js';
import { shortId } from '../../cards/redact.js';
import { count, moneyTotal, paymentMovesMoney, paymentStatusWords } from '../../cards/words.js';

export interface PaymentsCardInput {
  payments: Payment[];
  /** How many were asked for. */
  limit: number;
  today: string;
  fmt: FormatOptions;
  asOf: number;
  currencyOf: (vendorId: string) => string | undefined;
  page: number;
  command: string;
  note?: string;
}

export function paymentsCard(input: PaymentsCardInput): CardReply {
  const { fmt, today } = input;
  const rows = input.payments;
  const listed = rows.map((payment) => ({ payment, status: paymentStatusWords(payment.singleStatus) }));
  const attention = listed.filter((l) => l.status.tone === 'Attention').map((l) => l.payment);
  // The total is money that moved or will move; canceled, voided and failed payments stay in the list, not in it.
  const moving = rows.filter(paymentMovesMoney);
  const stopped = rows.filter((p) => !paymentMovesMoney(p));
  const scheduled = moving.filter((p) => p.singleStatus === 'SCHEDULED' || p.processDate > today);
  const amounts = (list: Payment[]) =>
    moneyTotal(
      list.map((p) => ({ amount: p.amount, currency: input.currencyOf(p.vendorId) })),
      fmt.locale,
    );
  const totals: Array<[string, string]> = [['Total', `${amounts(moving)} · ${count(moving.length, 'payment', fmt.locale)}`]];
  if (scheduled.length > 0) totals.push(['Scheduled', `${amounts(scheduled)} · ${count(scheduled.length, 'payment', fmt.locale)}`]);
  if (stopped.length > 0) totals.push(['Not counted', `${amounts(stopped)} · ${count(stopped.length, 'payment', fmt.locale)}`]);
  totals.push(['Need attention', attention.length ? `${count(attention.length, 'payment', fmt.locale)} (${amounts(attention)})` : 'none']);
  const title = input.limit === 1 ? 'The last payment' : `The last ${input.limit} payments`;
  return listCard({
    title,
    subtitle: 'Bill payments to vendors, newest process date first',
    totals,
    notes:
      stopped.length > 0
        ? [
            {
              text: 'The total counts paid, scheduled and in process payments only; canceled, voided and failed ones are listed with their status and left out.',
              subtle: true,
            },
          ]
        : [],
    columns: [
      { header: 'Vendor', width: 3 },
      { header: 'Amount', width: 2, align: 'Right' },
      { header: 'Process date', width: 2 },
      { header: 'Status', width: 3 },
    ],
    rows: listed.map(({ payment: p, status }) => [
      p.vendorName || `Vendor ${shortId(p.vendorId)}`,
      money(p.amount, input.currencyOf(p.vendorId), fmt.locale),
      calendarDate(p.processDate, fmt.locale),
      status.words,
    ]),
    tones: listed.map(({ status }) => (status.tone === 'Good' ? undefined : status.tone)),
    page: input.page,
    noun: 'payments',
    empty: 'No bill payments in BILL yet.',
    command: input.command,
    asOf: input.asOf,
    fmt,
    footnotes: [input.note],
    summary:
      rows.length === 0
        ? 'No bill payments yet.'
        : `${count(moving.length, 'payment')}, ${amounts(moving)}${stopped.length ? `; ${stopped.length} canceled, voided or failed not counted` : ''}${attention.length ? `; ${attention.length} need attention` : ''}.`,
  });
}
