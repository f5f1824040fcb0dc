// BILL Spend & Expense client: `apiToken` header (no session), `nextPage=` cursors, transactions, reimbursements, budgets.
//
// Verified facts (developer.bill.com /docs/authentication-with-api-token, /v3/docs/spend-expense-api; Postman
// "Get list of transactions|reimbursements|budgets"; shared/reference/bill-v3-api.md §6):
// - header `apiToken: <token>`; same gateway as AP/AR with paths /v3/spend/...; 60 calls per minute;
// - lists take `max`, `nextPage`/`prevPage` (NOT `page`: unknown params are silently ignored), `sort`, `filters`;
//   answer {nextPage, prevPage, results}; transactions max 50, other lists 100;
// - transaction filters: occurredTime/updatedTime/authorizedTime (gte, lte), syncStatus, budgetId (eq), amount,
//   type, complete; `status` and `receiptStatus` are not filterable (filter those after fetching);
//   reimbursements `reimbursementIds`; budgets `budgetIds`, `retired`.
import type { RunOptions } from '../infra/limits/types.js';
import { FilterValueError } from '../errors.js';
import { BillFilter, sortParam, type SortKey } from './filters.js';
import type { BillHttp } from './http.js';
import { DEFAULT_MAX_PAGES, PagedList, readPage } from './paging.js';
import type { Budget, Reimbursement, SpendTransaction } from './types.js';

const SPEND_TRANSACTIONS_MAX_PAGE_SIZE = 50;
const SPEND_MAX_PAGE_SIZE = 100;

export interface SpendListOptions {
  pageSize?: number;
  maxPages?: number;
  startPage?: string;
}

interface SpendTransactionQuery extends SpendListOptions {
  /** ISO date-time or Date; occurredTime:gte. */
  occurredFrom?: string | Date;
  /** occurredTime:lte (a date-only value means midnight, so it excludes that day). */
  occurredTo?: string | Date;
  updatedSince?: string | Date;
  budgetId?: string;
  complete?: boolean;
  /** Default true: receipts are included so "missing receipts" can be computed. */
  includeReceipts?: boolean;
  /** Default occurredTime:desc. */
  sort?: Array<SortKey<'occurredTime' | 'amount' | 'updatedTime'>>;
  filter?: BillFilter;
}

interface ReimbursementQuery extends SpendListOptions {
  ids?: string[];
  /** Default submittedTime:desc. */
  sort?: Array<SortKey<'submittedTime' | 'amount'>>;
  filter?: BillFilter;
}

interface BudgetQuery extends SpendListOptions {
  ids?: string[];
  retired?: boolean;
  sort?: Array<SortKey<'name' | 'spent'>>;
  filter?: BillFilter;
}

export interface SpendClientDeps {
  http: BillHttp;
  /** Same form as the AP/AR base (…/connect); paths are appended as /v3/spend/... */
  baseUrl: string;
  apiToken: string;
}

/** S&E ids may be UUIDs or base64 ids (with '=', '+', '/'): allow those and percent-encode them into the path. */
function spendId(kind: string, id: string): string {
  if (!/^[A-Za-z0-9_=+/-]{1,128}$/.test(id)) throw new FilterValueError(`${kind} id`, 'not a Spend & Expense id');
  return encodeURIComponent(id);
}

function size(n: number | undefined, cap: number): number {
  const v = n ?? cap;
  if (!Number.isInteger(v) || v < 1 || v > cap) throw new RangeError(`page size must be 1..${cap}, got ${v}`);
  return v;
}

export class SpendClient {
  readonly transactions;
  readonly reimbursements;
  readonly budgets;

  constructor(
    private readonly deps: SpendClientDeps,
    private readonly run: RunOptions,
  ) {
    this.transactions = {
      list: (q: SpendTransactionQuery = {}): PagedList<SpendTransaction> => {
        const f = new BillFilter();
        if (q.occurredFrom !== undefined) f.gte('occurredTime', q.occurredFrom);
        if (q.occurredTo !== undefined) f.lte('occurredTime', q.occurredTo);
        if (q.updatedSince !== undefined) f.gte('updatedTime', q.updatedSince);
        if (q.budgetId !== undefined) f.eq('budgetId', q.budgetId);
        if (q.complete !== undefined) f.eq('complete', q.complete);
        f.merge(q.filter);
        return this.list<SpendTransaction>(
          '/v3/spend/transactions',
          f,
          q.sort ?? [{ field: 'occurredTime', order: 'desc' }],
          size(q.pageSize, SPEND_TRANSACTIONS_MAX_PAGE_SIZE),
          q,
          {
            includeReceipts: q.includeReceipts ?? true,
          },
        );
      },
      get: (id: string): Promise<SpendTransaction> => this.get('/v3/spend/transactions', 'transaction', id),
    };
    this.reimbursements = {
      list: (q: ReimbursementQuery = {}): PagedList<Reimbursement> => {
        const f = new BillFilter();
        if (q.ids?.length) f.in('reimbursementIds', q.ids);
        f.merge(q.filter);
        return this.list<Reimbursement>(
          '/v3/spend/reimbursements',
          f,
          q.sort ?? [{ field: 'submittedTime', order: 'desc' }],
          size(q.pageSize, SPEND_MAX_PAGE_SIZE),
          q,
        );
      },
      get: (id: string): Promise<Reimbursement> => this.get('/v3/spend/reimbursements', 'reimbursement', id),
    };
    this.budgets = {
      list: (q: BudgetQuery = {}): PagedList<Budget> => {
        const f = new BillFilter();
        if (q.ids?.length) f.in('budgetIds', q.ids);
        if (q.retired !== undefined) f.eq('retired', q.retired);
        f.merge(q.filter);
        return this.list<Budget>('/v3/spend/budgets', f, q.sort, size(q.pageSize, SPEND_MAX_PAGE_SIZE), q);
      },
      get: (id: string): Promise<Budget> => this.get('/v3/spend/budgets', 'budget', id),
    };
  }

  private headers = () => ({ apiToken: this.deps.apiToken });

  private list<T>(
    path: string,
    filter: BillFilter,
    sort: readonly SortKey[] | undefined,
    max: number,
    o: SpendListOptions,
    extra: Record<string, string | boolean> = {},
  ): PagedList<T> {
    const filters = filter.toString();
    const sortValue = sort?.length ? sortParam(sort) : undefined;
    const route = `GET ${path}`;
    return new PagedList<T>(
      async (cursor) =>
        readPage<T>(
          await this.deps.http.send<unknown>({
            method: 'GET',
            baseUrl: this.deps.baseUrl,
            path,
            route,
            idempotent: true,
            query: { max, nextPage: cursor, sort: sortValue, filters: filters || undefined, ...extra },
            headers: this.headers,
            upstream: { service: 'spend', token: this.deps.apiToken },
            run: this.run,
          }),
          route,
        ),
      { maxPages: o.maxPages ?? DEFAULT_MAX_PAGES, startPage: o.startPage },
    );
  }

  private get<T>(path: string, kind: string, id: string): Promise<T> {
    return this.deps.http.send<T>({
      method: 'GET',
      baseUrl: this.deps.baseUrl,
      path: `${path}/${spendId(kind, id)}`,
      route: `GET ${path}/{id}`,
      idempotent: true,
      headers: this.headers,
      upstream: { service: 'spend', token: this.deps.apiToken },
      run: this.run,
    });
  }
}
