// Typed BILL v3 AP/AR endpoints for one organisation, with paging iterators; every call goes through the session.
//
// Verified facts (Postman collection; developer.bill.com /docs/filterable-fields, /v3/docs/sortable-fields):
// - lists take `max` (1..100, default 20), `page` (the previous answer's nextPage), `sort` (field:asc|desc), `filters`;
// - filterable: bills id/archived/vendorId(eq,in)/dueDate/paymentStatus(eq,ne,in)/createdTime/updatedTime;
//   invoices id/archived/customerId(eq,in)/createdTime/updatedTime; vendors and customers id/archived/name(eq,sw)/
//   createdTime/updatedTime. Invoice `status` and `dueDate` are NOT filterable: filter those after fetching;
// - bill approvals act as the signed-in user, so they must run in the approver's own session, never the bot's;
// - network invitations answer 200 with no body and send BILL's email (5 a minute);
// - webhook management lives on the /connect-events base with the same session headers; creating a
//   subscription or rotating its key needs an X-Idempotent-Key (UUID4) header.
import { randomUUID } from 'node:crypto';
import type { RunOptions } from '../infra/limits/types.js';
import { BillFilter, checkId, sortParam, type SortKey } from './filters.js';
import { pagedList, pageSize, type ListOptions, type PagedList } from './paging.js';
import type { OrgSession, SessionCall } from './sessions.js';
import type { Bill, Customer, Invoice, NetworkOrganization, Payment, PendingApproval, Subscription, Vendor } from './types.js';

const AP_AR_MAX_PAGE_SIZE = 100;

type Sorted<F extends string> = ListOptions & { sort?: Array<SortKey<F>> };
type BillSortField = 'dueDate' | 'description' | 'fundingAmount' | 'exchangeRate' | 'createdTime' | 'updatedTime' | 'archived';
type InvoiceSortField = 'invoiceNumber' | 'invoiceDate' | 'dueDate' | 'totalAmount' | 'createdTime' | 'updatedTime' | 'archived';
type PaymentSortField =
  'processDate' | 'amount' | 'confirmationNumber' | 'onlinePayment' | 'disbursementStatus' | 'createdTime' | 'updatedTime';

/** What every AP/AR list takes; `filter` adds more documented terms (createdTime, updatedTime...). */
type Filtered<F extends string = never> = Sorted<F> & { archived?: boolean; filter?: BillFilter };
/** `dueDate`: yyyy-MM-dd bounds. */
type BillListQuery = Filtered<BillSortField> & {
  dueDate?: { gt?: string; gte?: string; lt?: string; lte?: string };
  vendorId?: string | string[];
};
/** `nameStartsWith` is user text: refused with FilterValueError when it would break the filter. */
type PartyListQuery = Filtered & { nameStartsWith?: string };

type SubscriptionInput = Pick<Subscription, 'name' | 'events' | 'notificationUrl'> & Partial<Pick<Subscription, 'status'>>;
type Route = `${SessionCall['method']} /v3/${string}`;
type CallInput = Omit<SessionCall, 'method' | 'path' | 'route'> & { id?: string };

function oneOrMany(f: BillFilter, field: string, v: string | string[] | undefined): BillFilter {
  return v === undefined ? f : f.add(field, Array.isArray(v) ? 'in' : 'eq', v);
}

/** A replayable call: BILL answers a repeated X-Idempotent-Key with the first answer. */
const idempotentKey = (key: string) => ({ idempotent: true, headers: { 'X-Idempotent-Key': key } });

const nameStartsWith = (q: PartyListQuery) =>
  q.nameStartsWith === undefined ? undefined : new BillFilter().add('name', 'sw', q.nameStartsWith);

/** The AP/AR endpoints of one organisation, bound to a caller's priority. */
export function billOrgClient(session: OrgSession, run: RunOptions, eventsBaseUrl: string) {
  /** One call named by its route (also its log label): `{id}` becomes the checked `id`; "bills/{id}" refuses as "bill id". */
  function call<T = unknown>(route: Route, req: CallInput = {}): Promise<T> {
    const { id, ...rest } = req;
    const [method, template] = route.split(' ') as [SessionCall['method'], string];
    const path = template.replace(/([a-z]+)\/\{id\}/, (_, segment: string) => `${segment}/${checkId(segment.replace(/s$/, ''), id ?? '')}`);
    return session.call<T>({ ...rest, method, path, route }, run);
  }

  const events = <T = unknown>(route: Route, req: CallInput = {}) => call<T>(route, { ...req, baseUrl: eventsBaseUrl });

  /** `terms`: the kind's own filter terms; `archived` and `filter` follow them. */
  function list<T>(path: string, q: Filtered<string>, terms = new BillFilter(), baseUrl?: string): PagedList<T> {
    if (q.archived !== undefined) terms.add('archived', 'eq', q.archived);
    // Built now, so a refused value throws before anything is sent.
    const filters = terms.merge(q.filter).toString() || undefined;
    const sort = q.sort?.length ? sortParam(q.sort) : undefined;
    const max = pageSize(q, AP_AR_MAX_PAGE_SIZE);
    const route = `GET ${path}`;
    const fetchPage = (page: string | undefined) =>
      session.call({ method: 'GET', path, route, baseUrl, query: { max, page, sort, filters } }, run);
    return pagedList<T>(route, fetchPage, q);
  }

  return {
    bills: {
      list: (q: BillListQuery = {}): PagedList<Bill> => {
        const f = new BillFilter();
        for (const op of ['gt', 'gte', 'lt', 'lte'] as const) {
          const bound = q.dueDate?.[op];
          if (bound !== undefined) f.add('dueDate', op, bound);
        }
        return list('/v3/bills', q, oneOrMany(f, 'vendorId', q.vendorId));
      },
      get: (id: string) => call<Bill>('GET /v3/bills/{id}', { id }),
    },

    invoices: {
      list: (q: Filtered<InvoiceSortField> & { customerId?: string | string[] } = {}): PagedList<Invoice> =>
        list('/v3/invoices', q, oneOrMany(new BillFilter(), 'customerId', q.customerId)),
      get: (id: string) => call<Invoice>('GET /v3/invoices/{id}', { id }),
    },

    vendors: {
      list: (q: PartyListQuery = {}): PagedList<Vendor> => list('/v3/vendors', q, nameStartsWith(q)),
      get: (id: string) => call<Vendor>('GET /v3/vendors/{id}', { id }),
    },

    customers: {
      list: (q: PartyListQuery = {}): PagedList<Customer> => list('/v3/customers', q, nameStartsWith(q)),
      get: (id: string) => call<Customer>('GET /v3/customers/{id}', { id }),
    },

    payments: {
      list: (q: Sorted<PaymentSortField> = {}): PagedList<Payment> =>
        list('/v3/payments', { ...q, sort: q.sort ?? [{ field: 'processDate', order: 'desc' }] }),
      get: (id: string) => call<Payment>('GET /v3/payments/{id}', { id }),
    },

    approvals: {
      /** Bills waiting on the signed-in BILL user (the configured user for the bot's own session). */
      pending: async (): Promise<PendingApproval[]> => {
        const res = await call<{ bills?: PendingApproval[] } | null>('GET /v3/bill-approvals/pending-user-approvals');
        return Array.isArray(res?.bills) ? res.bills : [];
      },
      /** Approves or denies bills as the signed-in user. Not replayed after a lost answer (BILL has no idempotency key for it). */
      act: async (actions: Array<{ billId: string; action: 'APPROVE' | 'DENY'; comment?: string }>): Promise<{ status: string }> => {
        // The bill id comes from card data; a blank comment is left out.
        const body = actions.map((a) => ({ ...a, billId: checkId('bill', a.billId), comment: a.comment?.trim() ? a.comment : undefined }));
        const res = await call<{ status?: unknown } | undefined>('POST /v3/bill-approvals/actions', { body });
        // An empty 200 is taken as accepted; any status other than SUCCESS is reported as it came.
        return { status: typeof res?.status === 'string' ? res.status : 'OK' };
      },
    },

    network: {
      /** Businesses in the BILL network (a complete word of 3+ characters) or RPPS (partial names) named like `name`. */
      search: async (name: string, scope: 'BILL' | 'RPPS' | 'ALL'): Promise<NetworkOrganization[]> => {
        const res = await call<{ results?: unknown } | null>('GET /v3/network', { query: { name, scope } });
        return Array.isArray(res?.results) ? (res.results as NetworkOrganization[]) : [];
      },
      /** The connection request's status, as a vendor's `networkStatus`: CONNECTED, NOT_CONNECTED, PENDING, CONNECTED_RPPS. */
      status: (kind: 'vendor' | 'customer', id: string) => call<{ status: string }>(`GET /v3/network/invitation/${kind}/{id}`, { id }),
      /** A connection request to a business in the network; BILL may email it, so it passes the email budget. */
      invite: (kind: 'vendor' | 'customer', id: string, networkId: string, networkType: 'BILL' | 'RPPS') => {
        const body = { networkId: checkId('network', networkId), networkType };
        return call<undefined>(`POST /v3/network/invitation/${kind}/{id}`, { id, body, email: true });
      },
      /** BILL emails a vendor that is not in the network an invitation to join and connect. */
      inviteByEmail: (vendorId: string, email: string) =>
        call<undefined>('POST /v3/network/invitation/vendor/{id}/email', { id: vendorId, body: { email }, email: true }),
    },

    users: {
      /** The user's role decides what they may do. */
      get: (id: string) => call<{ role?: { type?: string } }>('GET /v3/users/{id}', { id }),
    },

    /** Webhook management: the same session on the /connect-events base. */
    subscriptions: {
      list: (o: ListOptions = {}): PagedList<Subscription> => list('/v3/subscriptions', o, undefined, eventsBaseUrl),
      get: (id: string) => events<Subscription>('GET /v3/subscriptions/{id}', { id }),
      /** The answer carries the signing `securityKey` once: store it (encrypted) right away. */
      create: (input: SubscriptionInput, idempotencyKey: string = randomUUID()) =>
        events<Subscription>('POST /v3/subscriptions', {
          ...idempotentKey(idempotencyKey),
          body: { status: { enabled: true }, ...input },
        }),
      update: (id: string, patch: Partial<SubscriptionInput>) => events<Subscription>('PATCH /v3/subscriptions/{id}', { id, body: patch }),
      remove: (id: string) => events<undefined>('DELETE /v3/subscriptions/{id}', { id }),
      rotateKey: (id: string, idempotencyKey: string = randomUUID()) =>
        events<{ securityKey: string }>('POST /v3/subscriptions/{id}/security_key', { id, ...idempotentKey(idempotencyKey) }),
      test: (id: string, body: Record<string, unknown> = {}) => events('POST /v3/subscriptions/{id}/test', { id, body }),
      catalog: () => events<Array<{ type: string; versions: string[] }>>('GET /v3/events/catalog'),
    },

    /** GET /v3/login/session: a cheap who-am-I that also keeps the session alive. */
    whoami: () => call<{ organizationId: string; userId: string }>('GET /v3/login/session'),
  };
}

export type BillOrgClient = ReturnType<typeof billOrgClient>;
