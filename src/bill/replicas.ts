// Per-org local replicas of BILL records (invoices, bills): AP/AR questions are answered from them instead of listing
// BILL for every question. An org's replica is built once (every record with full pages, or — bills — first only the
// open ones, with server-side filters), kept current by `updatedTime:gte` refreshes (at most one per interval per org,
// shared by every command, plus one after a webhook invalidates the org's records in the query cache) and by records
// read from BILL by id (apply/remove), and stored in the StateStore in shards, so a restart or another instance
// starts from it and a change rewrites one shard rather than the whole org.
//
// Facts (developer.bill.com /docs/filterable-fields, /v3/docs/sortable-fields, the Postman collection; shared/
// reference/bill-v3-api.md §2 and §5): invoices and bills are filterable and sortable by updatedTime, bills also
// filterable by paymentStatus (ne) and archived; list pages (max 100) carry whole records, as GET by id does. A walk
// in updatedTime order meets a record changed during the walk again at its end, so a refresh continues from the
// newest change seen, with one second of overlap for records written in the same instant.
//
// Webhooks are hints (BILL's advice), not records: an event marks its record stale (markStale) and the next answer
// that would show the row reads it from BILL first (a refresh the event's invalidation triggers, or one GET by id);
// a payload is never written into a replica. A row is replaced only by one at least as new, except that a row dated
// in the future (more than FUTURE_SKEW_MS ahead of this host's clock) never outranks BILL's answer, and only walks
// move the watermark (never past now).
import { randomUUID } from 'node:crypto';
import type { QueryCache, EntityKind } from '../cache/index.js';
import type { Clock } from '../clock.js';
import { BillApiError, errorMessage, LimitExceeded } from '../errors.js';
import type { Priority } from '../limits/types.js';
import type { Logger } from '../log.js';
import { NS, type StateStore } from '../state/types.js';
import type { BillOrgClient } from './api.js';
import type { BillGateway } from './gateway.js';
import type { PagedList } from './paging.js';

export interface ReplicaRow {
  id: string;
  /** The number people type: an invoice's number, a bill's vendor invoice number. */
  number: string;
  updatedTime: string;
  /** 1 when the row carries every field the cards show (rows stored by an earlier version do not). */
  f?: 1;
}

/** How much of an org's records a replica holds: the open ones (bills: unpaid, not archived) or every one. */
export type ReplicaScope = 'open' | 'all';
type Coverage = 'none' | ReplicaScope;
const RANK: Record<Coverage, number> = { none: 0, open: 1, all: 2 };
const covers = (have: Coverage, need: ReplicaScope): boolean => RANK[have] >= RANK[need];
const narrower = (a: ReplicaScope, b: ReplicaScope): ReplicaScope => (RANK[a] <= RANK[b] ? a : b);

export interface ReplicaSpec<R, Row extends ReplicaRow> {
  /** Key prefix in the store, logs and status: "invoices", "bills". */
  kind: string;
  /** The query-cache entity whose invalidation (a webhook, a relink) makes the next fresh read refresh. */
  entity: EntityKind;
  /** Every record, or those updated at or after `since`, oldest change first, 100 a page. */
  list(org: BillOrgClient, since: string | undefined): PagedList<R>;
  /** The row kept for a record; undefined for something that is not a record of this kind. */
  row(record: R): Row | undefined;
  /** The record as BILL has it now, by id (confirms a row a webhook marked stale). */
  get(org: BillOrgClient, id: string): Promise<R>;
  /** The group a row belongs to (a bill's vendor, an invoice's customer): rows can be asked for by group. */
  groupOf?: (row: Row) => string;
  /**
   * BILL cannot sort these by updatedTime (vendors, customers: /v3/docs/sortable-fields): a walk may pass a record
   * before it changes, so a refresh continues from when it started (less a margin), not from the newest change read.
   */
  unsorted?: boolean;
  /** A smaller first build for list answers: the open records, filtered by BILL (bills). */
  open?: {
    list(org: BillOrgClient): PagedList<R>;
    holds(row: Row): boolean;
  };
}

/** Field readers for building rows from BILL records, which may lack fields or carry the wrong type. */
export const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
export const optNum = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
export const str = (v: unknown): string => (typeof v === 'string' ? v : '');
export const optStr = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** Normalises numbers as people type them: no leading '#', single spaces, any case. */
export function normalizeNumber(raw: string): string {
  return raw.normalize('NFKC').trim().replace(/^#\s*/, '').replace(/\s+/g, ' ').toUpperCase();
}

/** Stored in this many shards per org: a change rewrites about 1/32 of the org's rows. */
const SHARDS = 32;
/** Overlap of incremental refreshes: records written in the same second as the newest one seen are read again. */
const OVERLAP_MS = 1_000;
/** A build's walk starts its refreshes this long before it began: clocks of BILL and this host may differ a little. */
const BUILD_MARGIN_MS = 60_000;
/** The cache entry whose disappearance says "a record changed": kept a day unless invalidated. */
const TICKET_TTL_S = 86_400;

function shardOf(id: string): number {
  // FNV-1a: stable across processes and versions (the shard a row is stored in must not move).
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % SHARDS;
}

const ms = (iso: string | undefined): number => (iso ? Date.parse(iso) : Number.NaN);
/** True when a is a strictly earlier instant than b (unknown times are never "older"). */
function isOlder(a: string | undefined, b: string | undefined): boolean {
  const x = ms(a);
  const y = ms(b);
  return Number.isFinite(x) && Number.isFinite(y) && x < y;
}
function earlier(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined || b === undefined) return undefined;
  return isOlder(b, a) ? b : a;
}
const shifted = (iso: string, byMs: number): string => new Date(Math.max(0, ms(iso) + byMs)).toISOString();
/** How far ahead of this host's clock a BILL timestamp may be (clock skew) before it counts as "from the future". */
export const FUTURE_SKEW_MS = 5 * 60_000;
/** True when the time is further ahead of now than clocks can differ: it is never trusted to outrank anything. */
function isFuture(iso: string | undefined, now: number): boolean {
  const t = ms(iso);
  return Number.isFinite(t) && t > now + FUTURE_SKEW_MS;
}
/** Stale marks kept per org; beyond this the next answer refreshes the org (one call per 100 changes) instead. */
const MAX_STALE_MARKS = 1_000;
/** Stale rows one answer reads again by id; more than this and one incremental refresh reads them all. */
const MAX_CONFIRMS_PER_ANSWER = 5;

class OrgReplica<Row extends ReplicaRow> {
  /** Rows by shard, then by id. */
  readonly shards: Array<Map<string, Row>> = Array.from({ length: SHARDS }, () => new Map());
  readonly byNumber = new IdIndex();
  /** Row ids by group (spec.groupOf), when the spec names one. */
  readonly byGroup = new IdIndex();
  /** Shards changed since they were last stored. */
  readonly dirty = new Set<number>();
  /** The tag of each shard as stored (by whom, which write): a header vouches only for shards it names. */
  readonly tags: string[] = Array.from({ length: SHARDS }, () => '');
  coverage: Coverage = 'none';
  /** The walk filling this replica right now. */
  building: ReplicaScope | undefined;
  /** Some rows come from an earlier stored format without the card fields; a rebuild replaces them. */
  legacy = false;
  builtAt = 0;
  refreshedAt = 0;
  /** Every change up to this updatedTime has been read by a walk (webhooks never move it). */
  watermark: string | undefined;
  size = 0;
  /** Ids a webhook said changed, and when: their rows are read from BILL again before an answer shows them. */
  readonly stale = new Map<string, number>();
  /** Too many marks to keep: the next answer refreshes the whole org (incrementally) first. */
  staleAll = false;

  constructor(
    private readonly groupOf: ((row: Row) => string) | undefined,
    private readonly now: () => number,
  ) {}

  get(id: string): Row | undefined {
    return this.shards[shardOf(id)]!.get(id);
  }

  /** Every row (or those `keep` keeps), in shard order. */
  collect(keep?: (row: Row) => boolean): Row[] {
    const out: Row[] = [];
    for (const shard of this.shards) for (const row of shard.values()) if (!keep || keep(row)) out.push(row);
    return out;
  }

  /** True when some row passes `test`. */
  some(test: (row: Row) => boolean): boolean {
    for (const shard of this.shards) for (const row of shard.values()) if (test(row)) return true;
    return false;
  }

  /** The rows of these groups (or those `keep` keeps). */
  collectGroups(groups: Iterable<string>, keep?: (row: Row) => boolean): Row[] {
    const out: Row[] = [];
    for (const g of new Set(groups)) {
      for (const id of this.byGroup.ids(g)) {
        const row = this.get(id);
        if (row && (!keep || keep(row))) out.push(row);
      }
    }
    return out;
  }

  /** Adds or replaces a row; a row older than the one held is news that came late and is ignored. */
  put(row: Row): boolean {
    const k = shardOf(row.id);
    const shard = this.shards[k]!;
    const old = shard.get(row.id);
    if (old) {
      // A held row dated in the future (a forged or broken timestamp) does not outrank what BILL answers now.
      if (old.f === 1 && isOlder(row.updatedTime, old.updatedTime) && !isFuture(old.updatedTime, this.now())) return false;
      if (JSON.stringify(old) === JSON.stringify(row)) return false;
      this.unlink(old);
    } else {
      this.size++;
    }
    shard.set(row.id, row);
    const key = normalizeNumber(row.number);
    if (key) this.byNumber.add(key, row.id);
    if (this.groupOf) this.byGroup.add(this.groupOf(row), row.id);
    this.dirty.add(k);
    return true;
  }

  delete(id: string): boolean {
    const k = shardOf(id);
    const old = this.shards[k]!.get(id);
    if (!old) return false;
    this.unlink(old);
    this.shards[k]!.delete(id);
    this.size--;
    this.dirty.add(k);
    return true;
  }

  find(number: string): Row[] {
    const out: Row[] = [];
    for (const id of this.byNumber.ids(normalizeNumber(number))) {
      const row = this.get(id);
      if (row) out.push(row);
    }
    return out;
  }

  /** Takes over what another copy holds (the same org's replica read from the store). */
  absorb(other: OrgReplica<Row>): void {
    this.shards.forEach((shard, k) => {
      shard.clear();
      for (const [id, row] of other.shards[k]!) shard.set(id, row);
      this.tags[k] = other.tags[k]!;
    });
    this.byNumber.takeOver(other.byNumber);
    this.byGroup.takeOver(other.byGroup);
    this.dirty.clear();
    for (const k of other.dirty) this.dirty.add(k);
    this.coverage = other.coverage;
    this.legacy = other.legacy;
    this.builtAt = other.builtAt;
    this.refreshedAt = other.refreshedAt;
    this.watermark = other.watermark;
    this.size = other.size;
  }

  clear(): void {
    for (const shard of this.shards) shard.clear();
    this.byNumber.clear();
    this.byGroup.clear();
    this.size = 0;
    this.watermark = undefined;
  }

  private unlink(row: Row): void {
    this.byNumber.delete(normalizeNumber(row.number), row.id);
    if (this.groupOf) this.byGroup.delete(this.groupOf(row), row.id);
  }
}

/**
 * Row ids by key (a number, a group). A key naming one row, as nearly every number does, holds the id itself; only
 * a key shared by several rows holds a Set (a Set per key cost ~140 bytes a record: 2.1 MB of heap at 15,000 rows, measured).
 */
export class IdIndex {
  private readonly map = new Map<string, string | Set<string>>();

  add(key: string, id: string): void {
    const held = this.map.get(key);
    if (held === undefined) this.map.set(key, id);
    else if (typeof held !== 'string') held.add(id);
    else if (held !== id) this.map.set(key, new Set([held, id]));
  }

  delete(key: string, id: string): void {
    const held = this.map.get(key);
    if (held === undefined) return;
    if (typeof held === 'string') {
      if (held === id) this.map.delete(key);
      return;
    }
    held.delete(id);
    if (held.size === 1) this.map.set(key, held.values().next().value!);
    else if (held.size === 0) this.map.delete(key);
  }

  ids(key: string): Iterable<string> {
    const held = this.map.get(key);
    return held === undefined ? [] : typeof held === 'string' ? [held] : held;
  }

  /** Holds what another index holds (it is not used afterwards). */
  takeOver(other: IdIndex): void {
    this.map.clear();
    for (const [key, held] of other.map) this.map.set(key, held);
  }

  clear(): void {
    this.map.clear();
  }
}

export interface ReplicaDeps<Row extends ReplicaRow = ReplicaRow> {
  bill: BillGateway;
  state: StateStore;
  clock: Clock;
  log: Logger;
  /**
   * The query cache: when a webhook (on any instance) or a relink invalidates the org's records there, the next read
   * that asks for fresh data refreshes at once instead of waiting out the interval.
   */
  cache?: QueryCache;
  /** A lookup that misses refreshes at most this often (default 15 s); a refresh costs one call per 100 changes. */
  minRefreshMs?: number;
  /** Called once an org's replica is ready in this process, built or read from the store (the invoice replica starts the customer replica, which names its customers). */
  onReady?: (orgId: string) => Promise<void>;
  /** A row changed or went after the replica was built (a refresh or a webhook): e.g. the vendor's balance may have moved. */
  onChange?: (orgId: string, row: Row) => void;
}

/** How fresh an answer must be. Without maxAgeMs and force, the replica answers as it is. */
export interface Freshness {
  /** Refresh first when the last refresh is older than this, or the org's records were invalidated since. */
  maxAgeMs?: number;
  /** Refresh first whatever the age (a card's Refresh button): one incremental call, never a rebuild. */
  force?: boolean;
  /** Priority of the refresh calls (default background); a person waiting asks for interactive. */
  priority?: Priority;
}

export interface LookupOptions extends Freshness {
  /** How long to wait for a first build or a refresh before answering with what is there. */
  waitMs: number;
}

export interface RowsOptions<Row> extends LookupOptions {
  /** 'open' is enough for open items (bills: a smaller first build); default every record. */
  scope?: ReplicaScope;
  /** While not built: wait up to waitMs for the build (default), or answer `building` at once and start nothing. */
  whileBuilding?: 'wait' | 'skip';
  /** Answer `building` while rows of an earlier stored format (without the card fields) are still being replaced. */
  fullRows?: boolean;
  /** Only these rows. */
  where?: (row: Row) => boolean;
  /** Only the rows of these groups (spec.groupOf): read through the group index, not by visiting every row. */
  groups?: Iterable<string>;
}

export type LookupResult<Row> =
  /** One or more records carry the number (bills: several vendors may use the same number). */
  | { state: 'found'; rows: Row[]; refreshedAt: number }
  /** No record carries it, as of refreshedAt. */
  | { state: 'missing'; refreshedAt: number }
  /** The first build for this org is still running; `indexed` records so far. */
  | { state: 'building'; indexed: number };

export type RowsResult<Row> = { rows: Row[]; refreshedAt: number } | { building: number };

export interface IndexInfo {
  kind: string;
  records: number;
  /** Built (for the scope it holds). */
  complete: boolean;
  /** What it holds: the open records only, or every record. */
  scope?: ReplicaScope;
  builtAt: number;
  refreshedAt: number;
}

/** The stored header (NS.invoiceIndex, key "<kind>:<orgId>"); shards under "<kind>:<orgId>#<n>". */
interface StoredHead {
  v: 2;
  coverage: ReplicaScope;
  builtAt: number;
  refreshedAt: number;
  watermark: string | undefined;
  shards: number;
  /** The tag of each shard this header vouches for; a shard with another tag was written by someone else. */
  tags: string[];
}

interface StoredShard<Row> {
  v: 2;
  coverage: ReplicaScope;
  watermark: string | undefined;
  tag: string;
  rows: Row[];
}

/** What earlier versions stored under the same key: one document, rows without the card fields. */
interface LegacyDoc<Row> {
  v: 1;
  builtAt: number;
  refreshedAt: number;
  watermark: string | undefined;
  rows: Row[];
}

export class Replica<R, Row extends ReplicaRow> {
  private readonly orgs = new Map<string, OrgReplica<Row>>();
  private readonly reads = new Map<string, Promise<OrgReplica<Row>>>();
  private readonly builds = new Map<string, { scope: ReplicaScope; done: Promise<void> }>();
  private readonly refreshes = new Map<string, Promise<number>>();
  private readonly writes = new Map<string, Promise<void>>();
  private readonly minRefreshMs: number;
  /** Tags this process's shard writes, so a header can tell its own shards from another instance's. */
  private readonly writer = randomUUID().slice(0, 8);
  private seq = 0;

  constructor(
    readonly spec: ReplicaSpec<R, Row>,
    private readonly deps: ReplicaDeps<Row>,
  ) {
    this.minRefreshMs = deps.minRefreshMs ?? 15_000;
  }

  /**
   * The records with this number. Warm: no call when the replica is fresh, one incremental refresh when it is not
   * (and, for a number not found, at most one per minRefreshMs). Cold: reads the stored replica, or builds it,
   * waiting at most `waitMs` (the build goes on in the background; what is there already is searched meanwhile).
   */
  async lookup(orgId: string, number: string, opts: LookupOptions): Promise<LookupResult<Row>> {
    const deadline = this.deps.clock.now() + opts.waitMs;
    const r = await this.ready(orgId, 'all', opts.waitMs);
    if (!covers(r.coverage, 'all')) {
      const partial = r.find(number);
      return partial.length > 0 ? { state: 'found', rows: partial, refreshedAt: r.refreshedAt || this.deps.clock.now() } : { state: 'building', indexed: r.size };
    }
    await this.freshen(orgId, r, opts, deadline);
    if (await this.confirmStale(orgId, r, r.find(number), opts.priority)) await this.persist(orgId, r);
    const found = r.find(number);
    if (found.length > 0) return { state: 'found', rows: found, refreshedAt: r.refreshedAt };
    if (this.deps.clock.now() - r.refreshedAt >= this.minRefreshMs) {
      await this.within(this.refresh(orgId, opts.priority), deadline - this.deps.clock.now());
      const again = r.find(number);
      if (again.length > 0) return { state: 'found', rows: again, refreshedAt: r.refreshedAt };
    }
    return { state: 'missing', refreshedAt: r.refreshedAt };
  }

  /** The replica's rows (those `where` keeps), fresh as asked; `building` while the scope asked for is not built. */
  async rows(orgId: string, opts: RowsOptions<Row>): Promise<RowsResult<Row>> {
    const deadline = this.deps.clock.now() + opts.waitMs;
    const scope = this.scopeOf(opts.scope ?? 'all');
    const r = opts.whileBuilding === 'skip' ? await this.replica(orgId) : await this.ready(orgId, scope, opts.waitMs);
    if (!covers(r.coverage, scope) || (opts.fullRows && r.legacy)) return { building: r.size };
    await this.freshen(orgId, r, opts, deadline);
    const collect = () => (opts.groups && this.spec.groupOf ? r.collectGroups(opts.groups, opts.where) : r.collect(opts.where));
    let rows = collect();
    if ((r.stale.size > 0 || r.staleAll) && (await this.confirmStale(orgId, r, rows, opts.priority))) {
      await this.persist(orgId, r);
      rows = collect();
    }
    return { rows, refreshedAt: r.refreshedAt };
  }

  /** Starts reading or building the org's replica in the background (a command answered the cold way meanwhile). */
  prepare(orgId: string, scope: ReplicaScope): void {
    void this.ready(orgId, this.scopeOf(scope), 0).catch(() => undefined);
  }

  /** Reads every change since the last refresh (one call per 100 changes), single-flight per org. Resolves with how many rows changed. */
  refresh(orgId: string, priority: Priority = 'background'): Promise<number> {
    let flight = this.refreshes.get(orgId);
    if (!flight) {
      flight = this.runRefresh(orgId, priority).finally(() => this.refreshes.delete(orgId));
      this.refreshes.set(orgId, flight);
      flight.catch((err) => this.deps.log.warn({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'replica refresh failed'));
    }
    return flight;
  }

  /**
   * A record as BILL answered it (a GET by id a command or a confirmation made): keep the replica current without
   * another call. Never a webhook payload: those only mark their record stale (markStale).
   */
  async apply(orgId: string, record: R): Promise<void> {
    const row = this.spec.row(record);
    if (!row) return;
    const r = await this.existing(orgId);
    if (!r) return;
    let changed: boolean;
    if (this.prunes(r) && !this.spec.open!.holds(row)) changed = r.delete(row.id);
    // Absent and older than what the walks have read: its newest state is already reflected (not open, or gone).
    else if (!r.get(row.id) && r.watermark && isOlder(row.updatedTime, shifted(r.watermark, -OVERLAP_MS))) changed = false;
    else changed = r.put(row);
    if (changed) {
      this.changed(orgId, row);
      await this.persist(orgId, r);
    }
  }

  /**
   * A webhook says this record changed (or was created): its row, if held, is read from BILL before an answer shows
   * it. No call now; the event's cache invalidation makes the next fresh answer refresh, which confirms it too.
   */
  async markStale(orgId: string, id: string): Promise<void> {
    const r = await this.existing(orgId);
    if (!r || !id) return;
    if (r.stale.size >= MAX_STALE_MARKS) {
      r.stale.clear();
      r.staleAll = true;
      return;
    }
    r.stale.set(id, this.deps.clock.now());
  }

  /** A record is gone (BILL answered 404 for it). */
  async remove(orgId: string, id: string): Promise<void> {
    const r = await this.existing(orgId);
    const old = r?.get(id);
    if (r && old && r.delete(id)) {
      this.changed(orgId, old);
      await this.persist(orgId, r);
    }
  }

  /** The rows with these ids, as held (no call, no refresh); ids not held are left out. */
  async held(orgId: string, ids: Iterable<string>): Promise<Row[]> {
    const r = await this.existing(orgId);
    if (!r) return [];
    const out: Row[] = [];
    for (const id of ids) {
      const row = r.get(id);
      if (row) out.push(row);
    }
    return out;
  }

  /**
   * Reads again from BILL the rows of this answer a webhook marked stale: one GET each (a 404 drops the row), or one
   * incremental refresh when there are more than MAX_CONFIRMS_PER_ANSWER. A refusal (BILL busy) leaves the row as
   * BILL last answered it, still marked. True when the replica changed.
   */
  private async confirmStale(orgId: string, r: OrgReplica<Row>, rows: Row[], priority: Priority = 'background'): Promise<boolean> {
    if (r.staleAll) {
      r.staleAll = false;
      return (await this.refresh(orgId, priority).catch(() => 0)) > 0;
    }
    const doubtful = rows.filter((row) => r.stale.has(row.id));
    if (doubtful.length === 0) return false;
    if (doubtful.length > MAX_CONFIRMS_PER_ANSWER) return (await this.refresh(orgId, priority).catch(() => 0)) > 0;
    const org = this.deps.bill.org(orgId, { priority });
    let changed = false;
    await Promise.all(
      doubtful.map(async ({ id }) => {
        const markedAt = r.stale.get(id);
        try {
          const row = this.spec.row(await this.spec.get(org, id));
          if (row && row.id === id && (this.prunes(r) && !this.spec.open!.holds(row) ? r.delete(id) : r.put(row))) {
            changed = true;
            this.changed(orgId, row);
          }
        } catch (err) {
          if (!(err instanceof BillApiError && err.category === 'notFound')) {
            this.deps.log.debug({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'stale row could not be read again; BILL\'s last answer is shown');
            return;
          }
          const old = r.get(id);
          if (old && r.delete(id)) {
            changed = true;
            this.changed(orgId, old);
          }
        }
        // A mark made while the GET ran stays for the next answer.
        if (r.stale.get(id) === markedAt) r.stale.delete(id);
      }),
    );
    return changed;
  }

  private changed(orgId: string, row: Row): void {
    try {
      this.deps.onChange?.(orgId, row);
    } catch (err) {
      this.deps.log.warn({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'replica change hook failed');
    }
  }

  /** What `status` shows; undefined when the org's replica is neither in memory nor being built. */
  info(orgId: string): IndexInfo | undefined {
    const r = this.orgs.get(orgId);
    if (!r || (r.coverage === 'none' && !r.building)) return undefined;
    return {
      kind: this.spec.kind,
      records: r.size,
      complete: r.coverage !== 'none',
      scope: r.coverage === 'none' ? undefined : r.coverage,
      builtAt: r.builtAt,
      refreshedAt: r.refreshedAt,
    };
  }

  /** Waits for the stores still being written (before the state store closes). */
  async flush(): Promise<void> {
    await Promise.all([...this.writes.values()].map((w) => w.catch(() => undefined)));
  }

  // ---- freshness ----

  private async freshen(orgId: string, r: OrgReplica<Row>, opts: Freshness, deadline: number): Promise<void> {
    if (r.coverage === 'none') return;
    if (opts.force === true) {
      // A card's Refresh: the person asked for BILL's data now, so a refusal (BILL busy) is theirs to see.
      await this.within(this.refresh(orgId, opts.priority), deadline - this.deps.clock.now());
      return;
    }
    if (opts.maxAgeMs === undefined && !r.staleAll) return;
    if (!r.staleAll && this.deps.clock.now() - r.refreshedAt < (opts.maxAgeMs ?? 0) && !(await this.invalidated(orgId))) return;
    try {
      await this.within(this.refresh(orgId, opts.priority), deadline - this.deps.clock.now());
    } catch (err) {
      // BILL's budget is spent for now (busy, its hourly limit): the replica answers as it is, and the card's
      // "As of" says how old that is. Anything else is a failure to report.
      if (!(err instanceof LimitExceeded)) throw err;
      this.deps.log.debug({ orgId, index: this.spec.kind, reason: err.reason }, 'replica not refreshed (BILL busy); answering from it as it is');
    }
  }

  /**
   * True when the org's records were invalidated in the query cache (webhook, relink; broadcast in cluster mode)
   * since the last check. The mark is a cache entry that depends on the entity: invalidation drops it.
   */
  private async invalidated(orgId: string): Promise<boolean> {
    const cache = this.deps.cache;
    if (!cache) return false;
    const mark = await cache.get(orgId, 'list', `replica:${this.spec.kind}`, async () => true, { entities: [this.spec.entity], ttlS: TICKET_TTL_S });
    return !mark.hit;
  }

  // ---- loading and building ----

  private scopeOf(scope: ReplicaScope): ReplicaScope {
    return this.spec.open ? scope : 'all';
  }

  /** Open-only replicas drop rows that stop being open (an `all` build adds them back while it runs). */
  private prunes(r: OrgReplica<Row>): boolean {
    return this.spec.open !== undefined && r.coverage !== 'all' && r.building !== 'all';
  }

  /** The org's replica in memory or from the store; an empty one (registered) when none was ever built. */
  private async replica(orgId: string): Promise<OrgReplica<Row>> {
    const mem = this.orgs.get(orgId);
    if (mem) return mem;
    let read = this.reads.get(orgId);
    if (!read) {
      read = this.adopt(orgId).finally(() => this.reads.delete(orgId));
      this.reads.set(orgId, read);
    }
    return read;
  }

  /** The replica when one was built or is being built; undefined otherwise (nothing to keep current). */
  private async existing(orgId: string): Promise<OrgReplica<Row> | undefined> {
    const r = await this.replica(orgId);
    return r.coverage !== 'none' || r.building ? r : undefined;
  }

  private async adopt(orgId: string): Promise<OrgReplica<Row>> {
    const stored = await this.readStored(orgId);
    if (stored) {
      // The change mark starts with what was read, and the ready step runs, before anyone answers from it.
      await this.invalidated(orgId);
      await this.afterReady(orgId);
    }
    const mem = this.orgs.get(orgId);
    if (mem) return mem;
    const r = stored ?? new OrgReplica<Row>(this.spec.groupOf, () => this.deps.clock.now());
    this.orgs.set(orgId, r);
    if (stored) {
      this.deps.log.info({ orgId, index: this.spec.kind, records: r.size, scope: r.coverage, legacy: r.legacy }, 'replica read from the state store');
      // Rows of an earlier format still answer lookups; a background walk replaces them with whole rows.
      if (r.legacy) void this.build(orgId, r, 'all').catch(() => undefined);
    }
    return r;
  }

  /** In memory, read, or built for `scope`; waits at most waitMs for a build (then answers with the replica as it is). */
  private async ready(orgId: string, scope: ReplicaScope, waitMs: number): Promise<OrgReplica<Row>> {
    const r = await this.replica(orgId);
    if (covers(r.coverage, scope)) {
      if (r.legacy) void this.build(orgId, r, 'all').catch(() => undefined);
      return r;
    }
    await this.within(this.build(orgId, r, scope), waitMs);
    return r;
  }

  /** One build at a time per org; a wider scope asked for while a narrower build runs follows it. */
  private build(orgId: string, r: OrgReplica<Row>, scope: ReplicaScope): Promise<void> {
    const running = this.builds.get(orgId);
    if (running && covers(running.scope, scope)) return running.done;
    const after = running ? running.done.catch(() => undefined) : Promise.resolve();
    const done = after.then(() => (covers(r.coverage, scope) && !r.legacy ? undefined : this.runBuild(orgId, r, scope)));
    const entry = { scope, done };
    this.builds.set(orgId, entry);
    void done
      .catch((err) => this.deps.log.warn({ orgId, index: this.spec.kind, scope, err: errorMessage(err) }, 'replica build failed'))
      .finally(() => {
        if (this.builds.get(orgId) === entry) this.builds.delete(orgId);
      });
    return done;
  }

  private async runBuild(orgId: string, r: OrgReplica<Row>, scope: ReplicaScope): Promise<void> {
    if (r.coverage === 'none') {
      // Another instance may have built and stored it since this one last looked (cluster mode): take that instead.
      const stored = await this.readStored(orgId);
      if (stored && covers(stored.coverage, scope) && r.coverage === 'none') {
        await this.invalidated(orgId);
        r.absorb(stored);
        this.deps.log.info({ orgId, index: this.spec.kind, records: r.size, scope: r.coverage }, 'replica read from the state store');
        await this.afterReady(orgId);
        if (r.legacy) void this.build(orgId, r, 'all').catch(() => undefined);
        return;
      }
    }
    const started = this.deps.clock.now();
    const wasEmpty = r.coverage === 'none';
    const walkScope: ReplicaScope = scope === 'open' && this.spec.open && wasEmpty ? 'open' : 'all';
    r.building = walkScope;
    const seen = new Set<string>();
    let pages = 0;
    try {
      // The change mark is set before the walk: a webhook during it makes the first fresh read after it refresh.
      if (wasEmpty) await this.invalidated(orgId);
      const org = this.deps.bill.org(orgId, { priority: 'background' });
      const walk = walkScope === 'open' ? this.spec.open!.list(org) : this.spec.list(org, undefined);
      for await (const page of walk.pages()) {
        pages++;
        for (const record of page.results) {
          const row = this.spec.row(record);
          if (!row) continue;
          seen.add(row.id);
          r.put(row);
        }
      }
    } catch (err) {
      r.building = undefined;
      // A failed first build leaves nothing half-done behind; the next question starts it again.
      if (wasEmpty) r.clear();
      throw err;
    }
    if (walkScope === 'all' && r.legacy) {
      // Rows of the earlier format that the walk did not meet are records BILL no longer lists.
      for (const row of r.collect((x) => x.f !== 1 && !seen.has(x.id))) r.delete(row.id);
      r.legacy = false;
    }
    const mark = new Date(started - BUILD_MARGIN_MS).toISOString();
    r.watermark = wasEmpty ? mark : earlier(r.watermark, mark);
    if (RANK[walkScope] > RANK[r.coverage]) r.coverage = walkScope;
    r.building = undefined;
    r.builtAt = this.deps.clock.now();
    r.refreshedAt = Math.max(r.refreshedAt, started);
    this.deps.log.info({ orgId, index: this.spec.kind, scope: walkScope, records: r.size, pages, ms: r.builtAt - started }, 'replica built');
    await this.persist(orgId, r, true);
    if (wasEmpty) await this.afterReady(orgId);
  }

  private async afterReady(orgId: string): Promise<void> {
    await this.deps.onReady?.(orgId).catch((err) => this.deps.log.warn({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'replica ready step failed'));
  }

  private async runRefresh(orgId: string, priority: Priority): Promise<number> {
    const r = await this.existing(orgId);
    if (!r || r.coverage === 'none') return 0;
    const started = this.deps.clock.now();
    // This walk reads every change up to now: it answers "too many records were marked stale" as well.
    r.staleAll = false;
    const since = r.watermark ? shifted(r.watermark, -OVERLAP_MS) : undefined;
    const org = this.deps.bill.org(orgId, { priority });
    // Without the open filter: bills that were paid or archived since are seen, and dropped.
    const prune = this.prunes(r);
    let newest = r.watermark;
    let changed = 0;
    for await (const page of this.spec.list(org, since).pages()) {
      for (const record of page.results) {
        const row = this.spec.row(record);
        if (!row) continue;
        // A timestamp from the future would make later refreshes skip every real change until then.
        if (row.updatedTime && !isFuture(row.updatedTime, started) && (newest === undefined || isOlder(newest, row.updatedTime))) newest = row.updatedTime;
        if (prune && !this.spec.open!.holds(row) ? r.delete(row.id) : r.put(row)) {
          changed++;
          this.changed(orgId, row);
        }
      }
    }
    if (this.spec.unsorted) {
      // Every change made before the walk began has been read (clocks may differ a little: the margin).
      const mark = new Date(started - BUILD_MARGIN_MS).toISOString();
      r.watermark = r.watermark === undefined || isOlder(r.watermark, mark) ? mark : r.watermark;
    } else {
      r.watermark = newest;
    }
    r.refreshedAt = started;
    // Every change made before the walk began has been read: marks made before then are answered.
    for (const [id, at] of r.stale) if (at <= started) r.stale.delete(id);
    if (changed > 0) void this.persist(orgId, r);
    return changed;
  }

  // ---- the state store ----

  private key(orgId: string): string {
    return `${this.spec.kind}:${orgId}`;
  }

  private shardKey(orgId: string, k: number): string {
    return `${this.key(orgId)}#${k}`;
  }

  private async readStored(orgId: string): Promise<OrgReplica<Row> | undefined> {
    const head = await this.deps.state.get<StoredHead | LegacyDoc<Row>>(NS.invoiceIndex, this.key(orgId));
    if (!head || typeof head !== 'object') return undefined;
    const r = new OrgReplica<Row>(this.spec.groupOf, () => this.deps.clock.now());
    const valid = (row: Row | undefined): row is Row => !!row && typeof row.id === 'string';
    if (head.v === 1 && Array.isArray(head.rows)) {
      for (const row of head.rows) if (valid(row)) r.put(row);
      r.coverage = 'all';
      r.watermark = head.watermark;
      // Written again in the new layout, every shard (the old document is replaced by the header).
      for (let k = 0; k < SHARDS; k++) r.dirty.add(k);
    } else if (head.v === 2 && head.shards === SHARDS && Array.isArray(head.tags)) {
      const shards = await Promise.all(Array.from({ length: SHARDS }, (_, k) => this.deps.state.get<StoredShard<Row>>(NS.invoiceIndex, this.shardKey(orgId, k))));
      if (shards.some((s) => !s || s.v !== 2 || !Array.isArray(s.rows))) {
        this.deps.log.warn({ orgId, index: this.spec.kind }, 'stored replica is missing shards; building it again');
        return undefined;
      }
      let coverage: ReplicaScope = head.coverage === 'open' ? 'open' : 'all';
      let watermark = head.watermark;
      shards.forEach((s, k) => {
        // A shard another writer stored after this header is as current as its own watermark says, no more.
        if (s!.tag !== head.tags[k]) {
          coverage = narrower(coverage, s!.coverage === 'open' ? 'open' : 'all');
          watermark = earlier(watermark, s!.watermark);
        }
        r.tags[k] = s!.tag;
        for (const row of s!.rows) if (valid(row)) r.put(row);
      });
      r.coverage = coverage;
      r.watermark = watermark;
      r.dirty.clear();
    } else {
      return undefined;
    }
    r.legacy = r.some((row) => row.f !== 1);
    r.builtAt = typeof head.builtAt === 'number' ? head.builtAt : 0;
    r.refreshedAt = typeof head.refreshedAt === 'number' ? head.refreshedAt : 0;
    return r;
  }

  /** Stores the changed shards, then the header; one write at a time per org (changes meanwhile go in the next). */
  private persist(orgId: string, r: OrgReplica<Row>, everything = false): Promise<void> {
    if (r.coverage === 'none') return Promise.resolve();
    if (everything) for (let k = 0; k < SHARDS; k++) r.dirty.add(k);
    const next = (this.writes.get(orgId) ?? Promise.resolve()).then(() => this.write(orgId, r));
    this.writes.set(orgId, next);
    void next.finally(() => {
      if (this.writes.get(orgId) === next) this.writes.delete(orgId);
    });
    return next;
  }

  private async write(orgId: string, r: OrgReplica<Row>): Promise<void> {
    if (r.dirty.size === 0 || r.coverage === 'none') return;
    // The header vouches for what was read up to the start of this write: changes made while it runs mark their
    // shards dirty again and go in the next write.
    const watermark = r.watermark;
    const coverage: ReplicaScope = r.coverage;
    const { builtAt, refreshedAt } = r;
    const shards = [...r.dirty];
    r.dirty.clear();
    try {
      await Promise.all(
        shards.map(async (k) => {
          const tag = `${this.writer}:${++this.seq}`;
          const doc: StoredShard<Row> = { v: 2, coverage, watermark: r.watermark, tag, rows: [...r.shards[k]!.values()] };
          await this.deps.state.set(NS.invoiceIndex, this.shardKey(orgId, k), doc);
          r.tags[k] = tag;
        }),
      );
      const head: StoredHead = { v: 2, coverage, builtAt, refreshedAt, watermark, shards: SHARDS, tags: [...r.tags] };
      await this.deps.state.set(NS.invoiceIndex, this.key(orgId), head);
    } catch (err) {
      // The replica in memory still answers; the shards are stored with the next change.
      for (const k of shards) r.dirty.add(k);
      this.deps.log.warn({ orgId, index: this.spec.kind, err: errorMessage(err) }, 'replica could not be stored');
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
