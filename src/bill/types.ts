// BILL v3 domain shapes, as far as billbridge reads them (official Postman collection, akleinvm/billdotcom-sdk-v3
// reference/billdotcom_v3.json; the sandbox declares the rest of what it serves). Enum fields are typed as open
// strings: BILL adds values without notice.

/** What every AP/AR record (bill, invoice, vendor, customer) carries. */
interface BillRecord {
  id: string;
  archived: boolean;
  createdTime: string;
  updatedTime: string;
}

export interface Approver {
  userId: string;
  /** Seen: WAITING, APPROVED, DENIED, REROUTED (and UNDEFINED). */
  status: string;
  approverOrder: number;
  statusChangedTime?: string;
}

export interface BillLineItem {
  id: string;
  amount: number;
  description?: string;
}

export interface Bill extends BillRecord {
  vendorId: string;
  vendorName?: string;
  amount: number;
  paidAmount?: number;
  dueAmount?: number;
  scheduledAmount?: number;
  creditAmount?: number;
  description?: string;
  /** yyyy-MM-dd */
  dueDate: string;
  invoice?: { invoiceNumber?: string; invoiceDate?: string };
  billLineItems?: BillLineItem[];
  /** Seen: UNPAID, PAID, SCHEDULED (and UNDEFINED). Partial values are unconfirmed. */
  paymentStatus: string;
  /** Seen: UNASSIGNED, ASSIGNED, APPROVED, DENIED (and UNDEFINED). */
  approvalStatus?: string;
  approvers?: Approver[];
  purchaseOrderNumber?: string;
}

export interface Invoice extends BillRecord {
  invoiceNumber: string;
  /** yyyy-MM-dd */
  invoiceDate: string;
  /** yyyy-MM-dd */
  dueDate: string;
  customerId: string;
  totalAmount: number;
  dueAmount: number;
  scheduledAmount?: number;
  creditAmount?: number;
  /** Seen: OPEN, PARTIAL_PAYMENT, PAID, SCHEDULED. No VOID: cancelling an invoice archives it. */
  status: string;
  invoiceLineItems?: Array<{ id: string; description?: string }>;
  /** date: yyyy-MM-dd */
  payments?: Array<{ id: string; amount: number; status: string; date: string }>;
}

export interface Vendor extends BillRecord {
  name: string;
  email?: string;
  paymentInformation?: { lastPaymentDate?: string };
  billCurrency?: string;
  balance?: { amount: number };
  networkStatus?: string;
}

export interface Customer extends BillRecord, Pick<Vendor, 'name' | 'email' | 'balance'> {
  invoiceCurrency?: string;
}

/** An AP payment (id prefix stp). */
export interface Payment extends Omit<BillRecord, 'archived'> {
  vendorId: string;
  vendorName?: string;
  billId?: string;
  billPayments?: Array<{ id: string; billId: string; amount: number }>;
  amount: number;
  description?: string;
  /** yyyy-MM-dd */
  processDate: string;
  /** Seen: APPROVING, SCHEDULED, PAID, CANCELLED. */
  status: string;
  /** The unified payment lifecycle: SCHEDULED -> FUNDING_STARTED -> PROCESSED -> SENT -> DELIVERED -> CLEARED, plus
   * CANCELED, VOIDED, FUNDING_FAILED_*, DISBURSEMENT_*, FUNDS_ESCHEATED, EXPIRING, VOID_PENDING. */
  singleStatus: string;
}

/** GET /v3/bill-approvals/pending-user-approvals item: bills waiting on the signed-in user. */
export type PendingApproval = Pick<Bill, 'vendorId' | 'amount' | 'dueDate'> & { billId: string };

// ---- Spend & Expense ----

export interface SpendTransaction {
  id: string;
  transactionType: 'AUTHORIZATION' | 'CLEAR' | (string & {});
  amount: number;
  merchantName?: string;
  rawMerchantName?: string;
  occurredTime: string;
  userId?: string;
  userName?: string;
  budgetName?: string;
  receiptRequired?: boolean;
  receiptStatus?: 'ATTACHED' | 'MISSING' | 'NOT_ATTACHED' | (string & {});
  receipts?: unknown[];
  declineReason?: string;
}

export interface Reimbursement {
  id: string;
  amount: number;
  merchantName?: string;
  note?: string;
  /** e.g. MILEAGE */
  type?: string;
  /** Seen: APPROVED, READY_TO_PAY, PAID, PAYMENT_FAILED, AWAITING_TIER2_APPROVAL, APPROVAL_UNDONE, ARCHIVED. */
  status: string;
  statusHistory?: unknown[];
  submittedTime?: string;
  retired?: boolean;
  userId?: string;
  receipts?: unknown[];
}

export interface Budget {
  id: string;
  name: string;
  retired: boolean;
  recurringLimit?: number;
  currentPeriod?: { endDate?: string; limit?: number; spent?: { cleared: number; pending: number; total: number } };
}

// ---- Webhook management (/connect-events/v3) ----

export interface Subscription extends Omit<BillRecord, 'archived'> {
  name: string;
  organizationId: string;
  status: { enabled: boolean };
  events: Array<{ type: string; version: string }>;
  notificationUrl: string;
  /** Present only in the create (and key rotation) answer. */
  securityKey?: string;
}

/** One business GET /v3/network found; `id` is its Payment Network ID (PNI; RPPS ones start 0rv). */
export interface NetworkOrganization {
  id: string;
  name: string;
  addresses?: Array<{ city?: string; stateOrProvince?: string }>;
}
