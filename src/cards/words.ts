// BILL's status codes in words a finance person uses, and money totals that never add two currencies together.
import type { Approver, Bill, Invoice, Reimbursement } from '../bill/types.js';
import type { TONE_STYLE } from './card.js';
import { byCurrency } from './chart.js';
import { daysBetween, money, sum } from './format.js';
import { calendarDay } from '../infra/calendar.js';

/** The footer line of every card while the embedded sandbox stands in for BILL. */
export const SANDBOX_NOTE = 'Demo organisation — simulated data';

/** "PARTIAL_PAYMENT" -> "Partial payment": unknown codes BILL may add still read as words. */
export function codeWords(code: string | undefined): string {
  const flat = (code ?? '')
    .replace(/[_\s]+/g, ' ')
    .trim()
    .toLowerCase()
    .slice(0, 60);
  return flat ? flat.charAt(0).toUpperCase() + flat.slice(1) : 'Unknown';
}

/** "1 bill", "3 bills". */
export function count(n: number, noun: string, locale = 'en-US'): string {
  return `${n.toLocaleString(locale)} ${n === 1 ? noun : `${noun}s`}`;
}

export type Tone = keyof typeof TONE_STYLE | undefined;

/** A bill's payment status: Unpaid, Partly paid, Scheduled, Paid. */
export function billPaymentWords(bill: Pick<Bill, 'paymentStatus' | 'paidAmount' | 'dueAmount'>): string {
  if (bill.paymentStatus !== 'UNPAID') return codeWords(bill.paymentStatus);
  return (bill.paidAmount ?? 0) > 0 && (bill.dueAmount ?? 0) > 0 ? 'Partly paid' : 'Unpaid';
}

/** A bill's approval: "Awaiting approval (1 of 2 approved)", Approved, Denied, No approvers. */
export function billApprovalWords(bill: Pick<Bill, 'approvalStatus' | 'approvers'>): string {
  if (bill.approvalStatus === 'UNASSIGNED' || bill.approvalStatus === undefined) return 'No approvers';
  if (bill.approvalStatus !== 'ASSIGNED') return codeWords(bill.approvalStatus);
  // As BILL sent it: the list or an entry may be missing.
  const approvers: Array<Pick<Approver, 'status'> | null | undefined> = Array.isArray(bill.approvers) ? bill.approvers : [];
  const done = approvers.filter((a) => a?.status === 'APPROVED').length;
  return approvers.length > 0 ? `Awaiting approval (${done} of ${approvers.length} approved)` : 'Awaiting approval';
}

/** A payment's singleStatus (developer.bill.com /docs/single-status-payment-values): its words, its tone, and whether
 * money moved or will move (scheduled, paid, held, uncashed, escheated) or never did (canceled, voided, failed). */
const SINGLE_STATUS = new Map<string, [words: string, tone: Tone, movesMoney: boolean]>([
  ['SCHEDULED', ['Scheduled', undefined, true]],
  ['FUNDING_STARTED', ['Collecting funds', undefined, true]],
  ['PROCESSED', ['Processed', undefined, true]],
  ['SENT', ['Sent to the vendor', undefined, true]],
  ['DELIVERED', ['Delivered', 'Good', true]],
  ['CLEARED', ['Cleared', 'Good', true]],
  ['CANCELED', ['Canceled', 'Warning', false]],
  ['VOIDED', ['Voided', 'Warning', false]],
  ['VOID_PENDING', ['Void pending', 'Warning', false]],
  ['EXPIRING', ['Expiring', 'Warning', true]],
  ['FUNDING_FAILED_VOIDED', ['Funding failed — voided', 'Attention', false]],
  ['FUNDING_FAILED_ACTION_NEEDED', ['Funding failed — action needed', 'Attention', false]],
  ['DISBURSEMENT_ON_HOLD', ['On hold', 'Warning', true]],
  ['DISBURSEMENT_FAILED_ACTION_NEEDED', ['Delivery failed — action needed', 'Attention', false]],
  ['DISBURSEMENT_FAILED_VENDOR_BANK_REJECTED', ["Rejected by the vendor's bank", 'Attention', false]],
  ['FUNDS_ESCHEATED', ['Unclaimed — funds escheated', 'Attention', true]],
]);

export function paymentStatusWords(singleStatus: string | undefined): { words: string; tone: Tone } {
  const known = singleStatus ? SINGLE_STATUS.get(singleStatus) : undefined;
  return known ? { words: known[0], tone: known[1] } : { words: codeWords(singleStatus), tone: undefined };
}

/** Whether a payment counts in money paid: by its singleStatus, else by the older `status` (PAID or SCHEDULED). */
export function paymentMovesMoney(p: { singleStatus?: string; status?: string }): boolean {
  const known = p.singleStatus ? SINGLE_STATUS.get(p.singleStatus) : undefined;
  return known ? known[2] : p.status === 'PAID' || p.status === 'SCHEDULED';
}

/** Open, Partially paid, Paid, Payment scheduled, Overdue by N days (partially paid), Archived. */
export function invoiceStatusWords(
  inv: Pick<Invoice, 'archived' | 'dueAmount' | 'totalAmount' | 'dueDate'> & Partial<Pick<Invoice, 'status' | 'creditAmount'>>,
  today: string,
): { words: string; tone: Tone } {
  if (inv.archived) return { words: 'Archived', tone: undefined };
  const due = typeof inv.dueAmount === 'number' ? inv.dueAmount : 0;
  if (inv.status === 'PAID' || due <= 0) return { words: 'Paid', tone: 'Good' };
  // What credits took off the total was not paid: only less due than that is a part payment.
  const credited = typeof inv.creditAmount === 'number' && Number.isFinite(inv.creditAmount) ? inv.creditAmount : 0;
  const partial = inv.status === 'PARTIAL_PAYMENT' || (typeof inv.totalAmount === 'number' && due < sum([inv.totalAmount, -credited]));
  const day = calendarDay(inv.dueDate);
  const late = day ? daysBetween(day, today) : 0;
  if (late > 0) return { words: `Overdue by ${count(late, 'day')}${partial ? ' (partially paid)' : ''}`, tone: 'Attention' };
  if (inv.status === 'SCHEDULED') return { words: 'Payment scheduled', tone: undefined };
  if (partial) return { words: 'Partially paid', tone: undefined };
  if (inv.status === 'OPEN' || inv.status === undefined) return { words: 'Open', tone: undefined };
  return { words: codeWords(inv.status), tone: undefined };
}

export function reimbursementWords(r: Pick<Reimbursement, 'status'>): { words: string; tone: Tone } {
  const words = r.status === 'AWAITING_TIER2_APPROVAL' ? 'Awaiting second approval' : codeWords(r.status);
  return { words, tone: r.status === 'PAYMENT_FAILED' ? 'Attention' : undefined };
}

/** Not paid and not archived: still waiting on someone. */
export function reimbursementPending(r: Pick<Reimbursement, 'status' | 'retired'>): boolean {
  return r.status !== 'PAID' && r.status !== 'ARCHIVED' && r.retired !== true;
}

export interface Amount {
  amount: number | undefined | null;
  currency: string | undefined;
}

/** Cent-exact totals per currency, USD first, each with its text in the locale. */
export function currencyTotals(amounts: Amount[], locale: string) {
  return byCurrency(amounts, (a) => a.currency).map(([currency, list]) => {
    const amount = sum(list.map((a) => a.amount));
    return { currency, amount, text: money(amount, currency, locale) };
  });
}

/** "$1,250.00", or "$1,250.00 + €80.00" when the rows mix currencies. */
export function moneyTotal(amounts: Amount[], locale: string): string {
  if (amounts.length === 0) return money(0, 'USD', locale);
  return currencyTotals(amounts, locale)
    .map((t) => t.text)
    .join(' + ');
}
