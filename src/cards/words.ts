// BILL's status codes in words a finance person uses, and money totals that never add two currencies together.
import type { Approver, Bill, Invoice, Reimbursement } from '../bill/types.js';
import { daysBetween, money, sum } from './format.js';

/** The footer line of every card while the embedded sandbox stands in for BILL. */
export const SANDBOX_NOTE = 'Demo organisation — simulated data';

/** "PARTIAL_PAYMENT" -> "Partial payment": unknown codes BILL may add still read as words. */
export function codeWords(code: string | undefined): string {
  if (!code) return 'Unknown';
  const flat = code
    .replace(/[_\s]+/g, ' ')
    .trim()
    .toLowerCase()
    .slice(0, 60);
  return flat ? flat.charAt(0).toUpperCase() + flat.slice(1) : 'Unknown';
}

/** "1 bill", "3 bills". */
export function count(n: number, noun: string, locale = 'en-US', plural = `${noun}s`): string {
  return `${n.toLocaleString(locale)} ${n === 1 ? noun : plural}`;
}

export type Tone = 'Attention' | 'Warning' | 'Good' | undefined;

/** A bill's payment status: Unpaid, Partly paid, Scheduled, Paid. */
export function billPaymentWords(bill: Pick<Bill, 'paymentStatus' | 'paidAmount' | 'dueAmount'>): string {
  switch (bill.paymentStatus) {
    case 'PAID':
      return 'Paid';
    case 'SCHEDULED':
      return 'Scheduled';
    case 'UNPAID':
      return (bill.paidAmount ?? 0) > 0 && (bill.dueAmount ?? 0) > 0 ? 'Partly paid' : 'Unpaid';
    default:
      return codeWords(bill.paymentStatus);
  }
}

/** A bill's approval: "Awaiting approval (1 of 2 approved)", Approved, Denied, No approvers. */
export function billApprovalWords(bill: Pick<Bill, 'approvalStatus' | 'approvers'>): string {
  // As BILL sent it: the list or an entry may be missing.
  const approvers: Array<Pick<Approver, 'status'> | null | undefined> = Array.isArray(bill.approvers) ? bill.approvers : [];
  switch (bill.approvalStatus) {
    case 'ASSIGNED': {
      const done = approvers.filter((a) => a?.status === 'APPROVED').length;
      return approvers.length > 0 ? `Awaiting approval (${done} of ${approvers.length} approved)` : 'Awaiting approval';
    }
    case 'APPROVED':
      return 'Approved';
    case 'DENIED':
      return 'Denied';
    case 'UNASSIGNED':
    case undefined:
      return 'No approvers';
    default:
      return codeWords(bill.approvalStatus);
  }
}

export function approverWords(status: string | undefined): string {
  switch (status) {
    case 'WAITING':
      return 'Waiting';
    case 'APPROVED':
      return 'Approved';
    case 'DENIED':
      return 'Denied';
    case 'REROUTED':
      return 'Rerouted';
    default:
      return codeWords(status);
  }
}

const SINGLE_STATUS: Record<string, [string, Tone]> = {
  SCHEDULED: ['Scheduled', undefined],
  FUNDING_STARTED: ['Collecting funds', undefined],
  PROCESSED: ['Processed', undefined],
  SENT: ['Sent to the vendor', undefined],
  DELIVERED: ['Delivered', 'Good'],
  CLEARED: ['Cleared', 'Good'],
  CANCELED: ['Canceled', 'Warning'],
  VOIDED: ['Voided', 'Warning'],
  VOID_PENDING: ['Void pending', 'Warning'],
  EXPIRING: ['Expiring', 'Warning'],
  FUNDING_FAILED_VOIDED: ['Funding failed — voided', 'Attention'],
  FUNDING_FAILED_ACTION_NEEDED: ['Funding failed — action needed', 'Attention'],
  DISBURSEMENT_ON_HOLD: ['On hold', 'Warning'],
  DISBURSEMENT_FAILED_ACTION_NEEDED: ['Delivery failed — action needed', 'Attention'],
  DISBURSEMENT_FAILED_VENDOR_BANK_REJECTED: ["Rejected by the vendor's bank", 'Attention'],
  FUNDS_ESCHEATED: ['Unclaimed — funds escheated', 'Attention'],
};

/** A payment's lifecycle (singleStatus, developer.bill.com /docs/single-status-payment-values) in words and a tone. */
export function paymentStatusWords(singleStatus: string | undefined): { words: string; tone: Tone } {
  const known = singleStatus ? SINGLE_STATUS[singleStatus] : undefined;
  return known ? { words: known[0], tone: known[1] } : { words: codeWords(singleStatus), tone: undefined };
}

/**
 * Payment lifecycles in which money moved or will move: scheduled, in process, paid (sent, delivered, cleared), held,
 * an uncashed check, and funds escheated (they left the account, to the state). Canceled, voided (or about to be) and
 * failed payments never moved money, so totals leave them out.
 */
const MONEY_MOVES = new Set([
  'SCHEDULED',
  'FUNDING_STARTED',
  'PROCESSED',
  'SENT',
  'DELIVERED',
  'CLEARED',
  'DISBURSEMENT_ON_HOLD',
  'EXPIRING',
  'FUNDS_ESCHEATED',
]);
const MONEY_STOPPED = new Set([
  'CANCELED',
  'VOIDED',
  'VOID_PENDING',
  'FUNDING_FAILED_VOIDED',
  'FUNDING_FAILED_ACTION_NEEDED',
  'DISBURSEMENT_FAILED_ACTION_NEEDED',
  'DISBURSEMENT_FAILED_VENDOR_BANK_REJECTED',
]);

/**
 * True when a payment counts in a total of money paid: by its singleStatus; a singleStatus billbridge does not know
 * falls back on the older `status` (PAID and SCHEDULED count; APPROVING, CANCELLED and anything else do not).
 */
export function paymentMovesMoney(p: { singleStatus?: string; status?: string }): boolean {
  if (p.singleStatus && MONEY_MOVES.has(p.singleStatus)) return true;
  if (p.singleStatus && MONEY_STOPPED.has(p.singleStatus)) return false;
  return p.status === 'PAID' || p.status === 'SCHEDULED';
}

/** Open, Partially paid, Paid, Payment scheduled, Overdue by N days (partially paid), Archived. */
export function invoiceStatusWords(
  inv: Pick<Invoice, 'archived' | 'dueAmount' | 'totalAmount' | 'dueDate'> & { status?: Invoice['status'] },
  today: string,
): { words: string; tone: Tone } {
  if (inv.archived) return { words: 'Archived', tone: undefined };
  const due = typeof inv.dueAmount === 'number' ? inv.dueAmount : 0;
  if (inv.status === 'PAID' || due <= 0) return { words: 'Paid', tone: 'Good' };
  const partial = inv.status === 'PARTIAL_PAYMENT' || (typeof inv.totalAmount === 'number' && due < inv.totalAmount);
  const late = inv.dueDate && /^\d{4}-\d{2}-\d{2}/.test(inv.dueDate) ? daysBetween(inv.dueDate.slice(0, 10), today) : 0;
  if (late > 0) return { words: `Overdue by ${count(late, 'day')}${partial ? ' (partially paid)' : ''}`, tone: 'Attention' };
  if (inv.status === 'SCHEDULED') return { words: 'Payment scheduled', tone: undefined };
  if (partial) return { words: 'Partially paid', tone: undefined };
  if (inv.status === 'OPEN' || inv.status === undefined) return { words: 'Open', tone: undefined };
  return { words: codeWords(inv.status), tone: undefined };
}

const REIMBURSEMENT_STATUS: Record<string, string> = {
  AWAITING_TIER2_APPROVAL: 'Awaiting second approval',
  APPROVED: 'Approved',
  READY_TO_PAY: 'Ready to pay',
  PAID: 'Paid',
  PAYMENT_FAILED: 'Payment failed',
  APPROVAL_UNDONE: 'Approval undone',
  ARCHIVED: 'Archived',
};

export function reimbursementWords(r: Pick<Reimbursement, 'status'>): { words: string; tone: Tone } {
  const words = REIMBURSEMENT_STATUS[r.status] ?? codeWords(r.status);
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

/** Cent-exact totals per currency: "$1,250.00", or "$1,250.00 + €80.00" when the rows mix currencies. */
export function moneyTotal(amounts: Amount[], locale: string): string {
  const by = new Map<string, Array<number | undefined | null>>();
  for (const a of amounts) {
    const code = a.currency && /^[A-Z]{3}$/.test(a.currency) ? a.currency : 'USD';
    const list = by.get(code) ?? [];
    list.push(a.amount);
    by.set(code, list);
  }
  if (by.size === 0) return money(0, 'USD', locale);
  return [...by.entries()]
    .sort((a, b) => (a[0] === 'USD' ? -1 : b[0] === 'USD' ? 1 : a[0].localeCompare(b[0])))
    .map(([code, list]) => money(sum(list), code, locale))
    .join(' + ');
}
