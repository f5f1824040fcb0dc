// The four kinds of BILL record the mirror holds, each in the shape bill/types.ts gives it, trimmed to the fields the
// cards, lookups and digests read (line item ids and createdTime are left empty: nothing shows them, and 15,000
// records carry enough of them to matter), and how each kind is listed, read by id and kept.
//
// What BILL can filter and sort each kind by is listed in bill/api.ts: vendors and customers cannot be sorted by
// updatedTime, nor invoices filtered by number, status or due date, nor bills by their vendor's invoice number. List
// pages (max 100) carry whole records, as GET by id does.
import type { BillOrgClient } from '../bill/api.js';
import { BillFilter } from '../bill/filters.js';
import type { PagedList } from '../bill/paging.js';
import type { Bill, Customer, Invoice, Vendor } from '../bill/types.js';

/** The record kinds the mirror holds. */
export type Kind = keyof Records;
export type PartyKind = 'vendor' | 'customer';
/** BILL record kinds a webhook (or our own write) can change: the mirrored ones, payments and Spend & Expense. */
export const ENTITY_KINDS = ['bill', 'invoice', 'vendor', 'customer', 'payment', 'spend'] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

export interface Records {
  bill: Bill;
  invoice: Invoice;
  vendor: Vendor;
  customer: Customer;
}
export type AnyRecord = Records[Kind];

export interface KindSpec<K extends Kind> {
  /** Every record, or those the filter keeps (a refresh: updatedTime gte; names: id in), 100 a page (oldest change first where BILL can sort). */
  list(org: BillOrgClient, filter: BillFilter | undefined): PagedList<Records[K]>;
  get(org: BillOrgClient, id: string): Promise<Records[K]>;
  /** The record as kept (the fields shown, read defensively); undefined for something that is not a record. */
  keep(record: Records[K]): Records[K] | undefined;
  /** The number people type: an invoice's number, a bill's vendor invoice number. */
  number?(record: Records[K]): string;
  /** BILL cannot sort these by updatedTime: a refresh continues from when the last one started (less a margin). */
  unsorted?: boolean;
  /** A smaller first build for list answers: the open records, filtered by BILL (bills). */
  open?: { list(org: BillOrgClient): PagedList<Records[K]>; holds(record: Records[K]): boolean };
  /** The vendor or customer whose balance a change to this record may move. */
  party?(record: Records[K]): { kind: PartyKind; id: string };
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const optNum = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const flag = (v: unknown): boolean => v === true;
const optStr = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const isObject = (v: unknown): boolean => !!v && typeof v === 'object';
const isRecord = (r: { id?: unknown } | undefined): boolean => !!r && typeof r === 'object' && typeof r.id === 'string' && r.id !== '';

/** Normalises numbers as people type them: no leading '#', single spaces, any case. */
export function normalizeNumber(raw: string): string {
  // Printable ASCII with no space or '#' is already normal but for case: a look-up or search compares every record's number.
  if (/^[\x21\x22\x24-\x7e]*$/.test(raw)) return raw.toUpperCase();
  return raw.normalize('NFKC').trim().replace(/^#\s*/, '').replace(/\s+/g, ' ').toUpperCase();
}

/** Names compared as BILL's `name:sw:` compares them (the sandbox, like BILL's UI search, ignores case). */
export const foldName = (s: string): string => s.normalize('NFKC').trim().toLocaleLowerCase('en-US');

/** Unpaid and not archived: what the AP lists show ("unpaid" is paymentStatus ne PAID, as BILL is asked). */
export function isOpenBill(bill: Pick<Bill, 'archived' | 'paymentStatus'>): boolean {
  return !bill.archived && bill.paymentStatus !== 'PAID';
}

/** An open bill with money still due (BILL's dueAmount, or the amount when BILL sent none): what the AP lists, their totals
 * and the digest count. A bill credited or paid down to $0 owes nothing, as an invoice with nothing due in receivables. */
export function isOwedBill(bill: Pick<Bill, 'archived' | 'paymentStatus' | 'dueAmount' | 'amount'>): boolean {
  const due = typeof bill.dueAmount === 'number' ? bill.dueAmount : bill.amount;
  return isOpenBill(bill) && due > 0;
}

export function keepBill(b: Bill): Bill | undefined {
  if (!isRecord(b)) return undefined;
  const items = Array.isArray(b.billLineItems) ? b.billLineItems : [];
  return {
    id: b.id,
    archived: flag(b.archived),
    vendorId: str(b.vendorId),
    vendorName: optStr(b.vendorName),
    amount: num(b.amount),
    paidAmount: optNum(b.paidAmount),
    dueAmount: optNum(b.dueAmount),
    scheduledAmount: optNum(b.scheduledAmount),
    creditAmount: optNum(b.creditAmount),
    description: optStr(b.description),
    dueDate: str(b.dueDate),
    invoice: { invoiceNumber: optStr(b.invoice?.invoiceNumber), invoiceDate: optStr(b.invoice?.invoiceDate) },
    billLineItems: items.filter(isObject).map((li) => ({ id: '', amount: num(li.amount), description: optStr(li.description) })),
    paymentStatus: str(b.paymentStatus),
    approvalStatus: optStr(b.approvalStatus),
    approvers: Array.isArray(b.approvers)
      ? b.approvers.filter(isObject).map((a) => ({
          userId: str(a.userId),
          status: str(a.status),
          approverOrder: num(a.approverOrder),
          statusChangedTime: optStr(a.statusChangedTime),
        }))
      : undefined,
    purchaseOrderNumber: optStr(b.purchaseOrderNumber),
    createdTime: '',
    updatedTime: str(b.updatedTime),
  };
}

export function keepInvoice(i: Invoice): Invoice | undefined {
  if (!isRecord(i)) return undefined;
  const items = Array.isArray(i.invoiceLineItems) ? i.invoiceLineItems : [];
  const payments = Array.isArray(i.payments) ? i.payments : [];
  return {
    id: i.id,
    archived: flag(i.archived),
    invoiceNumber: str(i.invoiceNumber),
    invoiceDate: str(i.invoiceDate),
    dueDate: str(i.dueDate),
    customerId: str(i.customerId),
    totalAmount: num(i.totalAmount),
    dueAmount: num(i.dueAmount),
    scheduledAmount: optNum(i.scheduledAmount),
    creditAmount: optNum(i.creditAmount),
    status: str(i.status),
    invoiceLineItems: items.filter(isObject).map((li) => ({ id: '', description: optStr(li.description) })),
    payments: payments
      .filter((p) => isObject(p) && typeof p.amount === 'number')
      .map((p) => ({ id: str(p.id), amount: p.amount, status: str(p.status), date: str(p.date) })),
    createdTime: '',
    updatedTime: str(i.updatedTime),
  };
}

/** What vendors and customers share, as kept. */
function keepParty(p: Vendor | Customer) {
  const balance = optNum(p.balance?.amount);
  return { id: p.id, archived: flag(p.archived), name: str(p.name), balance: balance === undefined ? undefined : { amount: balance } };
}

export function keepVendor(v: Vendor): Vendor | undefined {
  if (!isRecord(v)) return undefined;
  const lastPaymentDate = optStr(v.paymentInformation?.lastPaymentDate);
  return {
    ...keepParty(v),
    billCurrency: optStr(v.billCurrency),
    paymentInformation: lastPaymentDate ? { lastPaymentDate } : undefined,
    networkStatus: optStr(v.networkStatus),
    createdTime: '',
    updatedTime: str(v.updatedTime),
  };
}

export function keepCustomer(c: Customer): Customer | undefined {
  if (!isRecord(c)) return undefined;
  return { ...keepParty(c), invoiceCurrency: optStr(c.invoiceCurrency), createdTime: '', updatedTime: str(c.updatedTime) };
}

/** A walk: 100 records a page, at most 10,000 pages; oldest change first where BILL can sort. */
const walk = { pageSize: 100, maxPages: 10_000 };
const sortedWalk = { ...walk, sort: [{ field: 'updatedTime' as const, order: 'asc' as const }] };

export const SPECS: { [K in Kind]: KindSpec<K> } = {
  bill: {
    list: (org, filter) => org.bills.list({ ...sortedWalk, filter }),
    get: (org, id) => org.bills.get(id),
    keep: keepBill,
    number: (b) => b.invoice?.invoiceNumber ?? '',
    // The open bills, filtered by BILL: what `bills due`, `bills overdue` and `vendor` show.
    open: {
      list: (org) => org.bills.list({ ...sortedWalk, archived: false, filter: new BillFilter().add('paymentStatus', 'ne', 'PAID') }),
      holds: isOpenBill,
    },
    party: (b) => ({ kind: 'vendor', id: b.vendorId }),
  },
  invoice: {
    list: (org, filter) => org.invoices.list({ ...sortedWalk, filter }),
    get: (org, id) => org.invoices.get(id),
    keep: keepInvoice,
    number: (i) => i.invoiceNumber,
    party: (i) => ({ kind: 'customer', id: i.customerId }),
  },
  vendor: {
    list: (org, filter) => org.vendors.list({ ...walk, filter }),
    get: (org, id) => org.vendors.get(id),
    keep: keepVendor,
    unsorted: true,
  },
  customer: {
    list: (org, filter) => org.customers.list({ ...walk, filter }),
    get: (org, id) => org.customers.get(id),
    keep: keepCustomer,
    unsorted: true,
  },
};

/** What a card needs of a vendor or customer it names by id; currency: vendor `billCurrency` / customer `invoiceCurrency`. */
export type PartyInfo = Pick<Vendor, 'id' | 'name' | 'archived'> & { currency?: string };

/** A vendor's bill currency or a customer's invoice currency. */
export const currencyOf = (party: Vendor | Customer): string | undefined =>
  (party as Vendor).billCurrency ?? (party as Customer).invoiceCurrency;

/** The PartyInfo of a record as kept (keepVendor, keepCustomer). */
export function partyInfo(record: Vendor | Customer): PartyInfo {
  return { id: record.id, name: record.name, currency: currencyOf(record), archived: record.archived };
}
