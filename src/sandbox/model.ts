// The sandbox's in-memory BILL: organisations, users, AP/AR and S&E records, webhook subscriptions, and an event hook.
// Other issues extend it (approval policies, sync tokens, more event types): add fields here, seed them in seed.ts,
// and emit events through `SandboxModel.emit`.
import type { Clock } from '../infra/clock.js';
import type {
  Bill,
  Budget,
  Customer,
  Invoice,
  Payment,
  PendingApproval,
  ReceivablePayment,
  Reimbursement,
  SpendTransaction,
  Subscription,
  Vendor,
} from './types.js';
import { Prng } from './prng.js';

/** BILL's id prefixes (shared/reference/bill-v3-api.md §8). */
export const ID_PREFIX = {
  org: '008',
  user: '006',
  vendor: '009',
  bill: '00n',
  billLineItem: 'bli',
  customer: '0cu',
  invoice: '00e',
  invoiceLineItem: '0ii',
  payment: 'stp',
  receivedPayment: '0rp',
  chartOfAccount: '0ca',
  bankAccount: 'bac',
  subscription: 'sub',
} as const;

/** Ordered records with a version counter (sorted views are cached per version). */
export class Collection<T extends { id: string }> {
  private readonly byId = new Map<string, T>();
  private readonly views = new Map<string, { version: number; items: T[] }>();
  private ver = 0;

  get version(): number {
    return this.ver;
  }
  get size(): number {
    return this.byId.size;
  }
  get(id: string): T | undefined {
    return this.byId.get(id);
  }
  has(id: string): boolean {
    return this.byId.has(id);
  }
  all(): T[] {
    return [...this.byId.values()];
  }
  put(item: T): T {
    this.byId.set(item.id, item);
    this.ver++;
    return item;
  }
  delete(id: string): boolean {
    const had = this.byId.delete(id);
    if (had) this.ver++;
    return had;
  }
  find(pred: (item: T) => boolean): T | undefined {
    for (const item of this.byId.values()) if (pred(item)) return item;
    return undefined;
  }
  /** A sorted copy, cached until the collection changes. */
  sorted(key: string, compare: (a: T, b: T) => number): T[] {
    const hit = this.views.get(key);
    if (hit?.version === this.ver) return hit.items;
    const items = this.all().sort(compare);
    this.views.set(key, { version: this.ver, items });
    return items;
  }
}

type SandboxRole = 'ADMINISTRATOR' | 'ACCOUNTANT' | 'APPROVER' | 'PAYER' | 'CLERK' | (string & {});

/** A BILL user of an organisation; can sign in with email + password. */
export interface SandboxUser {
  id: string;
  email: string;
  password: string;
  firstName: string;
  lastName: string;
  role: SandboxRole;
  /**
   * AP/AR sync tokens (developer.bill.com /docs/token-based-sign-in): sign in with the token name as `username`
   * and its value as `password`; such a session lasts 48 idle hours and may not make payments.
   */
  syncTokens?: Array<{ name: string; value: string }>;
}

/** A webhook subscription as the sandbox stores it (the key is kept; answers show it only on create/rotate). */
export interface SandboxSubscription extends Omit<Subscription, 'securityKey'> {
  securityKey: string;
  /** Consecutive failed deliveries; BILL disables a subscription once retries are exhausted. */
  failures: number;
}

/** One sent notification (GET /v3/events/subscription/{id}). */
export interface SandboxNotification {
  id: string;
  type: string;
  version: string;
  subscriptionId: string;
  /** The exact body that was signed and sent. */
  payload: string;
  createdTime: string;
  statusCode: number;
}

export interface SandboxOrg {
  id: string;
  name: string;
  users: Collection<SandboxUser>;
  vendors: Collection<Vendor>;
  customers: Collection<Customer>;
  bills: Collection<Bill>;
  invoices: Collection<Invoice>;
  payments: Collection<Payment>;
  receivablePayments: Collection<ReceivablePayment>;
  spend: {
    transactions: Collection<SpendTransaction>;
    reimbursements: Collection<Reimbursement>;
    budgets: Collection<Budget>;
  };
  subscriptions: Collection<SandboxSubscription>;
  notifications: Collection<SandboxNotification>;
  /** Answers to X-Idempotent-Key requests, by method + path + key. */
  idempotency: Map<string, { at: number; body: unknown }>;
  /** Every approve/deny BILL accepted, oldest first: who (the session's user), which bill, what, when (approvals.ts). */
  approvalDecisions: SandboxApprovalDecision[];
  /** Connection requests to the org's vendors and customers in the BILL network, by "vendor:<id>" / "customer:<id>". */
  networkConnections: Map<string, NetworkConnection>;
  /** Network invitations BILL emailed to vendors not in the network (network.ts), oldest first. */
  networkEmails: Array<{ vendorId: string; email: string; at: string; userId: string }>;
}

/** One approve/deny as BILL records it: the signed-in user is the one who acted. */
export interface SandboxApprovalDecision {
  billId: string;
  userId: string;
  action: 'APPROVE' | 'DENY';
  comment?: string;
  at: string;
  /** How the acting user signed in. */
  sessionKind: 'password' | 'syncToken';
}

/** A vendor's networkStatus, or the status of a connection request to a customer. */
export type NetworkStatus = 'CONNECTED' | 'NOT_CONNECTED' | 'PENDING' | 'CONNECTED_RPPS';

/** A business one can find in the BILL network (or RPPS). */
export interface NetworkBusiness {
  id: string;
  name: string;
  scope: 'BILL' | 'RPPS';
  /** Connection requests are accepted at once (BILL's auto-connections setting). */
  autoConnect: boolean;
  zipOrPostalCode: string;
  city: string;
  stateOrProvince: string;
  managedBy?: { name: string; email: string; emailDomain: string };
}

/** One org's connection request to a vendor or customer of its own. */
export interface NetworkConnection {
  status: NetworkStatus;
  networkId?: string;
  /** The email an invitation went to (vendor not in the network). */
  email?: string;
}

/** A BILL event raised by a change: `{metadata, [entityKey]: entity}` once delivered. */
export interface EntityEvent {
  orgId: string;
  /** e.g. bill.updated, invoice.created, payment.updated */
  type: string;
  version: string;
  /** Payload key: bill, invoice, payment, vendor... */
  entityKey: string;
  entity: Record<string, unknown>;
}

export type EventSink = (event: EntityEvent) => void;

export interface DevKeyRecord {
  active: boolean;
}

/** Creates BILL-looking ids: prefix + "01" + 15 letters/digits, deterministic for a given seed and order. */
export class IdFactory {
  private readonly rng: Prng;
  private readonly issued = new Set<string>();

  constructor(seed: string) {
    this.rng = new Prng(`ids:${seed}`);
  }

  next(prefix: string): string {
    for (;;) {
      const id = `${prefix}01${this.rng.alnum(15)}`;
      if (!this.issued.has(id)) {
        this.issued.add(id);
        return id;
      }
    }
  }

  uuid(): string {
    return this.rng.uuid();
  }
}

export function newOrg(id: string, name: string): SandboxOrg {
  return {
    id,
    name,
    users: new Collection(),
    vendors: new Collection(),
    customers: new Collection(),
    bills: new Collection(),
    invoices: new Collection(),
    payments: new Collection(),
    receivablePayments: new Collection(),
    spend: { transactions: new Collection(), reimbursements: new Collection(), budgets: new Collection() },
    subscriptions: new Collection(),
    notifications: new Collection(),
    idempotency: new Map(),
    approvalDecisions: [],
    networkConnections: new Map(),
    networkEmails: [],
  };
}

/** yyyy-MM-dd in UTC. */
function isoDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export { addDays } from '../infra/calendar.js';

export class SandboxModel {
  readonly orgs = new Map<string, SandboxOrg>();
  readonly devKeys = new Map<string, DevKeyRecord>();
  /** Spend & Expense API token -> org id. */
  readonly spendTokens = new Map<string, string>();
  readonly ids: IdFactory;
  /** The BILL payment network (and RPPS) every org searches (network.ts). */
  readonly network = new Collection<NetworkBusiness>();
  private readonly sinks: EventSink[] = [];

  constructor(
    readonly clock: Clock,
    seed = 'billbridge-demo',
  ) {
    this.ids = new IdFactory(seed);
  }

  /** Today's date (UTC) on the sandbox clock. */
  today(): string {
    return isoDate(this.clock.now());
  }

  nowIso(): string {
    return new Date(this.clock.now()).toISOString();
  }

  addOrg(org: SandboxOrg): SandboxOrg {
    this.orgs.set(org.id, org);
    return org;
  }

  org(id: string): SandboxOrg | undefined {
    return this.orgs.get(id);
  }

  /** The org a Spend & Expense token belongs to. */
  orgForSpendToken(token: string): SandboxOrg | undefined {
    const orgId = this.spendTokens.get(token);
    return orgId ? this.orgs.get(orgId) : undefined;
  }

  /** Subscribes to every change event (the webhook dispatcher does). */
  onEvent(sink: EventSink): void {
    this.sinks.push(sink);
  }

  emit(event: EntityEvent): void {
    for (const sink of this.sinks) sink(event);
  }

  /**
   * Bills waiting on this user: not archived, not paid, approval ASSIGNED, the user's approver entry WAITING and
   * every earlier approver (lower approverOrder) APPROVED — BILL's sequential approval chain.
   */
  pendingApprovals(org: SandboxOrg, userId: string): PendingApproval[] {
    const out: PendingApproval[] = [];
    for (const bill of org.bills.all()) {
      if (bill.archived || bill.paymentStatus === 'PAID' || bill.approvalStatus !== 'ASSIGNED') continue;
      const approvers = [...(bill.approvers ?? [])].sort((a, b) => a.approverOrder - b.approverOrder);
      const mine = approvers.find((a) => a.userId === userId && a.status === 'WAITING');
      if (!mine) continue;
      if (approvers.filter((a) => a.approverOrder < mine.approverOrder).every((a) => a.status === 'APPROVED')) {
        out.push({ billId: bill.id, vendorId: bill.vendorId, amount: bill.amount, dueDate: bill.dueDate });
      }
    }
    return out.sort((a, b) => a.dueDate.localeCompare(b.dueDate) || a.billId.localeCompare(b.billId));
  }
}
