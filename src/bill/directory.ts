// Names and currencies of vendors and customers by id: bills and invoices carry only ids, cards need names and the
// currency to format money in. Kept per org for CACHE_TTL_NAMES_S; taken from the party replicas when they hold the
// ids, else fetched in batches with `id:in` (BILL documents `id` as filterable on vendors and customers); concurrent
// asks for the same ids share one call.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { BillFilter, MAX_FILTER_LIST_ITEMS } from './filters.js';
import type { BillGateway, CallOptions } from './gateway.js';
import type { Customer, Vendor } from './types.js';

export type PartyKind = 'vendor' | 'customer';

export interface PartyInfo {
  id: string;
  name: string;
  /** Vendor `billCurrency` / customer `invoiceCurrency` (ISO 4217), when BILL gave one. */
  currency?: string;
  archived: boolean;
}

interface Held {
  /** undefined: BILL has no such record (kept, so it is not asked for again until the entry expires). */
  info: PartyInfo | undefined;
  at: number;
}

export interface PartyDirectoryDeps {
  bill: BillGateway;
  clock: Clock;
  log: Logger;
  /** How long a name stays fresh (config.cache.namesTtlS * 1000). */
  ttlMs: number;
  /** Most entries kept over all orgs; the oldest org's entries go first. Default 200,000. */
  maxEntries?: number;
  /** Records a local replica holds (the party replicas): asked before BILL, no call. */
  held?: (orgId: string, kind: PartyKind, ids: string[]) => Promise<Array<Vendor | Customer>>;
}

export function partyInfo(kind: PartyKind, record: Vendor | Customer): PartyInfo {
  const currency = kind === 'vendor' ? (record as Vendor).billCurrency : (record as Customer).invoiceCurrency;
  return { id: record.id, name: typeof record.name === 'string' ? record.name : '', currency: typeof currency === 'string' && currency ? currency : undefined, archived: record.archived === true };
}

export class PartyDirectory {
  /** `${kind}:${orgId}` -> id -> entry. */
  private readonly books = new Map<string, Map<string, Held>>();
  /** `${kind}:${orgId}:${id}` -> the fetch that will answer it. */
  private readonly pending = new Map<string, Promise<void>>();
  private size = 0;

  constructor(private readonly deps: PartyDirectoryDeps) {}

  /** Names (and currencies) for these ids; ids BILL does not know are left out of the answer. */
  async resolve(orgId: string, kind: PartyKind, ids: Iterable<string>, opts: CallOptions = {}): Promise<Map<string, PartyInfo>> {
    const book = this.book(orgId, kind);
    const now = this.deps.clock.now();
    const wanted = [...new Set([...ids].filter((id) => typeof id === 'string' && id !== ''))];
    const waits: Promise<void>[] = [];
    const missing: string[] = [];
    let stale: string[] = [];
    for (const id of wanted) {
      const held = book.get(id);
      if (held && now - held.at < this.deps.ttlMs) continue;
      const flight = this.pending.get(`${kind}:${orgId}:${id}`);
      if (flight) waits.push(flight);
      else stale.push(id);
    }
    if (stale.length > 0 && this.deps.held) {
      const local = await this.deps.held(orgId, kind, stale).catch(() => []);
      if (local.length > 0) {
        this.remember(orgId, kind, local);
        const known = new Set(local.map((r) => r.id));
        stale = stale.filter((id) => !known.has(id));
      }
    }
    for (const id of stale) {
      // Another ask may have started fetching it while the replica was consulted.
      const flight = this.pending.get(`${kind}:${orgId}:${id}`);
      if (flight) waits.push(flight);
      else missing.push(id);
    }
    for (let i = 0; i < missing.length; i += MAX_FILTER_LIST_ITEMS) {
      const batch = missing.slice(i, i + MAX_FILTER_LIST_ITEMS);
      const flight = this.fetch(orgId, kind, batch, opts).finally(() => {
        for (const id of batch) this.pending.delete(`${kind}:${orgId}:${id}`);
      });
      for (const id of batch) this.pending.set(`${kind}:${orgId}:${id}`, flight);
      waits.push(flight);
    }
    await Promise.all(waits);
    const out = new Map<string, PartyInfo>();
    for (const id of wanted) {
      const info = book.get(id)?.info;
      if (info) out.set(id, info);
    }
    return out;
  }

  /** Records vendors or customers a command already fetched (a name search), so later cards need no call. */
  remember(orgId: string, kind: PartyKind, records: Array<Vendor | Customer>): void {
    const book = this.book(orgId, kind);
    const at = this.deps.clock.now();
    for (const r of records) if (r && typeof r.id === 'string') this.put(book, r.id, { info: partyInfo(kind, r), at });
  }

  /** A vendor or customer changed (webhook): its name is fetched again next time. Without id, the whole kind. */
  forget(orgId: string, kind: PartyKind, id?: string): void {
    const key = `${kind}:${orgId}`;
    const book = this.books.get(key);
    if (!book) return;
    if (id === undefined) {
      this.size -= book.size;
      this.books.delete(key);
      return;
    }
    if (book.delete(id)) this.size--;
  }

  private async fetch(orgId: string, kind: PartyKind, ids: string[], opts: CallOptions): Promise<void> {
    const org = this.deps.bill.org(orgId, opts);
    const filter = new BillFilter().in('id', ids);
    const list = kind === 'vendor' ? org.vendors.list({ filter, maxPages: 5 }) : org.customers.list({ filter, maxPages: 5 });
    const { items } = await list.all();
    const book = this.book(orgId, kind);
    const at = this.deps.clock.now();
    const found = new Set<string>();
    for (const r of items as Array<Vendor | Customer>) {
      if (!r || typeof r.id !== 'string') continue;
      found.add(r.id);
      this.put(book, r.id, { info: partyInfo(kind, r), at });
    }
    for (const id of ids) if (!found.has(id)) this.put(book, id, { info: undefined, at });
  }

  private book(orgId: string, kind: PartyKind): Map<string, Held> {
    const key = `${kind}:${orgId}`;
    let book = this.books.get(key);
    if (!book) {
      book = new Map();
      this.books.set(key, book);
    }
    return book;
  }

  private put(book: Map<string, Held>, id: string, held: Held): void {
    if (!book.has(id)) this.size++;
    book.set(id, held);
    const max = this.deps.maxEntries ?? 200_000;
    // Over the bound: drop whole books, oldest first (rare; an org's names are all fetched again on demand).
    while (this.size > max && this.books.size > 1) {
      const [oldestKey, oldest] = this.books.entries().next().value as [string, Map<string, Held>];
      if (oldest === book) break;
      this.size -= oldest.size;
      this.books.delete(oldestKey);
    }
  }
}
