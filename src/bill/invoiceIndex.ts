// Number -> record indexes per org: BILL cannot filter invoices by invoiceNumber (nor bills by their vendor invoice
// number), so each org's records are listed once with full pages, then kept current incrementally with
// `updatedTime:gte` (and by webhooks through apply/remove). Persisted in the StateStore, so a restart does not rebuild.
//
// Facts (developer.bill.com /docs/filterable-fields, /v3/docs/sortable-fields; shared/reference/bill-v3-api.md §2):
// invoices and bills are filterable by updatedTime (gte...) and sortable by updatedTime; invoice `status` and `dueDate`
// are not filterable; lists take max=100. Walking in updatedTime order lets a refresh continue from the newest change
// seen; one second of overlap catches records written in the same instant as the watermark.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../errors.js';
import { NS, type StateStore } from '../state/types.js';
import type { BillOrgClient } from './api.js';
import { BillFilter } from './filters.js';
import type { BillGateway } from './gateway.js';
import type { PagedList } from './paging.js';
import type { Bill, Invoice } from './types.js';

/** What the invoice index keeps of each invoice: enough for lookups by number and for receivables aging. */
export interface IndexedInvoice {
  id: string;
  number: string;
  customerId: string;
  invoiceDate: string;
  dueDate: string;
  totalAmount: number;
  dueAmount: number;
  status: string;
  archived: boolean;
  updatedTime: string;
}

/** What the bill index keeps of each bill: lookups by the vendor's invoice number. */
export interface IndexedBill {
  id: string;
  number: string;
  vendorId: string;
  vendorName: string;
  dueDate: string;
  amount: number;
  dueAmount: number;
  paymentStatus: string;
  archived: boolean;
  updatedTime: string;
}

export interface IndexRow {
  id: string;
  number: string;
  updatedTime: string;
}

export interface IndexSpec<R, Row extends IndexRow> {
  /** Key prefix in the store and in logs: "invoices", "bills". */
  kind: string;
  /** Every record, or those updated at or after `since`, oldest change first, 100 a page. */
  list(org: BillOrgClient, since: string | undefined): PagedList<R>;
  /** The row kept for a record; undefined for something that is not a record of this kind. */
  row(record: R): Row | undefined;
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** Invoice numbers as people type them: no leading '#', no surrounding or doubled spaces, any case. */
export function normalizeNumber(raw: string): string {
  return raw.normalize('NFKC').trim().replace(/^#\s*/, '').replace(/\s+/g, ' ').toUpperCase();
}

/** Most pages one walk reads (100 rows each): 1,000,000 records. */
const MAX_WALK_PAGES = 10_000;

export const INVOICE_INDEX_SPEC: IndexSpec<Invoice, IndexedInvoice> = {
  kind: 'invoices',
  list: (org, since) =>
    org.invoices.list({
      pageSize: 100,
      maxPages: MAX_WALK_PAGES,
      sort: [{ field: 'updatedTime', order: 'asc' }],
      filter: since ? new BillFilter().gte('updatedTime', since) : undefined,
    }),
  row: (inv) =>
    inv && typeof inv.id === 'string'
      ? {
          id: inv.id,
          number: str(inv.invoiceNumber),
          customerId: str(inv.customerId),
          invoiceDate: str(inv.invoiceDate),
          dueDate: str(inv.dueDate),
          totalAmount: num(inv.totalAmount),
          dueAmount: num(inv.dueAmount),
          status: str(inv.status),
          archived: inv.archived === true,
          updatedTime: str(inv.updatedTime),
        }
      : undefined,
};

export const BILL_INDEX_SPEC: IndexSpec<Bill, IndexedBill> = {
  kind: 'bills',
  list: (org, since) =>
    org.bills.list({
      pageSize: 100,
      maxPages: MAX_WALK_PAGES,
      sort: [{ field: 'updatedTime', order: 'asc' }],
      filter: since ? new BillFilter().gte('updatedTime', since) : undefined,
    }),
  row: (bill) =>
    bill && typeof bill.id === 'string'
      ? {
          id: bill.id,
          number: str(bill.invoice?.invoiceNumber),
          vendorId: str(bill.vendorId),
          vendorName: str(bill.vendorName),
          dueDate: str(bill.dueDate),
          amount: num(bill.amount),
          dueAmount: num(bill.dueAmount),
          paymentStatus: str(bill.paymentStatus),
          archived: bill.archived === true,
          updatedTime: str(bill.updatedTime),
        }
      : undefined,
};

/** The stored form (StateStore NS.invoiceIndex, key "<kind>:<orgId>"). */
interface StoredIndex<Row> {
  v: 1;
  builtAt: number;
  refreshedAt: number;
  watermark: string | undefined;
  rows: Row[];
}

class OrgIndex<Row extends IndexRow> {
  readonly rows = new Map<string, Row>();
  readonly byNumber = new Map<string, Set<string>>();
  complete = false;
  builtAt = 0;
  refreshedAt = 0;
  watermark: string | undefined;

  /** Adds or replaces a row; true when something changed. */
  put(row: Row): boolean {
    const old = this.rows.get(row.id);
    if (old && JSON.stringify(old) === JSON.stringify(row)) return false;
    if (old) this.unlink(old);
    this.rows.set(row.id, row);
    const key = normalizeNumber(row.number);
    if (key) {
      let ids = this.byNumber.get(key);
      if (!ids) {
        ids = new Set();
        this.byNumber.set(key, ids);
      }
      ids.add(row.id);
    }
    if (row.updatedTime && (!this.watermark || row.updatedTime > this.watermark)) this.watermark = row.updatedTime;
    return true;
  }

  delete(id: string): boolean {
    const old = this.rows.get(id);
    if (!old) return false;
    this.unlink(old);
    this.rows.delete(id);
    return true;
  }

  find(number: string): Row[] {
    const ids = this.byNumber.get(normalizeNumber(number));
    return ids ? [...ids].map((id) => this.rows.get(id)!).filter(Boolean) : [];
  }

  private unlink(row: Row): void {
    const key = normalizeNumber(row.number);
    const ids = this.byNumber.get(key);
    ids?.delete(row.id);
    if (ids && ids.size === 0) this.byNumber.delete(key);
  }
}

export type LookupResult<Row> =
  /** One or more records carry the number (bills: several vendors may use the same number). */
  | { state: 'found'; rows: Row[]; refreshedAt: number }
  /** No record carries it, as of refreshedAt. */
  | { state: 'missing'; refreshedAt: number }
  /** The first build for this org is still running; `indexed` records so far. */
  | { state: 'building'; indexed: number };

export interface IndexInfo {
  kind: string;
  records: number;
  complete: boolean;
  builtAt: number;
  refreshedAt: number;
}

export interface NumberIndexDeps {
  bill: BillGateway;
  state: StateStore;
  clock: Clock;
  log: Logger;
  /** A lookup that misses refreshes at most this often (default 15 s); a refresh costs one call per 100 changes. */
  minRefreshMs?: number;
  /**
   * Called once an org's index is ready in this process, built or read from the store (the invoice index primes
   * the customer names there, so warm lookups need no name call).
   */
  onReady?: (orgId: string) => Promise<void>;
}

/** Overlap of incremental refreshes: records written in the same second as the newest one seen are read again. */
const OVERLAP_MS = 1_000;

export class NumberIndex<R, Row extends IndexRow> {
  private readonly orgs = new Map<string, OrgIndex<Row>>();
  private readonly loads = new Map<string, Promise<OrgIndex<Row>>>();
  private readonly refreshes = new Map<string, Promise<number>>();
  private readonly minRefreshMs: number;

  constructor(
    readonly spec: IndexSpec<R, Row>,
    private readonly deps: NumberIndexDeps,
  ) {
    this.minRefreshMs = deps.minRefreshMs ?? 15_000;
  }

  /**
   * The records with this number. Warm: no call when the number is indexed, at most one refresh call (per 100
   * changes since the last one) when it is not. Cold: loads the stored index, or builds it, waiting at most
   * `waitMs` (the build goes on in the background; a partial index is searched meanwhile).
   */
  async lookup(orgId: string, number: string, opts: { waitMs: number }): Promise<LookupResult<Row>> {
    const deadline = this.deps.clock.now() + opts.waitMs;
    const index = await this.ready(orgId, opts.waitMs);
    const found = index.find(number);
    if (found.length > 0) return { state: 'found', rows: found, refreshedAt: index.refreshedAt || this.deps.clock.now() };
    if (!index.complete) return { state: 'building', indexed: index.rows.size };
    if (this.deps.clock.now() - index.refreshedAt >= this.minRefreshMs) {
      await this.within(this.refresh(orgId), deadline - this.deps.clock.now());
      const again = index.find(number);
      if (again.length > 0) return { state: 'found', rows: again, refreshedAt: index.refreshedAt };
    }
    return { state: 'missing', refreshedAt: index.refreshedAt };
  }

  /**
   * Every indexed row, refreshed first when the last refresh is older than `maxAgeMs`. Undefined while the first
   * build is still running after `waitMs` (with how many records are indexed so far).
   */
  async rows(orgId: string, opts: { maxAgeMs: number; waitMs: number }): Promise<{ rows: Row[]; refreshedAt: number } | { building: number }> {
    const deadline = this.deps.clock.now() + opts.waitMs;
    const index = await this.ready(orgId, opts.waitMs);
    if (!index.complete) return { building: index.rows.size };
    if (this.deps.clock.now() - index.refreshedAt >= opts.maxAgeMs) await this.within(this.refresh(orgId), deadline - this.deps.clock.now());
    return { rows: [...index.rows.values()], refreshedAt: index.refreshedAt };
  }

  /** Reads every change since the last refresh (one call per 100 changes). Resolves with how many rows changed. */
  refresh(orgId: string): Promise<number> {
    let flight = this.refreshes.get(orgId);
    if (!flight) {
      flight = this.runRefresh(orgId).finally(() => this.refreshes.delete(orgId));
      this.refreshes.set(orgId, flight);
      flight.catch((err) => this.deps.log.warn({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'index refresh failed'));
    }
    return flight;
  }

  /** A record was created or changed (webhook payload or a fresh GET): keep the index current without a call. */
  async apply(orgId: string, record: R): Promise<void> {
    const row = this.spec.row(record);
    if (!row) return;
    const index = await this.loaded(orgId);
    if (!index) return;
    if (index.put(row)) await this.persist(orgId, index);
  }

  /** A record is gone (or its event says so). */
  async remove(orgId: string, id: string): Promise<void> {
    const index = await this.loaded(orgId);
    if (index?.delete(id)) await this.persist(orgId, index);
  }

  /** What `status` shows; undefined when the org's index is not in memory. */
  info(orgId: string): IndexInfo | undefined {
    const index = this.orgs.get(orgId);
    if (!index) return undefined;
    return { kind: this.spec.kind, records: index.rows.size, complete: index.complete, builtAt: index.builtAt, refreshedAt: index.refreshedAt };
  }

  /** The org's index in memory or from the store; undefined when it was never built (nothing to keep current). */
  private async loaded(orgId: string): Promise<OrgIndex<Row> | undefined> {
    const mem = this.orgs.get(orgId);
    if (mem) return mem;
    const loading = this.loads.get(orgId);
    if (loading) return loading;
    const stored = await this.read(orgId);
    if (!stored) return undefined;
    const mem2 = this.orgs.get(orgId);
    if (mem2) return mem2;
    const adopted = this.adopt(orgId, stored);
    void this.afterReady(orgId);
    return adopted;
  }

  /** In memory, loaded, or built; waits at most waitMs for a build (then answers with the partial index). */
  private async ready(orgId: string, waitMs: number): Promise<OrgIndex<Row>> {
    const mem = this.orgs.get(orgId);
    if (mem && (mem.complete || !this.loads.has(orgId))) return mem;
    let load = this.loads.get(orgId);
    if (!load) {
      load = this.loadOrBuild(orgId).finally(() => this.loads.delete(orgId));
      this.loads.set(orgId, load);
      // A failed build is retried by the next lookup; nobody may be waiting for this one any more.
      load.catch((err) => this.deps.log.warn({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'index build failed'));
    }
    const done = await this.within(load, waitMs);
    if (done) return done;
    return this.orgs.get(orgId) ?? new OrgIndex<Row>();
  }

  private async loadOrBuild(orgId: string): Promise<OrgIndex<Row>> {
    const stored = await this.read(orgId);
    if (stored) {
      const adopted = this.adopt(orgId, stored);
      await this.afterReady(orgId);
      return adopted;
    }
    const started = this.deps.clock.now();
    const index = new OrgIndex<Row>();
    // Visible while it is built, so lookups can search what is there already.
    this.orgs.set(orgId, index);
    try {
      const org = this.deps.bill.org(orgId, { priority: 'background' });
      let pages = 0;
      for await (const page of this.spec.list(org, undefined).pages()) {
        pages++;
        for (const record of page.results) {
          const row = this.spec.row(record);
          if (row) index.put(row);
        }
      }
      index.complete = true;
      index.builtAt = index.refreshedAt = this.deps.clock.now();
      this.deps.log.info({ orgId, index: this.spec.kind, records: index.rows.size, pages, ms: index.builtAt - started }, 'index built');
    } catch (err) {
      if (this.orgs.get(orgId) === index) this.orgs.delete(orgId);
      throw err;
    }
    await this.persist(orgId, index);
    await this.afterReady(orgId);
    return index;
  }

  private async afterReady(orgId: string): Promise<void> {
    await this.deps.onReady?.(orgId).catch((err) => this.deps.log.warn({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'index ready step failed'));
  }

  private async runRefresh(orgId: string): Promise<number> {
    const index = await this.loaded(orgId);
    if (!index || !index.complete) return 0;
    const since = index.watermark ? new Date(Math.max(0, Date.parse(index.watermark) - OVERLAP_MS)).toISOString() : undefined;
    const org = this.deps.bill.org(orgId, { priority: 'background' });
    let changed = 0;
    for await (const page of this.spec.list(org, since).pages()) {
      for (const record of page.results) {
        const row = this.spec.row(record);
        if (row && index.put(row)) changed++;
      }
    }
    index.refreshedAt = this.deps.clock.now();
    if (changed > 0) await this.persist(orgId, index);
    return changed;
  }

  private adopt(orgId: string, stored: StoredIndex<Row>): OrgIndex<Row> {
    const index = new OrgIndex<Row>();
    for (const row of stored.rows) if (row && typeof row.id === 'string') index.put(row);
    index.watermark = stored.watermark ?? index.watermark;
    index.complete = true;
    index.builtAt = stored.builtAt;
    index.refreshedAt = stored.refreshedAt;
    this.orgs.set(orgId, index);
    return index;
  }

  private key(orgId: string): string {
    return `${this.spec.kind}:${orgId}`;
  }

  private async read(orgId: string): Promise<StoredIndex<Row> | undefined> {
    const stored = await this.deps.state.get<StoredIndex<Row>>(NS.invoiceIndex, this.key(orgId));
    return stored && stored.v === 1 && Array.isArray(stored.rows) ? stored : undefined;
  }

  private async persist(orgId: string, index: OrgIndex<Row>): Promise<void> {
    if (!index.complete) return;
    const doc: StoredIndex<Row> = { v: 1, builtAt: index.builtAt, refreshedAt: index.refreshedAt, watermark: index.watermark, rows: [...index.rows.values()] };
    try {
      await this.deps.state.set(NS.invoiceIndex, this.key(orgId), doc);
    } catch (err) {
      // The in-memory index still answers; the next change tries to store it again.
      this.deps.log.warn({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'index could not be stored');
    }
  }

  /** The promise's value, or undefined when it takes longer than ms (the work goes on). */
  private async within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
    // A failure after the deadline has nobody waiting: it is logged where the work started, not left unhandled.
    p.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
    });
    try {
      return await Promise.race([p, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

export type InvoiceIndex = NumberIndex<Invoice, IndexedInvoice>;
export type BillNumberIndex = NumberIndex<Bill, IndexedBill>;

export function createInvoiceIndex(deps: NumberIndexDeps): InvoiceIndex {
  return new NumberIndex(INVOICE_INDEX_SPEC, deps);
}

export function createBillNumberIndex(deps: NumberIndexDeps): BillNumberIndex {
  return new NumberIndex(BILL_INDEX_SPEC, deps);
}
