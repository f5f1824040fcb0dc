// Which fields each BILL list lets you filter and sort, and its page sizes — only what BILL documents.
// Sources: developer.bill.com /docs/filterable-fields (changelog 2025-02-18), /v3/docs/sortable-fields, Postman
// samples; S&E: listtransactions reference (max 50), changelogs 2025-11-05 and 2026-01-26, tested community findings.
// [I] marks choices where BILL documents nothing (the sandbox then accepts only createdTime/updatedTime or id).
import { at, prop, type FieldSpec, type ListSpec, type Op } from './query.js';

const CMP: Op[] = ['gt', 'gte', 'lt', 'lte'];
const ID: FieldSpec = { type: 'string', ops: ['eq', 'ne', 'in', 'nin'] };
const ARCHIVED: FieldSpec = { type: 'boolean', ops: ['eq', 'ne'] };
const TIMES: Record<string, FieldSpec> = {
  createdTime: { type: 'datetime', ops: CMP },
  updatedTime: { type: 'datetime', ops: CMP },
};
const byField = (f: string) => (item: unknown) => prop(item, f);
const sortTimes = { createdTime: byField('createdTime'), updatedTime: byField('updatedTime') };

export const BILLS: ListSpec = {
  filterable: {
    id: ID,
    archived: ARCHIVED,
    vendorId: { type: 'string', ops: ['eq', 'in'] },
    dueDate: { type: 'date', ops: CMP },
    paymentStatus: { type: 'string', ops: ['eq', 'ne', 'in'] },
    payFromChartOfAccountId: { type: 'string', ops: ['eq', 'in'] },
    'classifications.chartOfAccountId': { type: 'string', ops: ['eq', 'in'], get: (b) => at(b, 'classifications.chartOfAccountId') },
    ...TIMES,
  },
  sortable: {
    dueDate: byField('dueDate'),
    description: byField('description'),
    fundingAmount: byField('fundingAmount'),
    exchangeRate: byField('exchangeRate'),
    archived: byField('archived'),
    ...sortTimes,
  },
  defaultSort: { field: 'createdTime', order: 'desc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

export const INVOICES: ListSpec = {
  filterable: {
    id: ID,
    archived: ARCHIVED,
    customerId: { type: 'string', ops: ['eq', 'in'] },
    payToChartOfAccountId: { type: 'string', ops: ['eq', 'in'] },
    ...TIMES,
  },
  sortable: {
    invoiceNumber: byField('invoiceNumber'),
    invoiceDate: byField('invoiceDate'),
    dueDate: byField('dueDate'),
    totalAmount: byField('totalAmount'),
    archived: byField('archived'),
    ...sortTimes,
  },
  defaultSort: { field: 'createdTime', order: 'desc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

const NAME: FieldSpec = { type: 'string', ops: ['eq', 'sw'], caseInsensitive: true };

export const VENDORS: ListSpec = {
  filterable: {
    id: ID,
    archived: ARCHIVED,
    name: NAME,
    accountType: { type: 'string', ops: ['eq'] },
    billCurrency: { type: 'string', ops: ['eq'] },
    ...TIMES,
  },
  sortable: { ...sortTimes },
  defaultSort: { field: 'createdTime', order: 'desc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

export const CUSTOMERS: ListSpec = {
  filterable: {
    id: ID,
    archived: ARCHIVED,
    name: NAME,
    accountType: { type: 'string', ops: ['eq'] },
    invoiceCurrency: { type: 'string', ops: ['eq'] },
    ...TIMES,
  },
  sortable: { ...sortTimes },
  defaultSort: { field: 'createdTime', order: 'desc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

export const PAYMENTS: ListSpec = {
  // [I] filterable fields are not documented for payments: id and the times.
  filterable: { id: ID, ...TIMES },
  sortable: {
    processDate: byField('processDate'),
    amount: byField('amount'),
    confirmationNumber: byField('confirmationNumber'),
    onlinePayment: byField('onlinePayment'),
    disbursementStatus: byField('disbursementStatus'),
    ...sortTimes,
  },
  defaultSort: { field: 'createdTime', order: 'desc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

export const RECEIVABLE_PAYMENTS: ListSpec = {
  // [X] updatedTime:gte works on receivable-payments; [I] the rest.
  filterable: { id: ID, ...TIMES },
  sortable: { ...sortTimes },
  defaultSort: { field: 'createdTime', order: 'desc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

export const SUBSCRIPTIONS: ListSpec = {
  filterable: {},
  sortable: { ...sortTimes },
  defaultSort: { field: 'createdTime', order: 'asc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

export const NOTIFICATIONS: ListSpec = {
  filterable: {},
  sortable: { createdTime: byField('createdTime') },
  defaultSort: { field: 'createdTime', order: 'desc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

const idOrUuid = (item: unknown) => [prop(item, 'id'), prop(item, 'uuid')];

export const SPEND_TRANSACTIONS: ListSpec = {
  filterable: {
    occurredTime: { type: 'datetime', ops: ['gte', 'lte'] },
    updatedTime: { type: 'datetime', ops: ['gte', 'lte'] },
    authorizedTime: { type: 'datetime', ops: ['gte', 'lte'] },
    syncStatus: { type: 'string', ops: ['eq', 'ne', 'in', 'nin'], get: (t) => at(t, 'accountingIntegrationTransactions.0.syncStatus') },
    budgetId: { type: 'string', ops: ['eq'], get: (t) => [prop(t, 'budgetId'), prop(t, 'budgetUuid')] },
    amount: { type: 'number', ops: ['eq', 'gt', 'gte', 'lt', 'lte'] },
    type: { type: 'string', ops: ['eq', 'ne'], get: (t) => prop(t, 'transactionType') },
    complete: { type: 'boolean', ops: ['eq'] },
  },
  sortable: { occurredTime: byField('occurredTime'), amount: byField('amount'), updatedTime: byField('updatedTime') },
  defaultSort: { field: 'occurredTime', order: 'desc' },
  maxPageSize: 50,
  defaultPageSize: 20,
};

export const SPEND_REIMBURSEMENTS: ListSpec = {
  filterable: { reimbursementIds: { type: 'string', ops: ['eq', 'in'], get: idOrUuid } },
  sortable: { submittedTime: byField('submittedTime'), amount: byField('amount') },
  defaultSort: { field: 'submittedTime', order: 'desc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};

export const SPEND_BUDGETS: ListSpec = {
  filterable: { budgetIds: { type: 'string', ops: ['eq', 'in'], get: idOrUuid }, retired: { type: 'boolean', ops: ['eq'] } },
  sortable: { name: byField('name'), spent: (b) => at(b, 'currentPeriod.spent.total') ?? 0 },
  defaultSort: { field: 'name', order: 'asc' },
  maxPageSize: 100,
  defaultPageSize: 20,
};
