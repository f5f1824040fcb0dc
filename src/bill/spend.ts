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
import { filterTerm } from './filters.js';
import type { BillHttp, BillRequest } from './http.js';
import { pagedList, pageSize, type ListOptions, type PagedList } from './paging.js';
import type { Budget, Reimbursement, SpendTransaction } from './types.js';

const SPEND_TRANSACTIONS_MAX_PAGE_SIZE = 50;
const SPEND_MAX_PAGE_SIZE = 100;

/** `baseUrl` has the form of the AP/AR base (…/connect); paths are appended as /v3/spend/... */
export function spendClient(http: BillHttp, baseUrl: string, apiToken: string, run: RunOptions) {
  const send = <T = unknown>(req: Pick<BillRequest, 'path' | 'route' | 'query'>) =>
    http.send<T>({
      ...req,
      method: 'GET',
      baseUrl,
      idempotent: true,
      headers: () => ({ apiToken }),
      upstream: { service: 'spend', token: apiToken },
      run,
    });

  /** `query`: sort, filters and other parameters beside the page size and the cursor. */
  function list<T>(path: string, o: ListOptions, cap: number, query: BillRequest['query']): PagedList<T> {
    const max = pageSize(o, cap);
    const route = `GET ${path}`;
    return pagedList<T>(route, (nextPage) => send({ path, route, query: { max, nextPage, ...query } }), o);
  }

  /** S&E ids may be UUIDs or base64 ids (with '=', '+', '/'): those are allowed and percent-encoded into the path. */
  function get<T>(path: string, kind: string, id: string): Promise<T> {
    if (!/^[A-Za-z0-9_=+/-]{1,128}$/.test(id)) throw new FilterValueError(`${kind} id`, 'not a Spend & Expense id');
    return send<T>({ path: `${path}/${encodeURIComponent(id)}`, route: `GET ${path}/{id}` });
  }

  return {
    transactions: {
      /** Newest first, receipts included (so "missing receipts" can be computed); `occurredFrom` is occurredTime:gte. */
      list: (q: ListOptions & { occurredFrom?: string } = {}): PagedList<SpendTransaction> => {
        const filters = q.occurredFrom === undefined ? undefined : filterTerm('occurredTime', 'gte', q.occurredFrom);
        const query = { sort: 'occurredTime:desc', filters, includeReceipts: true };
        return list('/v3/spend/transactions', q, SPEND_TRANSACTIONS_MAX_PAGE_SIZE, query);
      },
      get: (id: string) => get<SpendTransaction>('/v3/spend/transactions', 'transaction', id),
    },
    reimbursements: {
      /** Newest submitted first. */
      list: (q: ListOptions = {}): PagedList<Reimbursement> =>
        list('/v3/spend/reimbursements', q, SPEND_MAX_PAGE_SIZE, { sort: 'submittedTime:desc' }),
      get: (id: string) => get<Reimbursement>('/v3/spend/reimbursements', 'reimbursement', id),
    },
    budgets: {
      list: (q: ListOptions & { retired?: boolean } = {}): PagedList<Budget> => {
        const filters = q.retired === undefined ? undefined : filterTerm('retired', 'eq', q.retired);
        return list('/v3/spend/budgets', q, SPEND_MAX_PAGE_SIZE, { filters });
      },
      get: (id: string) => get<Budget>('/v3/spend/budgets', 'budget', id),
    },
  };
}

export type SpendClient = ReturnType<typeof spendClient>;
