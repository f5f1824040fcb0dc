// What a channel can subscribe to, and which BILL event types (shared/reference/bill-v3-api.md §5) belong to each kind.
// autopay.failed is listed under vendors by BILL; here it is a payment that did not happen. Funding-account and risk
// events (bank-account.*, card-account.*, risk-verification.*) concern the org's own bank details: never posted.
import type { EntityKind } from '../mirror/records.js';

export const SUBSCRIPTION_KINDS = ['bills', 'invoices', 'payments', 'vendors', 'spend'] as const;
export type SubscriptionKind = (typeof SUBSCRIPTION_KINDS)[number];

const lifecycle = (entity: string) => ['created', 'updated', 'archived', 'restored'].map((change) => `${entity}.${change}`);

/** Per kind: the record kind its events change, how `subscribe` describes it, and its BILL event types (version "1"). */
export const KINDS: Record<SubscriptionKind, { entity: EntityKind; label: string; types: string[] }> = {
  bills: { entity: 'bill', label: 'Bills (created, changed, paid, archived)', types: lifecycle('bill') },
  invoices: { entity: 'invoice', label: 'Invoices (created, changed, payments received, archived)', types: lifecycle('invoice') },
  payments: {
    entity: 'payment',
    label: 'Payments to vendors (status changes, failures, AutoPay failures)',
    types: ['payment.updated', 'payment.failed', 'autopay.failed'],
  },
  vendors: { entity: 'vendor', label: 'Vendors (added, changed, archived)', types: lifecycle('vendor') },
  spend: {
    entity: 'spend',
    label: 'Spend & Expense (card transactions, reimbursements)',
    types: [
      'spend.transaction.updated',
      'spend.reimbursement.created',
      'spend.reimbursement.updated',
      'spend.reimbursement.deleted',
      'spend.three-ds-challenge.created',
    ],
  },
};

/**
 * Record kinds whose every change BILL announces by webhook (pushFeed.ts): bills, invoices and vendors have
 * created/updated/archived/restored events; a payment has updated/failed, and a new one changes the bill it pays.
 * Not spend: its events cover transactions and reimbursements, not budgets or cards.
 */
export const PUSH_FED = SUBSCRIPTION_KINDS.filter((kind) => kind !== 'spend').map((kind) => ({ kind, entity: KINDS[kind].entity }));

/** The kind of a BILL event type and the record kind it changes, or undefined for types billbridge does not post. */
export function eventTypeInfo(type: string, version = '1'): { kind: SubscriptionKind; entity: EntityKind } | undefined {
  const kind = version === '1' ? SUBSCRIPTION_KINDS.find((k) => KINDS[k].types.includes(type)) : undefined;
  return kind && { kind, entity: KINDS[kind].entity };
}

/** "bill" / "Bills" / "all" as typed -> kinds; undefined when a word is not a kind. */
export function parseKinds(words: string[]): SubscriptionKind[] | undefined {
  const out = new Set<SubscriptionKind>();
  for (const w of words.flatMap((raw) => raw.split(',')).map((part) => part.trim().toLowerCase())) {
    if (w === '' || w === 'and') continue;
    const named = SUBSCRIPTION_KINDS.find((k) => k === w || k === `${w}s` || (k === 'spend' && (w === 'expenses' || w === 'expense')));
    const kinds = w === 'all' || w === 'everything' ? SUBSCRIPTION_KINDS : named && [named];
    if (!kinds) return undefined;
    for (const k of kinds) out.add(k);
  }
  return SUBSCRIPTION_KINDS.filter((k) => out.has(k));
}
