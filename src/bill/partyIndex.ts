// Per-org replicas of vendors and customers: `vendor <name>` and `customer <name>` are answered from them instead of a
// name search at BILL for every question (most of a busy hour's calls before this), with the same machinery as the
// invoice and bill replicas (built once, refreshed with `updatedTime:gte`, kept in the state store, fed by webhooks).
//
// Facts (shared/reference/bill-v3-api.md §2, §5; Postman "Get list of vendors" / "Get list of customers"):
// - vendors and customers are filterable by updatedTime, archived and name (eq, sw), but BILL documents no sort by
//   updatedTime for them: a refresh continues from when the previous one started (the replica's `unsorted` mode);
// - webhooks exist for vendors (vendor.created|updated|archived|restored) but not for customers;
// - the record's `balance` is BILL's own figure. Whether paying a bill or an invoice moves a vendor's or customer's
//   updatedTime is not documented, so a change to one of their bills or invoices marks the row "suspect", and the
//   next card that shows its balance reads the record again by id (one call), instead of trusting the replica.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Priority } from '../limits/types.js';
import { BillFilter } from './filters.js';
import type { BillGateway } from './gateway.js';
import { optNum, optStr, Replica, str, type Freshness, type ReplicaDeps, type ReplicaRow, type ReplicaSpec } from './replicas.js';
import type { Customer, Vendor } from './types.js';

export type PartyKind = 'vendor' | 'customer';

/** What a party replica keeps of each vendor or customer: the search and the party cards. */
export interface IndexedParty extends ReplicaRow {
  id: string;
  /** Not used (parties have no number people type); kept empty. */
  number: '';
  name: string;
  archived: boolean;
  updatedTime: string;
  /** Vendor `billCurrency` / customer `invoiceCurrency`. */
  currency?: string;
  balance?: number;
  /** Vendors: paymentInformation.lastPaymentDate. */
  lastPaymentDate?: string;
}

/** Most pages one walk reads (100 rows each). */
const MAX_WALK_PAGES = 2_000;
/** Records read again by id per answer when their balance may have moved; the rest show the balance held. */
export const MAX_CONFIRMS_PER_ANSWER = 5;

const since = (t: string | undefined) => (t ? new BillFilter().gte('updatedTime', t) : undefined);

function vendorRow(v: Vendor): IndexedParty | undefined {
  if (!v || typeof v.id !== 'string') return undefined;
  return {
    id: v.id,
    number: '',
    name: str(v.name),
    archived: v.archived === true,
    updatedTime: str(v.updatedTime),
    currency: optStr(v.billCurrency),
    balance: optNum(v.balance?.amount),
    lastPaymentDate: optStr(v.paymentInformation?.lastPaymentDate),
    f: 1,
  };
}

function customerRow(c: Customer): IndexedParty | undefined {
  if (!c || typeof c.id !== 'string') return undefined;
  return { id: c.id, number: '', name: str(c.name), archived: c.archived === true, updatedTime: str(c.updatedTime), currency: optStr(c.invoiceCurrency), balance: optNum(c.balance?.amount), f: 1 };
}

/** The vendor as the vendor cards read it. */
function vendorOf(row: IndexedParty): Vendor {
  return {
    id: row.id,
    archived: row.archived,
    name: row.name,
    billCurrency: row.currency,
    balance: row.balance === undefined ? undefined : { amount: row.balance },
    paymentInformation: row.lastPaymentDate ? { lastPaymentDate: row.lastPaymentDate } : undefined,
    createdTime: '',
    updatedTime: row.updatedTime,
  };
}

/** The customer as the customer cards read it. */
function customerOf(row: IndexedParty): Customer {
  return { id: row.id, archived: row.archived, name: row.name, invoiceCurrency: row.currency, balance: row.balance === undefined ? undefined : { amount: row.balance }, createdTime: '', updatedTime: row.updatedTime };
}

export const VENDOR_REPLICA: ReplicaSpec<Vendor, IndexedParty> = {
  kind: 'vendors',
  entity: 'vendor',
  unsorted: true,
  list: (org, t) => org.vendors.list({ pageSize: 100, maxPages: MAX_WALK_PAGES, filter: since(t) }),
  row: vendorRow,
  get: (org, id) => org.vendors.get(id),
};

export const CUSTOMER_REPLICA: ReplicaSpec<Customer, IndexedParty> = {
  kind: 'customers',
  entity: 'customer',
  unsorted: true,
  list: (org, t) => org.customers.list({ pageSize: 100, maxPages: MAX_WALK_PAGES, filter: since(t) }),
  row: customerRow,
  get: (org, id) => org.customers.get(id),
};

/** Names compared as BILL's `name:sw:` compares them (the sandbox, like BILL's UI search, ignores case). */
export const foldName = (s: string): string => s.normalize('NFKC').trim().toLocaleLowerCase('en-US');

export interface PartySearchOptions extends Freshness {
  waitMs: number;
  /** Most matches returned; `more` says there were others. */
  limit: number;
}

export type PartySearch = { items: Array<Vendor | Customer>; more: boolean; refreshedAt: number } | { building: number };

/** The vendor or customer as the cards read it, from its row. */
export function partyOf(kind: PartyKind, row: IndexedParty): Vendor | Customer {
  return kind === 'vendor' ? vendorOf(row) : customerOf(row);
}

export interface PartyIndexDeps extends Omit<ReplicaDeps<IndexedParty>, 'onChange' | 'onReady'> {
  /** A name nobody matched is looked for again at BILL (one refresh) at most this often per org (default 15 s). */
  missRefreshMs?: number;
}

export class PartyIndex {
  readonly vendors: Replica<Vendor, IndexedParty>;
  readonly customers: Replica<Customer, IndexedParty>;
  /** `${kind}:${orgId}` -> ids whose balance may have moved since their row was read. */
  private readonly suspects = new Map<string, Set<string>>();
  private readonly missRefreshAt = new Map<string, number>();
  private readonly bill: BillGateway;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly missRefreshMs: number;

  constructor(deps: PartyIndexDeps) {
    this.vendors = new Replica(VENDOR_REPLICA, deps);
    this.customers = new Replica(CUSTOMER_REPLICA, deps);
    this.bill = deps.bill;
    this.clock = deps.clock;
    this.log = deps.log;
    this.missRefreshMs = deps.missRefreshMs ?? deps.minRefreshMs ?? 15_000;
  }

  replica(kind: PartyKind): Replica<Vendor, IndexedParty> | Replica<Customer, IndexedParty> {
    return kind === 'vendor' ? this.vendors : this.customers;
  }

  /**
   * Not archived, name starting with `typed` (any case). `building` while the org's replica is not built: nothing is
   * started then (the caller asks BILL and calls prepare()). A name nobody matches is looked for once more at BILL
   * (one incremental refresh, at most once per missRefreshMs), so a vendor added a minute ago is found.
   */
  async search(orgId: string, kind: PartyKind, typed: string, opts: PartySearchOptions): Promise<PartySearch> {
    const prefix = foldName(typed);
    const where = (row: IndexedParty) => !row.archived && foldName(row.name).startsWith(prefix);
    const replica = this.replica(kind);
    let got = await replica.rows(orgId, { ...opts, whileBuilding: 'skip', where });
    if ('building' in got) return got;
    const key = `${kind}:${orgId}`;
    const now = this.clock.now();
    if (got.rows.length === 0 && !opts.force && now - got.refreshedAt >= this.missRefreshMs && now - (this.missRefreshAt.get(key) ?? 0) >= this.missRefreshMs) {
      this.missRefreshAt.set(key, now);
      got = await replica.rows(orgId, { ...opts, force: true, whileBuilding: 'skip', where });
      if ('building' in got) return got;
    }
    const rows = got.rows;
    return { items: rows.slice(0, opts.limit).map((row) => partyOf(kind, row)), more: rows.length > opts.limit, refreshedAt: got.refreshedAt };
  }

  /** The vendors or customers with these ids as the replica holds them (no call); none while it is not built. */
  async records(orgId: string, kind: PartyKind, ids: string[]): Promise<Array<Vendor | Customer>> {
    if (this.replica(kind).info(orgId)?.complete !== true) return [];
    const rows = await this.replica(kind).held(orgId, ids);
    return rows.map((row) => partyOf(kind, row));
  }

  /** Starts reading or building the org's replica in the background. */
  prepare(orgId: string, kind: PartyKind): void {
    this.replica(kind).prepare(orgId, 'all');
  }

  /** One of this party's bills or invoices changed: its balance in BILL may have moved. */
  suspect(orgId: string, kind: PartyKind, id: string): void {
    if (!id) return;
    const key = `${kind}:${orgId}`;
    let set = this.suspects.get(key);
    if (!set) {
      set = new Set();
      this.suspects.set(key, set);
    }
    set.add(id);
  }

  /**
   * These vendors or customers, the ones whose balance may have moved read again from BILL by id (at most
   * MAX_CONFIRMS_PER_ANSWER, in the order given; a failed read keeps the one held, and its mark).
   */
  async confirm<T extends Vendor | Customer>(orgId: string, kind: PartyKind, parties: T[], priority: Priority): Promise<T[]> {
    const set = this.suspects.get(`${kind}:${orgId}`);
    if (!set || set.size === 0) return parties;
    const doubtful = parties.filter((p) => set.has(p.id)).slice(0, MAX_CONFIRMS_PER_ANSWER);
    if (doubtful.length === 0) return parties;
    const org = this.bill.org(orgId, { priority });
    const replica = this.replica(kind) as Replica<Vendor | Customer, IndexedParty>;
    const fresh = new Map<string, T>();
    await Promise.all(
      doubtful.map(async ({ id }) => {
        try {
          const record = (kind === 'vendor' ? await org.vendors.get(id) : await org.customers.get(id)) as T;
          set.delete(id);
          fresh.set(id, record);
          await replica.apply(orgId, record);
        } catch (err) {
          this.log.debug({ orgId, kind, err: err instanceof Error ? err.name : 'error' }, 'party record could not be read again; its held balance is shown');
        }
      }),
    );
    return parties.map((p) => fresh.get(p.id) ?? p);
  }

  async flush(): Promise<void> {
    await Promise.all([this.vendors.flush(), this.customers.flush()]);
  }
}
