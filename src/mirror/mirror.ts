// The per-org mirror of BILL's bills, invoices, vendors and customers: AP/AR questions, lookups by number, name
// searches and the names on cards are answered from it instead of listing BILL for every question. Per org and kind it
// is built once (every record, or — bills — first only the open ones, filtered by BILL), kept current by
// `updatedTime:gte` refreshes (at most one per interval, shared by every command), told what is stale (webhooks, a
// card's Refresh: markStale) or given records BILL answered (apply), and stored in shards in the StateStore, so a
// restart or another instance starts from it and a change rewrites one shard.
//
// Webhooks are hints, not records: an event marks its record stale and the next answer that would show it reads it
// from BILL first; a payload is never written into the mirror. A record is replaced only by one at least as new, except
// that one dated in the future (more than FUTURE_SKEW_MS ahead of this host) never outranks BILL's answer. Only walks
// move the watermark; a walk in updatedTime order meets a record changed during it again at its end, so a refresh
// continues from the newest change seen, with one second of overlap for records written in the same instant.
//
// Cluster mode: a stale mark is told to every other instance over Redis pub/sub (fire and forget); after a gap in the
// subscription (Redis was away) an instance treats everything it holds as stale, since marks sent meanwhile were lost.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { BillFilter, MAX_FILTER_LIST_ITEMS } from '../bill/filters.js';
import type { BillGateway } from '../bill/gateway.js';
import type { PagedList } from '../bill/paging.js';
import type { Clock } from '../infra/clock.js';
import { BillApiError, errorMessage, LimitExceeded } from '../errors.js';
import type { Priority } from '../infra/limits/types.js';
import type { Logger } from '../infra/log.js';
import type { RedisConnection } from '../infra/state/redisClient.js';
import { NS, type StateStore } from '../infra/state/types.js';
import { Answers } from './answers.js';
import {
  ENTITY_KINDS,
  foldName,
  normalizeNumber,
  partyInfo,
  SPECS,
  type AnyRecord,
  type EntityKind,
  type Kind,
  type KindSpec,
  type PartyInfo,
  type PartyKind,
  type Records,
} from './records.js';

/** How much of an org's records a collection holds: the open ones (bills: unpaid, not archived) or every one. */
type Scope = 'open' | 'all';
type Coverage = 'none' | Scope;
const covers = (have: Coverage, need: Scope): boolean => have === 'all' || have === need;

const KINDS: readonly Kind[] = ['invoice', 'bill', 'vendor', 'customer'];
/** Stored in this many shards per org and kind: a change rewrites about 1/32 of them. */
const SHARDS = 32;
/** Overlap of incremental refreshes: records written in the same second as the newest one seen are read again. */
const OVERLAP_MS = 1_000;
/** A build's (or an unsorted walk's) refreshes start this long before it began: clocks of BILL and this host differ. */
const BUILD_MARGIN_MS = 60_000;
/** How far ahead of this host's clock a BILL timestamp may be (clock skew) before it counts as "from the future". */
const FUTURE_SKEW_MS = 5 * 60_000;
/** Stale marks kept per collection; beyond this the next answer refreshes instead (one call per 100 changes). */
const MAX_STALE_MARKS = 1_000;
/** How long "<kind>s:<orgId>|changed" (last marked stale) is kept for an instance that loads later: CACHE_TTL_* are at most a day. */
const CHANGED_NOTE_TTL_MS = 2 * 24 * 3_600_000;
/** Stale records one answer reads again by id; with more, one incremental refresh reads them all. */
const MAX_CONFIRMS_PER_ANSWER = 5;
/** A lookup that misses, or a name nobody matches, refreshes at most this often. */
const MISS_REFRESH_MS = 15_000;

const ms = (iso: string | undefined): number => (iso ? Date.parse(iso) : Number.NaN);
/** True when a is a strictly earlier instant than b (NaN, an unknown time, is never "older"). */
const isOlder = (a: string | undefined, b: string | undefined): boolean => ms(a) < ms(b);
/** The earlier of two times; undefined when either is unknown. */
const earlier = (a: string | undefined, b: string | undefined) => (a === undefined || b === undefined ? undefined : isOlder(b, a) ? b : a);
/** The value when it is a time Date.parse reads, else undefined. */
const asTime = (v: unknown): string | undefined => (typeof v === 'string' && Number.isFinite(ms(v)) ? v : undefined);
const shifted = (iso: string, byMs: number): string => new Date(Math.max(0, ms(iso) + byMs)).toISOString();
const isFuture = (iso: string | undefined, now: number): boolean => ms(iso) > now + FUTURE_SKEW_MS;

const STALE_CHANNEL = 'mirror:stale';

/** One stale mark as broadcast: a record (kind + id), a whole kind (kind), an org (neither), or one kept answer (key). */
const StaleMessage = z.object({
  from: z.string().optional(),
  orgId: z.string().min(1),
  kind: z.enum(ENTITY_KINDS).optional(),
  id: z.string().optional(),
  key: z.string().optional(),
});
type StaleMark = Omit<z.infer<typeof StaleMessage>, 'from'>;

/** The promise's value, or undefined when it takes longer than ms (the work goes on). */
export function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  // A failure after the deadline has nobody waiting: it is logged where the work started, not left unhandled.
  p.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

function shardOf(id: string): number {
  // FNV-1a: stable across processes and versions (the shard a record is stored in must not move).
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % SHARDS;
}

/** One org's records of one kind. */
class Collection {
  readonly spec: KindSpec<Kind>;
  /** Stored in NS.mirror: the header under this key, shard n under "<key>#<n>". */
  readonly stored: string;
  readonly records = new Map<string, AnyRecord>();
  /** Normalised number -> the id of the record with that number, or the ids of those that share it. A lone id is held
   * as itself rather than in a one-element Set: 2.1 MB less live heap at 15,000 records (heap snapshots; README). */
  readonly byNumber = new Map<string, string | string[]>();
  /** Settles once the stored collection has been read (or found missing); the collection answers only after it. */
  loaded = Promise.resolve();
  /** Shards changed since the last write. */
  readonly dirty = new Set<number>();
  /** The tag of each shard as stored: the stored header vouches only for shards with its tags. */
  tags: string[] = Array.from({ length: SHARDS }, () => '');
  coverage: Coverage = 'none';
  /** The build running (or waiting for a narrower one), one at a time. */
  build: { scope: Scope; done: Promise<void> } | undefined;
  refreshing: Promise<number> | undefined;
  /** The last store of its shards: one write at a time (changes meanwhile go in the next). */
  writing = Promise.resolve();
  /** When a name search that found nothing last refreshed (a refresh that fails moves no refreshedAt). */
  missRefreshAt = 0;
  builtAt = 0;
  refreshedAt = 0;
  /** Every change up to this updatedTime has been read by a walk (webhooks never move it). */
  watermark: string | undefined;
  /** Ids whose record is read from BILL again before an answer shows it, and when they were marked. */
  readonly stale = new Map<string, number>();
  /** Too many marks, or marks missed (cluster): the next answer refreshes first. */
  staleAll = false;
  /** A webhook said something changed since the last refresh: the next fresh read refreshes at once. */
  changed = false;

  constructor(
    readonly orgId: string,
    readonly kind: Kind,
    private readonly now: () => number,
  ) {
    this.spec = SPECS[kind];
    this.stored = `${kind}s:${orgId}`;
  }

  /** Adds or replaces a record; one older than the one held is news that came late and is ignored. */
  put(record: AnyRecord): boolean {
    const old = this.records.get(record.id);
    if (old) {
      if (isOlder(record.updatedTime, old.updatedTime) && !isFuture(old.updatedTime, this.now())) return false;
      if (JSON.stringify(old) === JSON.stringify(record)) return false;
      this.unlink(old);
    }
    this.records.set(record.id, record);
    const key = this.numberOf(record);
    if (key) {
      const held = this.byNumber.get(key);
      this.byNumber.set(key, held === undefined || held === record.id ? record.id : [...new Set([held, record.id].flat())]);
    }
    this.dirty.add(shardOf(record.id));
    return true;
  }

  delete(id: string): AnyRecord | undefined {
    const old = this.records.get(id);
    if (!old) return undefined;
    this.unlink(old);
    this.records.delete(id);
    this.dirty.add(shardOf(id));
    return old;
  }

  private numberOf(record: AnyRecord): string {
    return this.spec.number ? normalizeNumber(this.spec.number(record)) : '';
  }

  private unlink(record: AnyRecord): void {
    const key = this.numberOf(record);
    const rest = [this.byNumber.get(key) ?? []].flat().filter((id) => id !== record.id);
    const [only, ...more] = rest;
    if (only === undefined) this.byNumber.delete(key);
    else this.byNumber.set(key, more.length > 0 ? rest : only);
  }
}

interface MirrorDeps {
  bill: BillGateway;
  state: StateStore;
  clock: Clock;
  log: Logger;
  /** Answers not mirrored: at most this many kept over all orgs (CACHE_MAX_ENTRIES). */
  maxAnswers?: number;
  /** Names on cards are refreshed at most this often (CACHE_TTL_NAMES_S; a vendor webhook refreshes sooner). */
  namesMaxAgeMs?: number;
  /** Cluster mode: stale marks reach every instance over this connection. */
  redis?: RedisConnection;
}

/** How fresh an answer must be, and how long to wait for a build or a refresh before answering with what is there. */
export interface ReadOptions {
  /** Refresh first when the last refresh is older than this, or a webhook said something changed since. */
  maxAgeMs?: number;
  /** Refresh first whatever the age (a card's Refresh button): one incremental call, never a rebuild. */
  force?: boolean;
  /** Priority of the calls (default background); a person waiting asks for interactive. */
  priority?: Priority;
  waitMs: number;
}

interface RowsOptions<T> extends ReadOptions {
  /** 'open' is enough for open items (bills: a smaller first build); default every record. */
  scope?: Scope;
  /** While not built: wait up to waitMs for the build (default), or answer `building` at once and start nothing. */
  whileBuilding?: 'wait' | 'skip';
  where?: (record: T) => boolean;
  /** Read stale records again before answering (default); party searches confirm only what they show (confirm()). */
  confirm?: boolean;
}

export type RowsResult<T> = { rows: T[]; refreshedAt: number } | { building: number };

export type MirrorInfo = ReturnType<Mirror['info']>[number];

/** The stored header (NS.mirror, key "<kind>s:<orgId>"); shards under "<kind>s:<orgId>#<n>". */
type StoredHead = Pick<Collection, 'builtAt' | 'refreshedAt' | 'watermark' | 'tags'> & { coverage: Scope };
/** Records as stored: read back defensively. */
type StoredShard = Pick<StoredHead, 'coverage' | 'watermark'> & { tag: string; rows: unknown[] };

export class Mirror {
  /** Answers the mirror does not hold (payments, Spend & Expense, lists asked while a collection is built). */
  readonly answers: Answers;
  /** Every collection asked for, registered at once: marks that arrive while one is read from the store land on it. */
  private readonly cols = new Map<string, Collection>();
  /** Names this process in broadcasts and (first 8 characters) in its shard tags, so a header tells its own shards from another instance's. */
  private readonly instance = randomUUID();
  private seq = 0;

  constructor(private readonly deps: MirrorDeps) {
    this.answers = new Answers(deps.clock, deps.maxAnswers ?? 10_000);
    deps.redis?.subscribe(STALE_CHANNEL, (message) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(message);
      } catch {
        return;
      }
      const m = StaleMessage.safeParse(parsed);
      if (m.success && m.data.from !== this.instance) void this.markLocal(m.data, false).catch(() => undefined);
    });
    deps.redis?.onResubscribe(() => {
      for (const c of this.cols.values()) c.staleAll = true;
      this.answers.clear();
    });
  }

  // ---- reading ----

  /** The records (those `where` keeps), fresh as asked; `building` while the scope asked for is not built. */
  async rows<K extends Kind>(orgId: string, kind: K, opts: RowsOptions<Records[K]>): Promise<RowsResult<Records[K]>> {
    const deadline = this.deps.clock.now() + opts.waitMs;
    const scope = opts.scope ?? 'all';
    const c = opts.whileBuilding === 'skip' ? await this.collection(orgId, kind) : await this.ready(orgId, kind, scope, opts.waitMs);
    if (!covers(c.coverage, scope)) return { building: c.records.size };
    await this.freshen(c, opts, deadline);
    const collect = () => [...(c.records.values() as Iterable<Records[K]>)].filter((r) => !opts.where || opts.where(r));
    let rows = collect();
    if (opts.confirm !== false && (c.stale.size > 0 || c.staleAll) && (await this.confirmStale(c, rows, opts.priority))) rows = collect();
    return { rows, refreshedAt: c.refreshedAt };
  }

  /** The records with this number; a number not found refreshes once more, at most once per MISS_REFRESH_MS. */
  async lookup<K extends 'bill' | 'invoice'>(orgId: string, kind: K, number: string, opts: ReadOptions): Promise<RowsResult<Records[K]>> {
    const deadline = this.deps.clock.now() + opts.waitMs;
    const c = await this.ready(orgId, kind, 'all', opts.waitMs);
    const found = () =>
      [c.byNumber.get(normalizeNumber(number)) ?? []].flat().flatMap((id) => (c.records.get(id) as Records[K] | undefined) ?? []);
    if (!covers(c.coverage, 'all')) {
      const partial = found();
      return partial.length > 0 ? { rows: partial, refreshedAt: c.refreshedAt || this.deps.clock.now() } : { building: c.records.size };
    }
    await this.freshen(c, opts, deadline);
    await this.confirmStale(c, found(), opts.priority);
    if (found().length === 0 && this.deps.clock.now() - c.refreshedAt >= MISS_REFRESH_MS)
      await within(this.refresh(c, opts.priority), deadline - this.deps.clock.now());
    return { rows: found(), refreshedAt: c.refreshedAt };
  }

  /** Vendors or customers not archived whose name starts with `typed` (any case); `building` (nothing started) while not
   * built. A name nobody matches refreshes once per MISS_REFRESH_MS: a vendor added a minute ago is found. */
  async search<K extends PartyKind>(orgId: string, kind: K, typed: string, opts: ReadOptions): Promise<RowsResult<Records[K]>> {
    const prefix = foldName(typed);
    const where = (r: Records[K]) => !r.archived && foldName(r.name).startsWith(prefix);
    const ask: RowsOptions<Records[K]> = { ...opts, whileBuilding: 'skip', confirm: false, where };
    const got = await this.rows(orgId, kind, ask);
    if ('building' in got || got.rows.length > 0 || opts.force) return got;
    const c = await this.collection(orgId, kind);
    const now = this.deps.clock.now();
    if (now - got.refreshedAt < MISS_REFRESH_MS || now - c.missRefreshAt < MISS_REFRESH_MS) return got;
    c.missRefreshAt = now;
    return this.rows(orgId, kind, { ...ask, force: true });
  }

  /** The record with this BILL id when the collection holds every record, else undefined (the caller asks BILL). A card's
   * Refresh (force) reads this one record from BILL now (a refusal or a 404 is the caller's to show). */
  async byId<K extends Kind>(
    orgId: string,
    kind: K,
    id: string,
    opts: ReadOptions,
  ): Promise<{ record: Records[K]; refreshedAt: number } | undefined> {
    const c = this.cols.get(`${kind}:${orgId}`);
    if (!c || !covers(c.coverage, 'all')) return undefined;
    if (opts.force === true) {
      const { gone } = await this.reread(c, id, opts.priority);
      if (gone) throw gone;
    } else {
      await this.freshen(c, opts, this.deps.clock.now() + opts.waitMs);
      const held = c.records.get(id);
      if (held) await this.confirmStale(c, [held], opts.priority);
    }
    const record = c.records.get(id) as Records[K] | undefined;
    return record ? { record, refreshedAt: opts.force === true ? this.deps.clock.now() : c.refreshedAt } : undefined;
  }

  /** These records, those marked stale read again from BILL by id first (at most MAX_CONFIRMS_PER_ANSWER, in order). */
  async confirm<K extends Kind>(orgId: string, kind: K, records: Array<Records[K]>, priority: Priority): Promise<Array<Records[K]>> {
    const c = this.cols.get(`${kind}:${orgId}`);
    if (!c || c.stale.size === 0) return records;
    await this.confirmStale(c, records, priority, true);
    return records.map((r) => (c.records.get(r.id) as Records[K] | undefined) ?? r);
  }

  /** Names and currencies of these vendors or customers, refreshed at most every namesMaxAgeMs. Ids a collection not
   * built yet lacks are read with `id:in` (filterable on vendors and customers), one call per 100. */
  async names(
    orgId: string,
    kind: PartyKind,
    ids: Iterable<string>,
    opts: { priority: Priority; waitMs: number },
  ): Promise<Map<string, PartyInfo>> {
    const deadline = this.deps.clock.now() + opts.waitMs;
    const c = await this.ready(orgId, kind, 'all', opts.waitMs);
    await this.freshen(c, { ...opts, maxAgeMs: this.deps.namesMaxAgeMs ?? 3_600_000 }, deadline);
    const out = new Map<string, PartyInfo>();
    const missing: string[] = [];
    for (const id of new Set(ids)) {
      const held = c.records.get(id) as Records[PartyKind] | undefined;
      if (held) out.set(id, partyInfo(held));
      else if (id !== '') missing.push(id);
    }
    // A built collection holds every record there is: an id it lacks is one BILL does not have (or a refresh will bring).
    if (missing.length === 0 || c.coverage === 'all') return out;
    const org = this.deps.bill.org(orgId, { priority: opts.priority });
    for (let i = 0; i < missing.length; i += MAX_FILTER_LIST_ITEMS) {
      const filter = new BillFilter().add('id', 'in', missing.slice(i, i + MAX_FILTER_LIST_ITEMS));
      const { items } = await c.spec.list(org, filter).all();
      for (const kept of items.map((r) => c.spec.keep(r))) if (kept) out.set(kept.id, partyInfo(kept as Records[PartyKind]));
    }
    return out;
  }

  /** Starts reading or building the org's collection in the background (a command answered from BILL meanwhile). */
  prepare(orgId: string, kind: Kind, scope: Scope = 'all'): void {
    void this.ready(orgId, kind, scope, 0).catch(() => undefined);
  }

  // ---- being told ----

  /** A webhook (or a card's Refresh) says this record changed (every record of the kind without id, the org without
   * kind): it is read again before an answer shows it, answers built from it are dropped, every instance is told. */
  async markStale(orgId: string, kind?: EntityKind, id?: string): Promise<void> {
    this.publish({ orgId, kind, id });
    await this.markLocal({ orgId, kind, id }, true);
  }

  /** Drops one kept answer (a card's Refresh of an answer not mirrored), on every instance. */
  dropAnswer(orgId: string, key: string): void {
    this.answers.drop(orgId, undefined, key);
    this.publish({ orgId, key });
  }

  /** A record as BILL answered it (a GET by id): kept without another call. Never a webhook payload (markStale). */
  async apply<K extends Kind>(orgId: string, kind: K, record: Records[K]): Promise<void> {
    const kept = (SPECS[kind] as KindSpec<Kind>).keep(record);
    const c = kept ? await this.existing(orgId, kind) : undefined;
    if (!kept || !c) return;
    // Absent and older than what the walks have read: its newest state is already reflected (not open, or gone).
    if (!c.records.has(kept.id) && c.watermark && isOlder(kept.updatedTime, shifted(c.watermark, -OVERLAP_MS))) return;
    if (this.keep(c, kept)) await this.persist(c);
  }

  /** Reads every change since the last refresh (one call per 100 changes), single-flight per org and kind. */
  private refresh(c: Collection, priority: Priority = 'background'): Promise<number> {
    const { orgId, kind } = c;
    if (c.refreshing) return c.refreshing;
    const flight = (async () => {
      if (c.coverage === 'none') return 0;
      const since = c.watermark ? new BillFilter().add('updatedTime', 'gte', shifted(c.watermark, -OVERLAP_MS)) : undefined;
      // Without the open filter: bills that were paid or archived since are seen, and dropped.
      const { changed } = await this.read(c, c.spec.list(this.deps.bill.org(orgId, { priority }), since), 'refresh');
      if (changed > 0) void this.persist(c);
      return changed;
    })().finally(() => {
      c.refreshing = undefined;
    });
    c.refreshing = flight;
    flight.catch((err: unknown) => this.deps.log.warn({ orgId, kind, err: errorMessage(err) }, 'mirror refresh failed'));
    return flight;
  }

  /** Walks a list of BILL's records into c: a build puts each one, a refresh keeps it (an open-only collection drops what
   * is no longer open). Moves the watermark; returns the records changed and the pages read. */
  private async read(c: Collection, list: PagedList<AnyRecord>, walk: 'build' | 'refresh') {
    const started = this.deps.clock.now();
    // This walk reads every change up to now: it answers "something changed" and "too many marks" as well.
    const asked = { staleAll: c.staleAll, changed: c.changed };
    c.staleAll = false;
    c.changed = false;
    let newest = c.watermark;
    let changed = 0;
    let pages = 0;
    try {
      for await (const page of list.pages()) {
        pages++;
        for (const kept of page.results.map((r) => c.spec.keep(r))) {
          if (!kept) continue;
          // A timestamp from the future would make later refreshes skip every real change until then; one that is no time
          // would make every later refresh fail.
          const later = newest === undefined || isOlder(newest, kept.updatedTime);
          if (later && asTime(kept.updatedTime) && !isFuture(kept.updatedTime, started)) newest = kept.updatedTime;
          if (walk === 'build' ? c.put(kept) : this.keep(c, kept)) changed++;
        }
      }
    } catch (err) {
      // A walk that failed answered nothing: the next answer still refreshes first.
      c.staleAll ||= asked.staleAll;
      c.changed ||= asked.changed;
      throw err;
    }
    // Every change made before the walk began has been read: marks made before then are answered, and a build or an
    // unsorted kind continues from then (less the margin: clocks differ), a sorted refresh from the newest change seen.
    const mark = new Date(started - BUILD_MARGIN_MS).toISOString();
    const sorted = walk === 'refresh' && !c.spec.unsorted;
    c.watermark = sorted ? newest : c.watermark && !isOlder(c.watermark, mark) ? c.watermark : mark;
    c.refreshedAt = started;
    for (const [id, at] of c.stale) if (at <= started) c.stale.delete(id);
    return { changed, pages };
  }

  /** What `status` shows: the org's collections in memory or being built. */
  info(orgId: string) {
    return KINDS.flatMap((kind) => {
      const c = this.cols.get(`${kind}:${orgId}`);
      if (!c || (c.coverage === 'none' && !c.build)) return [];
      const scope = c.coverage === 'none' ? undefined : c.coverage;
      return [{ kind, records: c.records.size, complete: scope !== undefined, scope, builtAt: c.builtAt, refreshedAt: c.refreshedAt }];
    });
  }

  /** Waits for the stores still being written (before the state store closes). */
  async flush(): Promise<void> {
    await Promise.all([...this.cols.values()].map((c) => c.writing.catch(() => undefined)));
  }

  // ---- freshness ----

  /** Tells the other instances of a fleet (none without Redis). */
  private publish(mark: StaleMark): void {
    void this.deps.redis?.publish(STALE_CHANNEL, JSON.stringify({ from: this.instance, ...mark })).then((sent) => {
      if (!sent)
        this.deps.log.warn(
          { orgId: mark.orgId, kind: mark.kind },
          'stale mark not broadcast (Redis unavailable): other instances show their copy until their next refresh',
        );
    });
  }

  private async markLocal(mark: StaleMark, own: boolean): Promise<void> {
    const { orgId, kind, id, key } = mark;
    // A mark with a key drops that one answer and nothing else.
    this.answers.drop(orgId, kind, key);
    if (key !== undefined) return;
    // A payment changes the bills it pays; its webhook names them as bill marks.
    for (const k of kind === undefined ? KINDS : KINDS.filter((x) => x === kind)) {
      const c = own ? await this.existing(orgId, k) : this.cols.get(`${k}:${orgId}`);
      if (!c) continue;
      c.changed = true;
      if (id === undefined || c.stale.size >= MAX_STALE_MARKS) {
        c.stale.clear();
        c.staleAll = true;
      } else {
        c.stale.set(id, this.deps.clock.now());
      }
      // An instance that loads the stored collection later refreshes it first: the stored records may predate the change.
      if (own)
        await this.deps.state
          .set(NS.mirror, `${c.stored}|changed`, this.deps.clock.now(), { ttlMs: CHANGED_NOTE_TTL_MS })
          .catch((err: unknown) => this.deps.log.warn({ orgId, kind: k, err: errorMessage(err) }, 'mirror stale mark could not be stored'));
    }
  }

  private async freshen(c: Collection, opts: ReadOptions, deadline: number): Promise<void> {
    if (c.coverage === 'none') return;
    const fresh = opts.maxAgeMs === undefined || (!c.changed && this.deps.clock.now() - c.refreshedAt < opts.maxAgeMs);
    if (opts.force !== true && !c.staleAll && fresh) return;
    try {
      await within(this.refresh(c, opts.priority), deadline - this.deps.clock.now());
    } catch (err) {
      // BILL's budget is spent for now (busy, its hourly limit): the mirror answers as it is, and the card's "As of"
      // says how old that is. Anything else, or a card's Refresh (the person asked for BILL's data now), is theirs to see.
      if (opts.force === true || !(err instanceof LimitExceeded)) throw err;
      this.deps.log.debug(
        { orgId: c.orgId, kind: c.kind, reason: err.reason },
        'mirror not refreshed (BILL busy); answering from it as it is',
      );
    }
  }

  /** Reads the rows marked stale again (one GET each), or refreshes once when there are more than MAX_CONFIRMS_PER_ANSWER
   * (`firstOnly`: the first ones only); a refusal leaves a row still marked. True on a change. */
  private async confirmStale(c: Collection, rows: AnyRecord[], priority: Priority = 'background', firstOnly = false): Promise<boolean> {
    const { orgId, kind } = c;
    const doubtful = rows.filter((r) => c.stale.has(r.id));
    if (!firstOnly && (c.staleAll || doubtful.length > MAX_CONFIRMS_PER_ANSWER))
      return (await this.refresh(c, priority).catch(() => 0)) > 0;
    const reread = async (id: string) => {
      try {
        return (await this.reread(c, id, priority)).changed;
      } catch (err) {
        this.deps.log.debug({ orgId, kind, err: errorMessage(err) }, "stale record could not be read again; BILL's last answer is shown");
        return false;
      }
    };
    return (await Promise.all(doubtful.slice(0, MAX_CONFIRMS_PER_ANSWER).map((r) => reread(r.id)))).includes(true);
  }

  /** Reads one record from BILL again, keeps and stores what it answers; a 404 drops it and is returned. Refusals are thrown. */
  private async reread(c: Collection, id: string, priority: Priority | undefined): Promise<{ changed: boolean; gone?: BillApiError }> {
    const markedAt = c.stale.get(id);
    let result: { changed: boolean; gone?: BillApiError };
    try {
      const kept = c.spec.keep(await c.spec.get(this.deps.bill.org(c.orgId, { priority: priority ?? 'interactive' }), id));
      result = { changed: kept?.id === id && this.keep(c, kept) };
    } catch (err) {
      if (!(err instanceof BillApiError && err.category === 'notFound')) throw err;
      const old = c.delete(id);
      if (old) this.changed(c, old);
      result = { changed: old !== undefined, gone: err };
    }
    // A mark made while the GET ran stays for the next answer.
    if (c.stale.get(id) === markedAt) c.stale.delete(id);
    if (result.changed) await this.persist(c);
    return result;
  }

  /** Puts (or, open-only bills no longer open, drops) a record BILL answered; true when the collection changed. */
  private keep(c: Collection, record: AnyRecord): boolean {
    const open = c.spec.open;
    // Open-only collections drop records that stop being open (an `all` build adds them back while it runs).
    const prunes = open && c.coverage !== 'all' && c.build?.scope !== 'all' && !open.holds(record);
    const changed = prunes ? c.delete(record.id) !== undefined : c.put(record);
    if (changed) this.changed(c, record);
    return changed;
  }

  /** A bill or invoice changed: its vendor's or customer's balance in BILL may have moved (read again when shown). */
  private changed(c: Collection, record: AnyRecord): void {
    const party = c.spec.party?.(record);
    const parties = party?.id ? this.cols.get(`${party.kind}:${c.orgId}`) : undefined;
    if (party && parties && parties.stale.size < MAX_STALE_MARKS) parties.stale.set(party.id, this.deps.clock.now());
  }

  // ---- loading, building and storing ----

  /** The org's collection in memory or from the store; an empty one (registered) when none was ever built. */
  private collection(orgId: string, kind: Kind): Promise<Collection> {
    const key = `${kind}:${orgId}`;
    const held = this.cols.get(key);
    if (held) return held.loaded.then(() => held);
    const c = new Collection(orgId, kind, () => this.deps.clock.now());
    this.cols.set(key, c);
    c.loaded = this.takeStored(c, 'open').then(
      (stored) => {
        // Invoice cards name customers: the customer collection (built once, then refreshed) holds every name.
        if (kind === 'invoice' && stored) this.prepare(orgId, 'customer');
      },
      (err: unknown) => {
        // The store did not answer: the next question reads it again.
        this.cols.delete(key);
        throw err;
      },
    );
    return c.loaded.then(() => c);
  }

  /** Takes the stored collection into the empty c (every caller holds c) when it covers `scope`; true when taken. */
  private async takeStored(c: Collection, scope: Scope): Promise<boolean> {
    const { orgId, kind, stored } = c;
    const [head, changedAt] = await Promise.all([
      this.deps.state.get<StoredHead>(NS.mirror, stored),
      this.deps.state.get<unknown>(NS.mirror, `${stored}|changed`),
    ]);
    if (!head || typeof head !== 'object' || !Array.isArray(head.tags) || head.tags.length !== SHARDS) return false;
    const shards = await Promise.all(
      Array.from({ length: SHARDS }, (_, k) => this.deps.state.get<StoredShard>(NS.mirror, `${stored}#${k}`)),
    );
    if (!shards.every((s): s is StoredShard => !!s && Array.isArray(s.rows))) {
      this.deps.log.warn({ orgId, kind }, 'stored mirror is missing shards; building it again');
      return false;
    }
    let coverage: Scope = head.coverage === 'open' ? 'open' : 'all';
    // A watermark that is no time (another version's, a damaged store) vouches for nothing: the next refresh reads all.
    let watermark = asTime(head.watermark);
    // A shard another writer stored after this header is as current as its own watermark says, no more.
    for (const [k, s] of shards.entries()) {
      if (s.tag === head.tags[k]) continue;
      if (s.coverage === 'open') coverage = 'open';
      watermark = earlier(watermark, asTime(s.watermark));
    }
    if (!covers(coverage, scope) || c.coverage !== 'none') return false;
    for (const [k, s] of shards.entries()) {
      c.tags[k] = s.tag;
      // Read as a BILL record is (keep): a row another version stored may lack a field this one writes, or type it otherwise.
      for (const row of s.rows) {
        const kept = c.spec.keep(row as AnyRecord);
        if (kept) c.put(kept);
      }
    }
    c.dirty.clear();
    c.coverage = coverage;
    c.watermark = watermark;
    c.builtAt = typeof head.builtAt === 'number' ? head.builtAt : 0;
    c.refreshedAt = typeof head.refreshedAt === 'number' ? head.refreshedAt : 0;
    // Marked stale after its last refresh began (on any instance): the next fresh read refreshes first.
    if (typeof changedAt === 'number' && changedAt > c.refreshedAt) c.changed = true;
    this.deps.log.info({ orgId, kind, records: c.records.size, scope: c.coverage }, 'mirror read from the state store');
    return true;
  }

  /** The collection when one was built or is being built; undefined otherwise (nothing to keep current). */
  private async existing(orgId: string, kind: Kind): Promise<Collection | undefined> {
    const c = await this.collection(orgId, kind);
    return c.coverage !== 'none' || c.build ? c : undefined;
  }

  /** In memory, read, or built for `scope`; waits at most waitMs for a build (then answers with what is there). */
  private async ready(orgId: string, kind: Kind, scope: Scope, waitMs: number): Promise<Collection> {
    const c = await this.collection(orgId, kind);
    if (!covers(c.coverage, scope)) await within(this.build(c, scope), waitMs);
    return c;
  }

  /** One build at a time per org and kind; a wider scope asked for while a narrower build runs follows it. */
  private build(c: Collection, scope: Scope): Promise<void> {
    const { orgId, kind, spec } = c;
    const running = c.build;
    if (running && covers(running.scope, scope)) return running.done;
    const after = running ? running.done.catch(() => undefined) : Promise.resolve();
    const done = after.then(async () => {
      if (covers(c.coverage, scope)) return;
      const wasEmpty = c.coverage === 'none';
      // Another instance may have built and stored it since this one last looked (cluster mode): take that instead.
      if (wasEmpty && (await this.takeStored(c, scope))) return;
      const started = this.deps.clock.now();
      const open = scope === 'open' && wasEmpty ? spec.open : undefined;
      const walkScope: Scope = open ? 'open' : 'all';
      let pages: number;
      try {
        const org = this.deps.bill.org(orgId, { priority: 'background' });
        ({ pages } = await this.read(c, open ? open.list(org) : spec.list(org, undefined), 'build'));
      } catch (err) {
        // A failed first build leaves nothing half-done behind; the next question starts it again.
        if (wasEmpty) {
          c.records.clear();
          c.byNumber.clear();
        }
        throw err;
      }
      if (!covers(c.coverage, walkScope)) c.coverage = walkScope;
      c.builtAt = this.deps.clock.now();
      this.deps.log.info({ orgId, kind, scope: walkScope, records: c.records.size, pages, ms: c.builtAt - started }, 'mirror built');
      await this.persist(c, true);
      if (kind === 'invoice' && wasEmpty) this.prepare(orgId, 'customer');
    });
    const entry = { scope, done };
    c.build = entry;
    void done
      .catch((err: unknown) => this.deps.log.warn({ orgId, kind, scope, err: errorMessage(err) }, 'mirror build failed'))
      .finally(() => {
        if (c.build === entry) c.build = undefined;
      });
    return done;
  }

  /** Stores the changed shards, then the header; one write at a time per collection (changes meanwhile go next). */
  private persist(c: Collection, everything = false): Promise<void> {
    const { orgId, kind, stored } = c;
    if (everything) for (let k = 0; k < SHARDS; k++) c.dirty.add(k);
    const next = c.writing.then(async () => {
      if (c.dirty.size === 0 || c.coverage === 'none') return;
      // The header vouches for what was read up to the start of this write: changes made while it runs mark their
      // shards dirty again and go in the next write.
      const { watermark, builtAt, refreshedAt, coverage } = c;
      const rows = new Map<number, AnyRecord[]>([...c.dirty].map((k) => [k, []]));
      for (const r of c.records.values()) rows.get(shardOf(r.id))?.push(r);
      c.dirty.clear();
      try {
        await Promise.all(
          [...rows].map(async ([k, shard]) => {
            const tag = `${this.instance.slice(0, 8)}:${++this.seq}`;
            const doc: StoredShard = { coverage, watermark, tag, rows: shard };
            await this.deps.state.set(NS.mirror, `${stored}#${k}`, doc);
            c.tags[k] = tag;
          }),
        );
        const head: StoredHead = { coverage, builtAt, refreshedAt, watermark, tags: [...c.tags] };
        await this.deps.state.set(NS.mirror, stored, head);
      } catch (err) {
        // The mirror in memory still answers; the shards are stored with the next change.
        for (const k of rows.keys()) c.dirty.add(k);
        this.deps.log.warn({ orgId, kind, err: errorMessage(err) }, 'mirror could not be stored');
      }
    });
    c.writing = next;
    return next;
  }
}
