// The org replicas the finance commands answer from: invoices (every invoice: BILL cannot filter invoices by number,
// status or due date) and bills (the open ones first, with server-side filters; every bill once someone looks one up
// by its vendor invoice number, which BILL cannot filter either). Each row keeps what the cards show, so a warm answer
// needs no GET; the machinery (builds, refreshes, webhooks, storage) is in replicas.ts.
//
// Facts (Postman collection, "Get list of invoices" / "Get list of bills"): list results carry whole records —
// invoices with invoiceLineItems and payments[]{id, amount, status, date}; bills with billLineItems, approvers,
// approvalStatus, paid/scheduled/credit amounts and invoice{invoiceNumber, invoiceDate}.
import type { Approver, Bill, BillLineItem, Invoice, InvoiceLineItem, InvoicePayment } from './types.js';
import { BillFilter } from './filters.js';
import { num, optNum, optStr, Replica, str, type ReplicaDeps, type ReplicaRow, type ReplicaSpec } from './replicas.js';

export { normalizeNumber, type IndexInfo, type LookupResult, type ReplicaScope, type RowsResult } from './replicas.js';

/** What the invoice replica keeps of each invoice: lookups by number, receivables aging, and the invoice card. */
export interface IndexedInvoice extends ReplicaRow {
  id: string;
  number: string;
  customerId: string;
  invoiceDate: string;
  dueDate: string;
  totalAmount: number;
  dueAmount: number;
  status: string;
  archived: boolean;
  updatedTime: string;
  scheduledAmount?: number;
  creditAmount?: number;
  payments?: InvoicePayment[];
  /** Descriptions of the first line items ('' for a line without one), and how many lines there are. */
  lines?: string[];
  lineCount?: number;
}

/** What the bill replica keeps of each bill: lookups by the vendor's invoice number, the AP lists and the bill card. */
export interface IndexedBill extends ReplicaRow {
  id: string;
  number: string;
  vendorId: string;
  vendorName: string;
  dueDate: string;
  amount: number;
  /** Absent when BILL sent none (the cards then count the whole amount as due). */
  dueAmount?: number;
  paymentStatus: string;
  archived: boolean;
  updatedTime: string;
  paidAmount?: number;
  scheduledAmount?: number;
  creditAmount?: number;
  approvalStatus?: string;
  approvers?: Approver[];
  invoiceDate?: string;
  description?: string;
  purchaseOrderNumber?: string;
  createdTime?: string;
  /** The first line items, how many lines there are, and the sum of the lines not kept. */
  lines?: Array<{ description?: string; amount: number }>;
  lineCount?: number;
  moreLinesAmount?: number;
}

/** Line items kept per row: the cards show the first 4 (invoices) or 5 (bills) and count the rest. */
const LINES_KEPT = 20;
/** Most pages one walk reads (100 rows each): 1,000,000 records. */
const MAX_WALK_PAGES = 10_000;

const byUpdatedTime = [{ field: 'updatedTime' as const, order: 'asc' as const }];
const since = (t: string | undefined) => (t ? new BillFilter().gte('updatedTime', t) : undefined);

export function invoiceRow(inv: Invoice): IndexedInvoice | undefined {
  if (!inv || typeof inv.id !== 'string') return undefined;
  const items = Array.isArray(inv.invoiceLineItems) ? inv.invoiceLineItems : [];
  const payments = Array.isArray(inv.payments) ? inv.payments.filter((p) => p && typeof p.amount === 'number').map((p) => ({ id: str(p.id), amount: p.amount, status: str(p.status), date: str(p.date) })) : [];
  return {
    id: inv.id,
    number: str(inv.invoiceNumber),
    customerId: str(inv.customerId),
    invoiceDate: str(inv.invoiceDate),
    dueDate: str(inv.dueDate),
    totalAmount: num(inv.totalAmount),
    dueAmount: num(inv.dueAmount),
    scheduledAmount: optNum(inv.scheduledAmount),
    creditAmount: optNum(inv.creditAmount),
    status: str(inv.status),
    archived: inv.archived === true,
    updatedTime: str(inv.updatedTime),
    payments,
    lines: items.slice(0, LINES_KEPT).map((li) => str(li?.description)),
    lineCount: items.length,
    f: 1,
  };
}

/** The invoice as the invoice card reads it, from a row that carries the card fields (row.f === 1). */
export function invoiceOf(row: IndexedInvoice): Invoice {
  const lineItems: InvoiceLineItem[] = Array.from({ length: row.lineCount ?? 0 }, (_, i) => ({ id: '', description: row.lines?.[i] || undefined }));
  return {
    id: row.id,
    archived: row.archived,
    invoiceNumber: row.number,
    invoiceDate: row.invoiceDate,
    dueDate: row.dueDate,
    customerId: row.customerId,
    totalAmount: row.totalAmount,
    dueAmount: row.dueAmount,
    scheduledAmount: row.scheduledAmount,
    creditAmount: row.creditAmount,
    status: row.status,
    invoiceLineItems: lineItems,
    payments: row.payments ?? [],
    createdTime: '',
    updatedTime: row.updatedTime,
  };
}

export function billRow(bill: Bill): IndexedBill | undefined {
  if (!bill || typeof bill.id !== 'string') return undefined;
  const items = Array.isArray(bill.billLineItems) ? bill.billLineItems : [];
  const kept = items.slice(0, LINES_KEPT);
  const approvers = Array.isArray(bill.approvers)
    ? bill.approvers.filter((a) => a && typeof a === 'object').map((a) => ({ userId: str(a.userId), status: str(a.status), approverOrder: num(a.approverOrder), statusChangedTime: optStr(a.statusChangedTime) }))
    : undefined;
  return {
    id: bill.id,
    number: str(bill.invoice?.invoiceNumber),
    vendorId: str(bill.vendorId),
    vendorName: str(bill.vendorName),
    dueDate: str(bill.dueDate),
    amount: num(bill.amount),
    dueAmount: optNum(bill.dueAmount),
    paidAmount: optNum(bill.paidAmount),
    scheduledAmount: optNum(bill.scheduledAmount),
    creditAmount: optNum(bill.creditAmount),
    paymentStatus: str(bill.paymentStatus),
    approvalStatus: optStr(bill.approvalStatus),
    approvers,
    archived: bill.archived === true,
    invoiceDate: optStr(bill.invoice?.invoiceDate),
    description: optStr(bill.description),
    purchaseOrderNumber: optStr(bill.purchaseOrderNumber),
    createdTime: optStr(bill.createdTime),
    updatedTime: str(bill.updatedTime),
    lines: kept.map((li) => ({ description: optStr(li?.description), amount: num(li?.amount) })),
    lineCount: items.length,
    // Summed as the bill card sums the lines it does not list.
    moreLinesAmount: items.slice(LINES_KEPT).reduce((s, li) => s + (li?.amount ?? 0), 0),
    f: 1,
  };
}

/** Unpaid and not archived: what the AP lists show ("unpaid" is paymentStatus ne PAID, as BILL is asked). */
export function isOpenBill(row: Pick<IndexedBill, 'archived' | 'paymentStatus'>): boolean {
  return !row.archived && row.paymentStatus !== 'PAID';
}

/** The bill as the AP cards read it, from a row that carries the card fields (row.f === 1); lists leave out line items. */
export function billOf(row: IndexedBill, opts: { lineItems: boolean } = { lineItems: true }): Bill {
  const bill: Bill = {
    id: row.id,
    archived: row.archived,
    vendorId: row.vendorId,
    vendorName: row.vendorName || undefined,
    amount: row.amount,
    paidAmount: row.paidAmount,
    dueAmount: row.dueAmount,
    scheduledAmount: row.scheduledAmount,
    creditAmount: row.creditAmount,
    description: row.description,
    dueDate: row.dueDate,
    invoice: { invoiceNumber: row.number || undefined, invoiceDate: row.invoiceDate },
    paymentStatus: row.paymentStatus,
    approvalStatus: row.approvalStatus,
    approvers: row.approvers,
    purchaseOrderNumber: row.purchaseOrderNumber,
    createdTime: row.createdTime ?? '',
    updatedTime: row.updatedTime,
  };
  if (opts.lineItems) {
    const kept = row.lines ?? [];
    const items: BillLineItem[] = kept.map((li) => ({ id: '', amount: li.amount, description: li.description }));
    // Lines beyond those kept: as many as there were, the first carrying their sum.
    for (let i = kept.length; i < (row.lineCount ?? kept.length); i++) items.push({ id: '', amount: i === kept.length ? (row.moreLinesAmount ?? 0) : 0 });
    bill.billLineItems = items;
  }
  return bill;
}

export const INVOICE_REPLICA: ReplicaSpec<Invoice, IndexedInvoice> = {
  kind: 'invoices',
  entity: 'invoice',
  list: (org, t) => org.invoices.list({ pageSize: 100, maxPages: MAX_WALK_PAGES, sort: byUpdatedTime, filter: since(t) }),
  row: invoiceRow,
  get: (org, id) => org.invoices.get(id),
  groupOf: (row) => row.customerId,
};

export const BILL_REPLICA: ReplicaSpec<Bill, IndexedBill> = {
  kind: 'bills',
  entity: 'bill',
  list: (org, t) => org.bills.list({ pageSize: 100, maxPages: MAX_WALK_PAGES, sort: byUpdatedTime, filter: since(t) }),
  row: billRow,
  get: (org, id) => org.bills.get(id),
  groupOf: (row) => row.vendorId,
  // The open bills, filtered by BILL: what `bills due`, `bills overdue` and `vendor` show.
  open: {
    list: (org) => org.bills.list({ pageSize: 100, maxPages: MAX_WALK_PAGES, archived: false, filter: new BillFilter().ne('paymentStatus', 'PAID'), sort: byUpdatedTime }),
    holds: isOpenBill,
  },
};

export type InvoiceIndex = Replica<Invoice, IndexedInvoice>;
export type BillNumberIndex = Replica<Bill, IndexedBill>;

export function createInvoiceIndex(deps: ReplicaDeps<IndexedInvoice>): InvoiceIndex {
  return new Replica(INVOICE_REPLICA, deps);
}

export function createBillNumberIndex(deps: ReplicaDeps<IndexedBill>): BillNumberIndex {
  return new Replica(BILL_REPLICA, deps);
}
