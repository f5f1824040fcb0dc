// BILL v3 domain shapes as the API returns them (official Postman collection, akleinvm/billdotcom-sdk-v3
// reference/billdotcom_v3.json). Enum fields are typed as open strings: BILL adds values without notice.

interface Classifications {
  chartOfAccountId?: string;
}

interface Address {
  line1?: string;
  city?: string;
  stateOrProvince?: string;
  zipOrPostalCode?: string;
  country?: string;
  countryName?: string;
}

/** Seen: UNPAID, PAID, SCHEDULED (and UNDEFINED). Partial values are unconfirmed. */
type BillPaymentStatus = 'UNPAID' | 'PAID' | 'SCHEDULED' | 'UNDEFINED' | (string & {});
/** Seen: UNASSIGNED, ASSIGNED, APPROVED, DENIED (and UNDEFINED). */
type BillApprovalStatus = 'UNASSIGNED' | 'ASSIGNED' | 'APPROVED' | 'DENIED' | 'UNDEFINED' | (string & {});
type ApproverStatus = 'WAITING' | 'APPROVED' | 'DENIED' | 'REROUTED' | 'UNDEFINED' | (string & {});

export interface Approver {
  userId: string;
  status: ApproverStatus;
  approverOrder: number;
  statusChangedTime?: string;
}

export interface BillLineItem {
  id: string;
  amount: number;
  quantity?: number;
  price?: number;
  description?: string;
  classifications?: Classifications;
}

export interface Bill {
  id: string;
  archived: boolean;
  vendorId: string;
  vendorName?: string;
  amount: number;
  paidAmount?: number;
  dueAmount?: number;
  scheduledAmount?: number;
  creditAmount?: number;
  fundingAmount?: number;
  exchangeRate?: number;
  description?: string;
  /** yyyy-MM-dd */
  dueDate: string;
  invoice?: { invoiceNumber?: string; invoiceDate?: string };
  billLineItems?: BillLineItem[];
  payFromChartOfAccountId?: string;
  paymentStatus: BillPaymentStatus;
  approvalStatus?: BillApprovalStatus;
  approvers?: Approver[];
  classifications?: Classifications;
  purchaseOrderNumber?: string;
  createdTime: string;
  updatedTime: string;
}

/** Seen: OPEN, PARTIAL_PAYMENT, PAID, SCHEDULED. No VOID: cancelling an invoice archives it. */
type InvoiceStatus = 'OPEN' | 'PARTIAL_PAYMENT' | 'PAID' | 'SCHEDULED' | (string & {});

interface InvoiceLineItem {
  id: string;
  description?: string;
  price?: number;
  quantity?: number;
  classifications?: Classifications;
}

interface InvoicePayment {
  id: string;
  amount: number;
  status: string;
  /** yyyy-MM-dd */
  date: string;
}

export interface Invoice {
  id: string;
  archived: boolean;
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
  status: InvoiceStatus;
  exchangeRate?: number;
  invoiceLineItems?: InvoiceLineItem[];
  payToChartOfAccountId?: string;
  payments?: InvoicePayment[];
  classifications?: Classifications;
  salesTaxTotal?: number;
  salesTaxPercentage?: number;
  enableCardPayment?: boolean;
  createdTime: string;
  updatedTime: string;
}

export interface Vendor {
  id: string;
  archived: boolean;
  name: string;
  shortName?: string;
  accountNumber?: string;
  accountType?: 'BUSINESS' | 'PERSON' | 'NONE' | (string & {});
  email?: string;
  phone?: string;
  address?: Address;
  paymentInformation?: {
    payeeName?: string;
    lastPaymentDate?: string;
    payByType?: string;
  };
  additionalInfo?: {
    track1099?: boolean;
    leadTimeInDays?: number;
    combinePayments?: boolean;
  };
  billCurrency?: string;
  balance?: { amount: number; lastUpdatedDate?: string };
  networkStatus?: string;
  createdTime: string;
  updatedTime: string;
}

export interface Customer {
  id: string;
  archived: boolean;
  name: string;
  companyName?: string;
  email?: string;
  phone?: string;
  contact?: { firstName?: string; lastName?: string };
  accountType?: string;
  accountNumber?: string;
  invoiceCurrency?: string;
  balance?: { amount: number };
  createdTime: string;
  updatedTime: string;
}

/** An AP payment (id prefix stp). */
export interface Payment {
  id: string;
  vendorId: string;
  vendorName?: string;
  billId?: string;
  billPayments?: Array<{ id: string; billId: string; amount: number }>;
  amount: number;
  description?: string;
  /** yyyy-MM-dd */
  processDate: string;
  fundingAccount?: { type: string; id: string };
  fundingAmount?: number;
  exchangeRate?: number;
  transactionNumber?: string;
  confirmationNumber?: string;
  onlinePayment?: boolean;
  /** Seen: APPROVING, SCHEDULED, PAID, CANCELLED. */
  status: string;
  /**
   * The unified payment lifecycle: SCHEDULED -> FUNDING_STARTED -> PROCESSED -> SENT -> DELIVERED -> CLEARED,
   * plus CANCELED, VOIDED, FUNDING_FAILED_*, DISBURSEMENT_*, FUNDS_ESCHEATED, EXPIRING, VOID_PENDING.
   */
  singleStatus: string;
  disbursementStatus?: string;
  disbursementType?: string;
  cancelRequestSubmitted?: boolean;
  createdBy?: string;
  createdTime: string;
  updatedTime: string;
}

/** An AR payment received (id prefix 0rp). */
export interface ReceivablePayment {
  id: string;
  customerId: string;
  amount: number;
  invoicePayments: Array<{ invoiceId: string; amount: number; paymentDate: string }>;
  description?: string;
  /** yyyy-MM-dd */
  paymentDate: string;
  unappliedAmount?: number;
  receivablesType?: string;
  /** Seen: PAID, VOID. */
  status: string;
  referenceNumber?: string;
  onlinePayment?: boolean;
  createdTime: string;
  updatedTime: string;
}

/** GET /v3/bill-approvals/pending-user-approvals item: bills waiting on the signed-in user. */
export type PendingApproval = Pick<Bill, 'vendorId' | 'amount' | 'dueDate'> & { billId: string };

/** POST /v3/bill-approvals/actions body item (the body is an array of these). */
export interface ApprovalActionInput {
  billId: string;
  action: 'APPROVE' | 'DENY';
  comment?: string;
}

// ---- Spend & Expense ----

interface SpendReceipt {
  filename?: string;
  uuid?: string;
}

interface SpendReviewer {
  approverType?: string;
  status: 'WAITING' | 'APPROVED' | 'DENIED' | (string & {});
  userId?: string;
  userName?: string;
}

export interface SpendTransaction {
  id: string;
  uuid?: string;
  transactionType: 'AUTHORIZATION' | 'CLEAR' | (string & {});
  isCredit?: boolean;
  complete?: boolean;
  amount: number;
  transactedAmount?: number;
  fees?: number;
  merchantName?: string;
  rawMerchantName?: string;
  merchantCategoryCode?: string;
  occurredTime: string;
  authorizedTime?: string;
  updatedTime?: string;
  userId?: string;
  userUuid?: string;
  userName?: string;
  budgetId?: string;
  budgetUuid?: string;
  budgetName?: string;
  cardId?: string;
  cardLastFour?: string;
  cardType?: string;
  receiptRequired?: boolean;
  receiptStatus?: 'ATTACHED' | 'MISSING' | 'NOT_ATTACHED' | (string & {});
  receipts?: SpendReceipt[];
  reviewRequired?: boolean;
  reviewers?: SpendReviewer[];
  accountingIntegrationTransactions?: Array<{ syncStatus?: string }>;
  declineReason?: string;
}

export interface Reimbursement {
  id: string;
  uuid?: string;
  amount: number;
  merchantName?: string;
  note?: string;
  /** e.g. MILEAGE */
  type?: string;
  /** ACH, PAYROLL */
  fulfillmentType?: string;
  /** Seen: APPROVED, READY_TO_PAY, PAID, PAYMENT_FAILED, AWAITING_TIER2_APPROVAL, APPROVAL_UNDONE, ARCHIVED. */
  status: string;
  statusHistory?: Array<{ actorId?: string; actorRole?: string; occurredTime: string; note?: string; status: string }>;
  submittedTime?: string;
  occurredDate?: string;
  retired?: boolean;
  budgetId?: string;
  userId?: string;
  receipts?: SpendReceipt[];
}

export interface Budget {
  id: string;
  uuid?: string;
  name: string;
  description?: string;
  retired: boolean;
  startDate?: string;
  recurringInterval?: string;
  recurringLimit?: number;
  receiptRequired?: boolean;
  currentPeriod?: {
    startDate?: string;
    endDate?: string;
    limit?: number;
    overspendBuffer?: number;
    assigned?: number;
    spent?: { cleared: number; pending: number; total: number };
  };
}

// ---- Webhook management (/connect-events/v3) ----

export interface Subscription {
  id: string;
  name: string;
  organizationId: string;
  status: { enabled: boolean };
  events: Array<{ type: string; version: string }>;
  notificationUrl: string;
  createdTime: string;
  updatedTime: string;
  /** Present only in the create (and key rotation) answer. */
  securityKey?: string;
}

/** One business GET /v3/network found; `id` is its Payment Network ID (PNI; RPPS ones start 0rv). */
export interface NetworkOrganization {
  id: string;
  name: string;
  addresses?: Address[];
}

/** GET /v3/network/invitation/{vendor|customer}/{id}: the connection request's status (as a vendor's `networkStatus`). */
export interface NetworkConnectionStatus {
  status: 'CONNECTED' | 'NOT_CONNECTED' | 'PENDING' | 'CONNECTED_RPPS' | (string & {});
}

/** GET /v3/users/{id} (Postman "Get user details"): the user's role decides what they may do. */
export interface OrgUser {
  role?: { type?: string };
}
