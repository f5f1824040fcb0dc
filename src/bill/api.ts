// Typed BILL v3 AP/AR endpoints for one organisation, with paging iterators; every call goes through the session.
//
// Verified facts (Postman collection; developer.bill.com /docs/filterable-fields, /v3/docs/sortable-fields):
// - lists take `max` (1..100, default 20), `page` (the previous answer's nextPage), `sort` (field:asc|desc), `filters`;
// - filterable: bills id/archived/vendorId(eq,in)/dueDate/paymentStatus(eq,ne,in)/createdTime/updatedTime;
//   invoices id/archived/customerId(eq,in)/createdTime/updatedTime; vendors and customers id/archived/name(eq,sw)/
//   createdTime/updatedTime. Invoice `status` and `dueDate` are NOT filterable: filter those after fetching;
// - sortable: bills dueDate/createdTime/updatedTime/...; invoices invoiceNumber/invoiceDate/dueDate/totalAmount/...;
//   payments processDate/amount/createdTime/updatedTime/...;
// - GET /v3/bill-approvals/pending-user-approvals -> {bills:[{billId, vendorId, amount, dueDate}]} for the signed-in user;
// - POST /v3/bill-approvals/actions with an ARRAY body [{billId, action: "APPROVE"|"DENY", comment}] -> {status:"SUCCESS"},
//   acting as the signed-in user (so approvals must run in the approver's own session, never the bot's);
// - GET /v3/network?name&scope=BILL|RPPS|ALL -> {results:[{id (the Payment Network ID), name, type, addresses,
//   managedBy}]}; POST /v3/network/invitation/{vendor|customer}/{id} {networkId, networkType} and
//   POST /v3/network/invitation/vendor/{id}/email {email} answer 200 with no body and send BILL's email (5 a minute);
//   GET /v3/network/invitation/{vendor|customer}/{id} -> {id, status, networkId}; GET /v3/users/{id} -> role.type;
// - webhook management lives on the /connect-events base with the same session headers; creating a
//   subscription or rotating its key needs an X-Idempotent-Key (UUID4) header.
import { randomUUID } from 'node:crypto';
import type { RunOptions } from '../infra/limits/types.js';
import { BillFilter, checkId, sortParam, type SortKey } from './filters.js';
import { DEFAULT_MAX_PAGES, PagedList, readPage } from './paging.js';
import type { OrgSession, SessionInfo } from './sessions.js';
import type {
  ApprovalActionInput,
  ApprovalActionResult,
  Bill,
  BillPaymentStatus,
  Customer,
  Invoice,
  NetworkConnectionStatus,
  NetworkOrganization,
  NetworkScope,
  OrgUser,
  Payment,
  PendingApproval,
  ReceivablePayment,
  SessionDetails,
  Subscription,
  SubscriptionEvent,
  Vendor,
} from './types.js';

const AP_AR_MAX_PAGE_SIZE = 100;

export interface ListOptions {
  /** Rows per page (BILL `max`), 1..100; default 100. */
  pageSize?: number;
  /** Page cap for one walk; default 20. */
  maxPages?: number;
  /** Continue from a cursor a previous walk returned. */
  startPage?: string;
}

type BillSortField = 'dueDate' | 'description' | 'fundingAmount' | 'exchangeRate' | 'createdTime' | 'updatedTime' | 'archived';
type InvoiceSortField = 'invoiceNumber' | 'invoiceDate' | 'dueDate' | 'totalAmount' | 'createdTime' | 'updatedTime' | 'archived';
type PaymentSortField =
  'processDate' | 'amount' | 'confirmationNumber' | 'onlinePayment' | 'disbursementStatus' | 'createdTime' | 'updatedTime';
type GenericSortField = 'createdTime' | 'updatedTime';

/** yyyy-MM-dd bounds. */
interface DateRange {
  gt?: string;
  gte?: string;
  lt?: string;
  lte?: string;
}

interface BillListQuery extends ListOptions {
  dueDate?: DateRange;
  paymentStatus?: BillPaymentStatus | BillPaymentStatus[];
  vendorId?: string | string[];
  archived?: boolean;
  sort?: Array<SortKey<BillSortField>>;
  /** More documented terms (createdTime, updatedTime...), built with BillFilter. */
  filter?: BillFilter;
}

interface InvoiceListQuery extends ListOptions {
  customerId?: string | string[];
  archived?: boolean;
  sort?: Array<SortKey<InvoiceSortField>>;
  filter?: BillFilter;
}

export interface PartyListQuery extends ListOptions {
  /** Name starts with (user text: refused with FilterValueError when it would break the filter). */
  nameStartsWith?: string;
  /** Exact name. */
  name?: string;
  archived?: boolean;
  sort?: Array<SortKey<GenericSortField>>;
  filter?: BillFilter;
}

interface PaymentListQuery extends ListOptions {
  /** Default processDate:desc. */
  sort?: Array<SortKey<PaymentSortField>>;
  filter?: BillFilter;
}

interface ReceivablePaymentListQuery extends ListOptions {
  /** Default createdTime:desc. */
  sort?: Array<SortKey<GenericSortField>>;
  filter?: BillFilter;
}

interface SubscriptionInput {
  name: string;
  status?: { enabled: boolean };
  events: SubscriptionEvent[];
  notificationUrl: string;
}

function dateRange(f: BillFilter, field: string, r: DateRange | undefined): void {
  if (!r) return;
  if (r.gt !== undefined) f.gt(field, r.gt);
  if (r.gte !== undefined) f.gte(field, r.gte);
  if (r.lt !== undefined) f.lt(field, r.lt);
  if (r.lte !== undefined) f.lte(field, r.lte);
}

function oneOrMany(f: BillFilter, field: string, v: string | string[] | undefined): void {
  if (v === undefined) return;
  if (Array.isArray(v)) f.in(field, v);
  else f.eq(field, v);
}

function pageSize(n: number | undefined, cap: number): number {
  const size = n ?? cap;
  if (!Number.isInteger(size) || size < 1 || size > cap) throw new RangeError(`page size must be 1..${cap}, got ${size}`);
  return size;
}

/** The AP/AR endpoints of one organisation, bound to a caller's priority and wait budget. */
export class BillOrgClient {
  readonly bills;
  readonly invoices;
  readonly vendors;
  readonly customers;
  readonly payments;
  readonly receivablePayments;
  readonly approvals;
  readonly network;
  readonly users;
  readonly subscriptions;

  constructor(
    private readonly session: OrgSession,
    private readonly run: RunOptions,
    private readonly eventsBaseUrl: string,
  ) {
    this.bills = {
      list: (q: BillListQuery = {}): PagedList<Bill> => {
        const f = new BillFilter();
        dateRange(f, 'dueDate', q.dueDate);
        if (q.paymentStatus !== undefined) {
          if (Array.isArray(q.paymentStatus)) f.in('paymentStatus', q.paymentStatus);
          else f.eq('paymentStatus', q.paymentStatus);
        }
        oneOrMany(f, 'vendorId', q.vendorId);
        if (q.archived !== undefined) f.eq('archived', q.archived);
        f.merge(q.filter);
        return this.list<Bill>('/v3/bills', f, q.sort, q);
      },
      get: (id: string): Promise<Bill> => this.get<Bill>('/v3/bills', 'bill', id),
    };
    this.invoices = {
      list: (q: InvoiceListQuery = {}): PagedList<Invoice> => {
        const f = new BillFilter();
        oneOrMany(f, 'customerId', q.customerId);
        if (q.archived !== undefined) f.eq('archived', q.archived);
        f.merge(q.filter);
        return this.list<Invoice>('/v3/invoices', f, q.sort, q);
      },
      get: (id: string): Promise<Invoice> => this.get<Invoice>('/v3/invoices', 'invoice', id),
    };
    this.vendors = {
      list: (q: PartyListQuery = {}): PagedList<Vendor> => this.list<Vendor>('/v3/vendors', this.partyFilter(q), q.sort, q),
      get: (id: string): Promise<Vendor> => this.get<Vendor>('/v3/vendors', 'vendor', id),
    };
    this.customers = {
      list: (q: PartyListQuery = {}): PagedList<Customer> => this.list<Customer>('/v3/customers', this.partyFilter(q), q.sort, q),
      get: (id: string): Promise<Customer> => this.get<Customer>('/v3/customers', 'customer', id),
    };
    this.payments = {
      list: (q: PaymentListQuery = {}): PagedList<Payment> =>
        this.list<Payment>('/v3/payments', new BillFilter().merge(q.filter), q.sort ?? [{ field: 'processDate', order: 'desc' }], q),
      get: (id: string): Promise<Payment> => this.get<Payment>('/v3/payments', 'payment', id),
    };
    this.receivablePayments = {
      list: (q: ReceivablePaymentListQuery = {}): PagedList<ReceivablePayment> =>
        this.list<ReceivablePayment>(
          '/v3/receivable-payments',
          new BillFilter().merge(q.filter),
          q.sort ?? [{ field: 'createdTime', order: 'desc' }],
          q,
        ),
      get: (id: string): Promise<ReceivablePayment> => this.get<ReceivablePayment>('/v3/receivable-payments', 'received payment', id),
    };
    this.approvals = {
      /** Bills waiting on the signed-in BILL user (the configured user for the bot's own session). */
      pending: async (): Promise<PendingApproval[]> => {
        const res = await this.session.call<{ bills?: PendingApproval[] } | null>(
          {
            method: 'GET',
            path: '/v3/bill-approvals/pending-user-approvals',
            idempotent: true,
            route: 'GET /v3/bill-approvals/pending-user-approvals',
          },
          this.run,
        );
        return Array.isArray(res?.bills) ? res.bills : [];
      },
      /**
       * Approves or denies bills as the signed-in user. Not replayed after a lost answer: BILL has no idempotency key
       * for it, so the caller re-reads the pending list instead of sending twice.
       */
      act: async (actions: ApprovalActionInput[]): Promise<ApprovalActionResult> => {
        if (actions.length === 0) throw new RangeError('no approval actions to send');
        const body = actions.map((a) => {
          // Typed, but built from card input: checked all the same.
          const action: string = a.action;
          if (action !== 'APPROVE' && action !== 'DENY') throw new RangeError(`approval action must be APPROVE or DENY`);
          const item: ApprovalActionInput = { billId: checkId('bill', a.billId), action: a.action };
          if (a.comment !== undefined && a.comment.trim() !== '') item.comment = a.comment;
          return item;
        });
        const res = await this.session.call<ApprovalActionResult | undefined>(
          { method: 'POST', path: '/v3/bill-approvals/actions', idempotent: false, route: 'POST /v3/bill-approvals/actions', body },
          this.run,
        );
        // An empty 200 is taken as accepted; any status other than SUCCESS is reported as it came.
        return { status: typeof res?.status === 'string' ? res.status : 'OK' };
      },
    };
    const invitation = (kind: 'vendor' | 'customer', id: string) => `/v3/network/invitation/${kind}/${checkId(kind, id)}`;
    this.network = {
      /** Businesses in the BILL network (a complete word of 3+ characters) or RPPS (partial names) named like `name`. */
      search: async (name: string, scope: NetworkScope): Promise<NetworkOrganization[]> => {
        const res = await this.session.call<{ results?: unknown } | null>(
          { method: 'GET', path: '/v3/network', route: 'GET /v3/network', idempotent: true, query: { name, scope } },
          this.run,
        );
        return Array.isArray(res?.results) ? (res.results as NetworkOrganization[]) : [];
      },
      status: (kind: 'vendor' | 'customer', id: string): Promise<NetworkConnectionStatus> =>
        this.session.call<NetworkConnectionStatus>(
          { method: 'GET', path: invitation(kind, id), route: `GET /v3/network/invitation/${kind}/{id}`, idempotent: true },
          this.run,
        ),
      /** A connection request to a business in the network; BILL may email it, so it passes the email budget. */
      invite: async (kind: 'vendor' | 'customer', id: string, networkId: string, networkType: 'BILL' | 'RPPS'): Promise<void> => {
        await this.session.call<unknown>(
          {
            method: 'POST',
            path: invitation(kind, id),
            route: `POST /v3/network/invitation/${kind}/{id}`,
            idempotent: false,
            body: { networkId: checkId('network', networkId), networkType },
            email: true,
          },
          this.run,
        );
      },
      /** BILL emails a vendor that is not in the network an invitation to join and connect. */
      inviteByEmail: async (vendorId: string, email: string): Promise<void> => {
        await this.session.call<unknown>(
          {
            method: 'POST',
            path: `${invitation('vendor', vendorId)}/email`,
            route: 'POST /v3/network/invitation/vendor/{id}/email',
            idempotent: false,
            body: { email },
            email: true,
          },
          this.run,
        );
      },
    };
    this.users = {
      get: (id: string): Promise<OrgUser> => this.get<OrgUser>('/v3/users', 'user', id),
    };
    const events = (req: {
      method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
      path: string;
      route: string;
      body?: unknown;
      idempotent: boolean;
      headers?: Record<string, string>;
      query?: Record<string, string | number | undefined>;
    }) => this.session.call<unknown>({ ...req, baseUrl: this.eventsBaseUrl }, this.run);
    this.subscriptions = {
      list: (o: ListOptions = {}): PagedList<Subscription> =>
        new PagedList<Subscription>(
          async (cursor) =>
            readPage<Subscription>(
              await events({
                method: 'GET',
                path: '/v3/subscriptions',
                route: 'GET /v3/subscriptions',
                idempotent: true,
                query: { max: pageSize(o.pageSize, AP_AR_MAX_PAGE_SIZE), page: cursor },
              }),
              'GET /v3/subscriptions',
            ),
          { maxPages: o.maxPages ?? DEFAULT_MAX_PAGES, startPage: o.startPage },
        ),
      get: async (id: string): Promise<Subscription> =>
        (await events({
          method: 'GET',
          path: `/v3/subscriptions/${checkId('subscription', id)}`,
          route: 'GET /v3/subscriptions/{id}',
          idempotent: true,
        })) as Subscription,
      /** The answer carries the signing `securityKey` once: store it (encrypted) right away. */
      create: async (input: SubscriptionInput, idempotencyKey: string = randomUUID()): Promise<Subscription> =>
        (await events({
          method: 'POST',
          path: '/v3/subscriptions',
          route: 'POST /v3/subscriptions',
          // Safe to replay with the same idempotency key: BILL answers a repeated key with the first answer.
          idempotent: true,
          headers: { 'X-Idempotent-Key': idempotencyKey },
          body: { status: { enabled: true }, ...input },
        })) as Subscription,
      update: async (id: string, patch: Partial<SubscriptionInput>): Promise<Subscription> =>
        (await events({
          method: 'PATCH',
          path: `/v3/subscriptions/${checkId('subscription', id)}`,
          route: 'PATCH /v3/subscriptions/{id}',
          idempotent: false,
          body: patch,
        })) as Subscription,
      remove: async (id: string): Promise<void> => {
        await events({
          method: 'DELETE',
          path: `/v3/subscriptions/${checkId('subscription', id)}`,
          route: 'DELETE /v3/subscriptions/{id}',
          idempotent: true,
        });
      },
      rotateKey: async (id: string, idempotencyKey: string = randomUUID()): Promise<{ securityKey: string }> =>
        (await events({
          method: 'POST',
          path: `/v3/subscriptions/${checkId('subscription', id)}/security_key`,
          route: 'POST /v3/subscriptions/{id}/security_key',
          idempotent: true,
          headers: { 'X-Idempotent-Key': idempotencyKey },
        })) as { securityKey: string },
      test: async (id: string, body?: Record<string, unknown>): Promise<unknown> =>
        events({
          method: 'POST',
          path: `/v3/subscriptions/${checkId('subscription', id)}/test`,
          route: 'POST /v3/subscriptions/{id}/test',
          idempotent: false,
          body: body ?? {},
        }),
      catalog: async (): Promise<Array<{ type: string; versions: string[] }>> =>
        (await events({ method: 'GET', path: '/v3/events/catalog', route: 'GET /v3/events/catalog', idempotent: true })) as Array<{
          type: string;
          versions: string[];
        }>,
    };
  }

  get orgId(): string {
    return this.session.orgId;
  }

  /** Session age, idle time, logins and last outcome (for `status`). */
  sessionInfo(): SessionInfo {
    return this.session.info();
  }

  /** GET /v3/login/session: a cheap who-am-I that also keeps the session alive. */
  whoami(): Promise<SessionDetails> {
    return this.session.call<SessionDetails>(
      { method: 'GET', path: '/v3/login/session', idempotent: true, route: 'GET /v3/login/session' },
      this.run,
    );
  }

  private partyFilter(q: PartyListQuery): BillFilter {
    const f = new BillFilter();
    if (q.name !== undefined) f.eq('name', q.name);
    if (q.nameStartsWith !== undefined) f.sw('name', q.nameStartsWith);
    if (q.archived !== undefined) f.eq('archived', q.archived);
    return f.merge(q.filter);
  }

  private list<T>(path: string, filter: BillFilter, sort: readonly SortKey[] | undefined, o: ListOptions): PagedList<T> {
    // Built now, so a refused value throws before anything is sent.
    const filters = filter.toString();
    const sortValue = sort?.length ? sortParam(sort) : undefined;
    const max = pageSize(o.pageSize, AP_AR_MAX_PAGE_SIZE);
    const route = `GET ${path}`;
    return new PagedList<T>(
      async (cursor) =>
        readPage<T>(
          await this.session.call<unknown>(
            { method: 'GET', path, route, idempotent: true, query: { max, page: cursor, sort: sortValue, filters: filters || undefined } },
            this.run,
          ),
          route,
        ),
      { maxPages: o.maxPages ?? DEFAULT_MAX_PAGES, startPage: o.startPage },
    );
  }

  private get<T>(path: string, kind: string, id: string): Promise<T> {
    return this.session.call<T>(
      { method: 'GET', path: `${path}/${checkId(kind, id)}`, route: `GET ${path}/{id}`, idempotent: true },
      this.run,
    );
  }
}
