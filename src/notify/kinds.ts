// What a channel can subscribe to, and which BILL event types belong to each kind.
//
// Event types: developer.bill.com /docs/notification-payloads-reference (shared/reference/bill-v3-api.md §5).
// autopay.failed is listed under vendors there; here it is a payment that did not happen, so it goes to "payments".
// Funding-account and risk events (bank-account.*, card-account.*, risk-verification.updated) are known but not
// turned into channel cards: they concern the organisation's own bank details.
import type { EntityKind } from '../mirror/records.js';

export const SUBSCRIPTION_KINDS = ['bills', 'invoices', 'payments', 'vendors', 'spend'] as const;
export type SubscriptionKind = (typeof SUBSCRIPTION_KINDS)[number];

export interface EventTypeInfo {
  kind: SubscriptionKind;
  /** The cache entity the event changes. */
  entity: EntityKind;
}

const TYPES: Record<string, EventTypeInfo> = {
  'bill.created': { kind: 'bills', entity: 'bill' },
  'bill.updated': { kind: 'bills', entity: 'bill' },
  'bill.archived': { kind: 'bills', entity: 'bill' },
  'bill.restored': { kind: 'bills', entity: 'bill' },
  'invoice.created': { kind: 'invoices', entity: 'invoice' },
  'invoice.updated': { kind: 'invoices', entity: 'invoice' },
  'invoice.archived': { kind: 'invoices', entity: 'invoice' },
  'invoice.restored': { kind: 'invoices', entity: 'invoice' },
  'payment.updated': { kind: 'payments', entity: 'payment' },
  'payment.failed': { kind: 'payments', entity: 'payment' },
  'autopay.failed': { kind: 'payments', entity: 'payment' },
  'vendor.created': { kind: 'vendors', entity: 'vendor' },
  'vendor.updated': { kind: 'vendors', entity: 'vendor' },
  'vendor.archived': { kind: 'vendors', entity: 'vendor' },
  'vendor.restored': { kind: 'vendors', entity: 'vendor' },
  'spend.transaction.updated': { kind: 'spend', entity: 'spend' },
  'spend.reimbursement.created': { kind: 'spend', entity: 'spend' },
  'spend.reimbursement.updated': { kind: 'spend', entity: 'spend' },
  'spend.reimbursement.deleted': { kind: 'spend', entity: 'spend' },
  'spend.three-ds-challenge.created': { kind: 'spend', entity: 'spend' },
};

/**
 * Record kinds whose changes BILL announces by webhook fully enough for their lists to be kept by events (see
 * pushFeed.ts): bills, invoices and vendors have created/updated/archived/restored events; a payment has
 * updated/failed, and a new one changes the bill it pays. Not spend: its events cover transactions and
 * reimbursements, not budgets or cards.
 */
export const PUSH_FED: ReadonlyArray<{ entity: EntityKind; kind: SubscriptionKind }> = [
  { entity: 'bill', kind: 'bills' },
  { entity: 'invoice', kind: 'invoices' },
  { entity: 'payment', kind: 'payments' },
  { entity: 'vendor', kind: 'vendors' },
];

/** BILL event types billbridge knows but does not post to channels. */
export const KNOWN_UNROUTED_TYPES: readonly string[] = [
  'bank-account.created',
  'bank-account.updated',
  'card-account.created',
  'card-account.updated',
  'risk-verification.updated',
];

/** The kind of a BILL event type (version "1"), or undefined for types billbridge does not post. */
export function eventTypeInfo(type: string, version = '1'): EventTypeInfo | undefined {
  if (version !== '1') return undefined;
  return Object.prototype.hasOwnProperty.call(TYPES, type) ? TYPES[type] : undefined;
}

/** Every event type billbridge posts, optionally only those of some kinds (what `webhooks setup` subscribes to). */
export function eventTypesOf(kinds: readonly SubscriptionKind[] = SUBSCRIPTION_KINDS): string[] {
  return Object.entries(TYPES)
    .filter(([, info]) => kinds.includes(info.kind))
    .map(([type]) => type);
}

/** "bill" / "Bills" / "all" as typed -> kinds; undefined when a word is not a kind. */
export function parseKinds(words: string[]): SubscriptionKind[] | undefined {
  const out = new Set<SubscriptionKind>();
  for (const raw of words) {
    for (const part of raw.split(',')) {
      const w = part.trim().toLowerCase();
      if (w === '' || w === 'and') continue;
      if (w === 'all' || w === 'everything') {
        for (const k of SUBSCRIPTION_KINDS) out.add(k);
        continue;
      }
      const kind = SUBSCRIPTION_KINDS.find((k) => k === w || k === `${w}s` || (k === 'spend' && (w === 'expenses' || w === 'expense')));
      if (!kind) return undefined;
      out.add(kind);
    }
  }
  return SUBSCRIPTION_KINDS.filter((k) => out.has(k));
}

export const KIND_LABELS: Record<SubscriptionKind, string> = {
  bills: 'Bills (created, changed, paid, archived)',
  invoices: 'Invoices (created, changed, payments received, archived)',
  payments: 'Payments to vendors (status changes, failures, AutoPay failures)',
  vendors: 'Vendors (added, changed, archived)',
  spend: 'Spend & Expense (card transactions, reimbursements)',
};
