// What the outbox keeps of an event's record: the fields cards and indexes use, nothing else. Vendor payloads carry
// bank and tax details and payment payloads funding account numbers; none of that is stored or shown.

/** Fields kept, at any depth (objects are walked only through these names). */
const KEEP = new Set([
  'id',
  'name',
  'archived',
  'vendorId',
  'vendorName',
  'vendor',
  'customerId',
  'customerName',
  'customer',
  'amount',
  'paidAmount',
  'dueAmount',
  'scheduledAmount',
  'creditAmount',
  'totalAmount',
  'dueDate',
  'invoiceDate',
  'invoiceNumber',
  'invoice',
  'description',
  'paymentStatus',
  'approvalStatus',
  'status',
  'singleStatus',
  'disbursementStatus',
  'disbursementType',
  'disbursement',
  'arrivesByDate',
  'processDate',
  'billId',
  'billIds',
  'billPayments',
  'billCurrency',
  'invoiceCurrency',
  'currency',
  'billingType',
  'payments',
  'date',
  'merchantName',
  'userName',
  'budgetName',
  'transactionType',
  'occurredTime',
  'authorizedTime',
  'submittedTime',
  'type',
  'isCredit',
  'complete',
  'declineReason',
  'receiptStatus',
  'transactedAmount',
  'updatedTime',
  'createdTime',
  'networkStatus',
]);

const MAX_DEPTH = 3;
const MAX_ITEMS = 20;
const MAX_STRING = 300;

function keep(value: unknown, depth: number): unknown {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING - 1)}…` : value;
  if (depth >= MAX_DEPTH || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) return value.slice(0, MAX_ITEMS).map((v) => keep(v, depth + 1)).filter((v) => v !== undefined);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (!KEEP.has(k)) continue;
    const kept = keep(v, depth + 1);
    if (kept !== undefined) out[k] = kept;
  }
  return out;
}

export function projectEntity(entity: Record<string, unknown>): Record<string, unknown> {
  return (keep(entity, 0) as Record<string, unknown>) ?? {};
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The bills a payment event is about: `billIds` (webhook payload), `billPayments[].billId` or `billId` (API shape). */
export function paymentBillIds(entity: Record<string, unknown>): string[] {
  const ids = new Set<string>();
  if (Array.isArray(entity.billIds)) for (const id of entity.billIds) if (str(id)) ids.add(id as string);
  if (Array.isArray(entity.billPayments)) {
    for (const bp of entity.billPayments) {
      const id = bp && typeof bp === 'object' ? str((bp as Record<string, unknown>).billId) : undefined;
      if (id) ids.add(id);
    }
  }
  if (str(entity.billId)) ids.add(entity.billId as string);
  return [...ids].slice(0, MAX_ITEMS);
}

/** The vendor of a bill, payment or AutoPay event: `vendor{id,name}`, or `vendorId`/`vendorName`. */
export function vendorOf(entity: Record<string, unknown>): { id?: string; name?: string } {
  const v = entity.vendor && typeof entity.vendor === 'object' ? (entity.vendor as Record<string, unknown>) : {};
  return { id: str(v.id) ?? str(entity.vendorId), name: str(v.name) ?? str(entity.vendorName) };
}
