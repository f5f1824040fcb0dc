// BILL v3 records as the sandbox serves them: what billbridge reads (bill/types.ts) plus the rest of BILL's shape
// (official Postman collection, akleinvm/billdotcom-sdk-v3 reference/billdotcom_v3.json), so answers look like BILL's.
import type * as Read from '../bill/types.js';

export type { Approver, PendingApproval, Subscription } from '../bill/types.js';

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

export interface BillLineItem extends Read.BillLineItem {
  quantity?: number;
  price?: number;
  classifications?: Classifications;
}

export interface Bill extends Read.Bill {
  fundingAmount?: number;
  exchangeRate?: number;
  billLineItems?: BillLineItem[];
  payFromChartOfAccountId?: string;
  classifications?: Classifications;
}

export interface Invoice extends Read.Invoice {
  exchangeRate?: number;
  invoiceLineItems?: Array<{ id: string; description?: string; price?: number; quantity?: number; classifications?: Classifications }>;
  payToChartOfAccountId?: string;
  classifications?: Classifications;
  salesTaxTotal?: number;
  salesTaxPercentage?: number;
  enableCardPayment?: boolean;
}

export interface Vendor extends Read.Vendor {
  shortName?: string;
  accountNumber?: string;
  accountType?: 'BUSINESS' | 'PERSON' | 'NONE' | (string & {});
  phone?: string;
  address?: Address;
  paymentInformation?: { payeeName?: string; lastPaymentDate?: string; payByType?: string };
  additionalInfo?: { track1099?: boolean; leadTimeInDays?: number; combinePayments?: boolean };
  balance?: { amount: number; lastUpdatedDate?: string };
}

export interface Customer extends Read.Customer {
  companyName?: string;
  phone?: string;
  contact?: { firstName?: string; lastName?: string };
  accountType?: string;
  accountNumber?: string;
}

export interface Payment extends Read.Payment {
  fundingAccount?: { type: string; id: string };
  fundingAmount?: number;
  exchangeRate?: number;
  transactionNumber?: string;
  confirmationNumber?: string;
  onlinePayment?: boolean;
  disbursementStatus?: string;
  disbursementType?: string;
  cancelRequestSubmitted?: boolean;
  createdBy?: string;
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

interface SpendReceipt {
  filename?: string;
  uuid?: string;
}

export interface SpendTransaction extends Read.SpendTransaction {
  uuid?: string;
  isCredit?: boolean;
  complete?: boolean;
  transactedAmount?: number;
  fees?: number;
  merchantCategoryCode?: string;
  authorizedTime?: string;
  updatedTime?: string;
  userUuid?: string;
  budgetId?: string;
  budgetUuid?: string;
  cardId?: string;
  cardLastFour?: string;
  cardType?: string;
  receipts?: SpendReceipt[];
  reviewRequired?: boolean;
  reviewers?: Array<{ approverType?: string; status: string; userId?: string; userName?: string }>;
  accountingIntegrationTransactions?: Array<{ syncStatus?: string }>;
}

export interface Reimbursement extends Read.Reimbursement {
  uuid?: string;
  /** ACH, PAYROLL */
  fulfillmentType?: string;
  statusHistory?: Array<{ actorId?: string; actorRole?: string; occurredTime: string; note?: string; status: string }>;
  occurredDate?: string;
  budgetId?: string;
  receipts?: SpendReceipt[];
}

export interface Budget extends Read.Budget {
  uuid?: string;
  description?: string;
  startDate?: string;
  recurringInterval?: string;
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
