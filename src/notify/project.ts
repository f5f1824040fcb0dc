// What the outbox keeps of an event's record: the fields cards and indexes use, nothing else. Vendor payloads carry
// bank and tax details and payment payloads funding account numbers; none of that is stored or shown. Cards show
// the record as BILL answers a GET for it (confirmRecord), never the payload.
import type { BillGateway } from '../bill/gateway.js';
import { BillApiError, FilterValueError } from '../errors.js';
import type { EntityKind } from '../mirror/records.js';
import type { OutboxEvent } from './types.js';

/** Fields kept, at any depth (objects are walked only through these names): ids, parties, amounts, dates, states. */
const KEEP = new Set([
  ...['id', 'name', 'archived', 'description', 'invoiceNumber', 'invoice', 'billId', 'billIds', 'billPayments'],
  ...['vendorId', 'vendorName', 'vendor', 'customerId', 'customer', 'merchantName', 'userName', 'budgetName'],
  ...['amount', 'paidAmount', 'dueAmount', 'scheduledAmount', 'totalAmount', 'billCurrency', 'currency'],
  ...['dueDate', 'arrivesByDate', 'processDate', 'disbursement'],
  ...['paymentStatus', 'approvalStatus', 'status', 'singleStatus', 'networkStatus', 'transactionType', 'declineReason'],
]);

const MAX_DEPTH = 3;
const MAX_ITEMS = 20;
const MAX_STRING = 300;

function keep(value: unknown, depth: number): unknown {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING - 1)}…` : value;
  if (depth >= MAX_DEPTH || typeof value !== 'object') return undefined;
  if (Array.isArray(value))
    return value
      .slice(0, MAX_ITEMS)
      .map((v) => keep(v, depth + 1))
      .filter((v) => v !== undefined);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!KEEP.has(k)) continue;
    const kept = keep(v, depth + 1);
    if (kept !== undefined) out[k] = kept;
  }
  return out;
}

export function projectEntity(entity: Record<string, unknown>): Record<string, unknown> {
  return (keep(entity, 0) as Record<string, unknown> | undefined) ?? {};
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
/** A payload's nested object, or {} for anything else. */
export const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});

/** The bills a payment event is about: `billIds` (webhook payload), `billPayments[].billId` or `billId` (API shape). */
export function paymentBillIds(entity: Record<string, unknown>): string[] {
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  const paid = list(entity.billPayments).map((bp) => obj(bp).billId);
  const ids = [...list(entity.billIds), ...paid, entity.billId].map(str).filter((id) => id !== undefined);
  return [...new Set(ids)].slice(0, MAX_ITEMS);
}

/** The vendor of a bill, payment or AutoPay event: `vendor{id,name}`, or `vendorId`/`vendorName`. */
export function vendorOf(entity: Record<string, unknown>): { id?: string; name?: string } {
  const v = obj(entity.vendor);
  return { id: str(v.id) ?? str(entity.vendorId), name: str(v.name) ?? str(entity.vendorName) };
}

/** What BILL answered for an event's record: the record as BILL has it now, or that it is gone (404). */
export type ConfirmedRecord = { state: 'current'; entity: Record<string, unknown> } | { state: 'gone' };

/**
 * Reads the record an event names from BILL (one GET by id, as a card's Refresh does): the card is drawn from this
 * answer, never from the payload, which a holder of the webhook key could fill with any amount. Throws when BILL is
 * unreachable or busy (the event waits in the outbox).
 * - autopay.failed names no record of its own: its vendor is read (the reason stays BILL's error text).
 * - Spend & Expense: read with the organisation's S&E token; a deleted reimbursement, a 3-D Secure challenge (no GET
 *   by id) or an org without a token keep only the record's id, so the card shows no figure or name from the payload.
 */
export async function confirmRecord(bill: BillGateway, ev: OutboxEvent): Promise<ConfirmedRecord> {
  const id = str(ev.entity.id);
  try {
    if (ev.type === 'autopay.failed') {
      const vendorId = vendorOf(ev.entity).id;
      if (!vendorId) return { state: 'gone' };
      const vendor = await bill.org(ev.orgId, { priority: 'background' }).vendors.get(vendorId);
      return { state: 'current', entity: { vendor: { id: vendor.id, name: vendor.name } } };
    }
    if (!id) return { state: 'gone' };
    let record: unknown;
    if (ev.entityType === 'spend') {
      const spend = bill.spend(ev.orgId, { priority: 'background' });
      if (!spend || ev.type === 'spend.reimbursement.deleted' || ev.type === 'spend.three-ds-challenge.created')
        return { state: 'current', entity: { id } };
      record = ev.type === 'spend.transaction.updated' ? await spend.transactions.get(id) : await spend.reimbursements.get(id);
    } else record = await readRecord(bill.org(ev.orgId, { priority: 'background' }), ev.entityType, id);
    return record === undefined ? { state: 'gone' } : { state: 'current', entity: projectEntity(record as Record<string, unknown>) };
  } catch (err) {
    // A 404, or an id no BILL record can have: there is nothing to show.
    if ((err instanceof BillApiError && err.category === 'notFound') || err instanceof FilterValueError) return { state: 'gone' };
    throw err;
  }
}

/** A bill, invoice, payment or vendor as BILL has it now (one GET by id); undefined for other kinds. */
export async function readRecord(client: ReturnType<BillGateway['org']>, entityType: EntityKind, id: string): Promise<unknown> {
  const records = { bill: client.bills, invoice: client.invoices, payment: client.payments, vendor: client.vendors }[entityType as string];
  return records?.get(id);
}
