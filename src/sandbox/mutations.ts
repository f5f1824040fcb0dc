// Changes the sandbox can make to the demo data (the /__sandbox/ endpoints call these); each raises BILL's event.
import type { Bill, Invoice, Payment, ReceivablePayment, Vendor } from './types.js';
import { addDays, ID_PREFIX, type SandboxModel, type SandboxOrg } from './model.js';

export class MutationError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const round = (n: number) => Math.round(n * 100) / 100;

function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new MutationError(404, `${what} not found`);
  return value;
}

export interface PayBillInput {
  /** Default: the whole due amount. */
  amount?: number;
  /** Schedule for later instead of paying now (bill becomes SCHEDULED, payment singleStatus SCHEDULED). */
  schedule?: boolean;
  /** yyyy-MM-dd; default today, or the due date when scheduling. */
  processDate?: string;
  /** singleStatus of the new payment; default PROCESSED (SCHEDULED when scheduling). */
  singleStatus?: string;
}

/** Pays (or schedules) a bill: creates an AP payment and raises payment.updated and bill.updated. */
export function payBill(model: SandboxModel, org: SandboxOrg, billId: string, input: PayBillInput = {}): { bill: Bill; payment: Payment } {
  const bill = need(org.bills.get(billId), 'bill');
  if (bill.archived) throw new MutationError(400, 'bill is archived');
  const due = bill.dueAmount ?? bill.amount;
  if (due <= 0 || bill.paymentStatus === 'PAID') throw new MutationError(400, 'bill is already paid');
  const amount = round(input.amount ?? due);
  if (!(amount > 0) || amount > due) throw new MutationError(400, `amount must be between 0.01 and ${due}`);
  const today = model.today();
  const now = model.nowIso();
  const single = input.singleStatus ?? (input.schedule ? 'SCHEDULED' : 'PROCESSED');
  const payment: Payment = {
    id: model.ids.next(ID_PREFIX.payment),
    vendorId: bill.vendorId,
    vendorName: bill.vendorName,
    billId: bill.id,
    billPayments: [{ id: model.ids.next('bpy'), billId: bill.id, amount }],
    amount,
    description: `Payment for ${bill.invoice?.invoiceNumber ?? bill.id}`,
    processDate: input.processDate ?? (input.schedule ? (bill.dueDate > today ? bill.dueDate : addDays(today, 1)) : today),
    fundingAccount: { type: 'BANK_ACCOUNT', id: model.ids.next(ID_PREFIX.bankAccount) },
    fundingAmount: amount,
    exchangeRate: 1,
    onlinePayment: true,
    status: single === 'SCHEDULED' ? 'SCHEDULED' : 'PAID',
    singleStatus: single,
    disbursementType: 'ACH',
    createdTime: now,
    updatedTime: now,
  };
  org.payments.put(payment);
  if (input.schedule) {
    bill.scheduledAmount = round((bill.scheduledAmount ?? 0) + amount);
    bill.paymentStatus = 'SCHEDULED';
  } else {
    bill.paidAmount = round((bill.paidAmount ?? 0) + amount);
    bill.dueAmount = round(due - amount);
    // [I] BILL's partial-payment status is unconfirmed: a partly paid bill stays UNPAID with paidAmount set.
    bill.paymentStatus = bill.dueAmount === 0 ? 'PAID' : 'UNPAID';
  }
  bill.updatedTime = now;
  org.bills.put(bill);
  const vendor = org.vendors.get(bill.vendorId);
  // What the vendor is owed falls with a payment made (as the seed sums it); like a customer's balance after an
  // invoice payment, the vendor's updatedTime is left alone: BILL does not document that it moves.
  if (vendor && !input.schedule) vendor.balance = { amount: round((vendor.balance?.amount ?? 0) - amount), lastUpdatedDate: now };
  model.emit({
    orgId: org.id,
    type: 'payment.updated',
    version: '1',
    entityKey: 'payment',
    entity: { ...payment, vendor: { id: bill.vendorId, name: vendor?.name ?? bill.vendorName }, billingType: 'BILL' },
  });
  model.emit({ orgId: org.id, type: 'bill.updated', version: '1', entityKey: 'bill', entity: { ...bill } });
  return { bill, payment };
}

export interface InvoiceInput {
  customerId?: string;
  invoiceNumber?: string;
  invoiceDate?: string;
  dueDate?: string;
  totalAmount?: number;
  description?: string;
}

/** Creates an invoice (next free number by default) and raises invoice.created. */
export function createInvoice(model: SandboxModel, org: SandboxOrg, input: InvoiceInput): Invoice {
  const customer = input.customerId ? need(org.customers.get(input.customerId), 'customer') : org.customers.find((c) => !c.archived);
  if (!customer) throw new MutationError(400, 'no customer');
  const totalAmount = round(input.totalAmount ?? 1000);
  if (!(totalAmount > 0)) throw new MutationError(400, 'totalAmount must be positive');
  const numbers = org.invoices
    .all()
    .map((i) => Number(i.invoiceNumber))
    .filter(Number.isFinite);
  const invoiceNumber = input.invoiceNumber ?? String(Math.max(1000, ...numbers) + 1);
  if (org.invoices.find((i) => i.invoiceNumber === invoiceNumber))
    throw new MutationError(422, `invoice number ${invoiceNumber} already exists`);
  const today = model.today();
  const now = model.nowIso();
  const invoice: Invoice = {
    id: model.ids.next(ID_PREFIX.invoice),
    archived: false,
    invoiceNumber,
    invoiceDate: input.invoiceDate ?? today,
    dueDate: input.dueDate ?? addDays(today, 30),
    customerId: customer.id,
    totalAmount,
    dueAmount: totalAmount,
    scheduledAmount: 0,
    creditAmount: 0,
    status: 'OPEN',
    exchangeRate: 1,
    invoiceLineItems: [
      { id: model.ids.next(ID_PREFIX.invoiceLineItem), description: input.description ?? 'Services', price: totalAmount, quantity: 1 },
    ],
    payments: [],
    createdTime: now,
    updatedTime: now,
  };
  org.invoices.put(invoice);
  customer.balance = { amount: round((customer.balance?.amount ?? 0) + totalAmount) };
  model.emit({ orgId: org.id, type: 'invoice.created', version: '1', entityKey: 'invoice', entity: { ...invoice } });
  return invoice;
}

export interface InvoicePatch {
  /** Records a received payment of this amount (creates a 0rp receivable payment). */
  payAmount?: number;
  dueDate?: string;
  totalAmount?: number;
  archived?: boolean;
}

/** Updates an invoice and raises invoice.updated (or invoice.archived / invoice.restored). */
export function updateInvoice(model: SandboxModel, org: SandboxOrg, id: string, patch: InvoicePatch): Invoice {
  const invoice = need(org.invoices.get(id), 'invoice');
  const now = model.nowIso();
  const today = model.today();
  let type = 'invoice.updated';
  if (patch.totalAmount !== undefined) {
    const paid = invoice.totalAmount - invoice.dueAmount;
    if (!(patch.totalAmount >= paid)) throw new MutationError(400, 'totalAmount below what was already paid');
    invoice.totalAmount = round(patch.totalAmount);
    invoice.dueAmount = round(patch.totalAmount - paid);
  }
  if (patch.dueDate !== undefined) {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(patch.dueDate)) throw new MutationError(400, 'dueDate must be yyyy-MM-dd');
    invoice.dueDate = patch.dueDate;
  }
  if (patch.payAmount !== undefined) {
    const amount = round(patch.payAmount);
    if (!(amount > 0) || amount > invoice.dueAmount)
      throw new MutationError(400, `payAmount must be between 0.01 and ${invoice.dueAmount}`);
    const rp: ReceivablePayment = {
      id: model.ids.next(ID_PREFIX.receivedPayment),
      customerId: invoice.customerId,
      amount,
      invoicePayments: [{ invoiceId: invoice.id, amount, paymentDate: today }],
      paymentDate: today,
      unappliedAmount: 0,
      receivablesType: 'WALLET',
      status: 'PAID',
      onlinePayment: true,
      createdTime: now,
      updatedTime: now,
    };
    org.receivablePayments.put(rp);
    invoice.payments = [...(invoice.payments ?? []), { id: rp.id, amount, status: 'PAID', date: today }];
    invoice.dueAmount = round(invoice.dueAmount - amount);
    const customer = org.customers.get(invoice.customerId);
    if (customer) customer.balance = { amount: round((customer.balance?.amount ?? 0) - amount) };
  }
  if (invoice.totalAmount - invoice.dueAmount > 0) invoice.status = invoice.dueAmount === 0 ? 'PAID' : 'PARTIAL_PAYMENT';
  if (patch.archived !== undefined && patch.archived !== invoice.archived) {
    invoice.archived = patch.archived;
    type = patch.archived ? 'invoice.archived' : 'invoice.restored';
  }
  invoice.updatedTime = now;
  org.invoices.put(invoice);
  model.emit({ orgId: org.id, type, version: '1', entityKey: 'invoice', entity: { ...invoice } });
  return invoice;
}

/** Adds a vendor (any name, including hostile ones for tests) and raises vendor.created. */
export function createVendor(model: SandboxModel, org: SandboxOrg, input: { name: string; email?: string }): Vendor {
  if (typeof input.name !== 'string' || input.name.length === 0 || input.name.length > 1000)
    throw new MutationError(400, 'name must be 1..1000 characters');
  const now = model.nowIso();
  const vendor: Vendor = {
    id: model.ids.next(ID_PREFIX.vendor),
    archived: false,
    name: input.name,
    accountType: 'BUSINESS',
    email: input.email,
    billCurrency: 'USD',
    balance: { amount: 0 },
    networkStatus: 'NOT_CONNECTED',
    createdTime: now,
    updatedTime: now,
  };
  org.vendors.put(vendor);
  model.emit({ orgId: org.id, type: 'vendor.created', version: '1', entityKey: 'vendor', entity: { ...vendor } });
  return vendor;
}
