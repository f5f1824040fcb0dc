// Walks BILL's cursor pages: follow nextPage until it is absent, keep going past empty pages, stop at a page cap.
// Facts ([X][P], shared/reference/bill-v3-api.md §2 and §6): the cursor is opaque; an empty `results` that still
// carries nextPage means "continue"; AP/AR sends it back as `page=`, Spend & Expense as `nextPage=`.
import { BillApiError } from '../errors.js';

export interface ListOptions {
  /** Rows per page (BILL `max`), 1..the endpoint's cap; default the cap. */
  pageSize?: number;
  /** Page cap for one walk; default 20 (2,000 rows at 100 a page). */
  maxPages?: number;
}

export interface ListPage<T> {
  results: T[];
  nextPage?: string;
}

/** Empty pages in a row that give back the cursor they were asked with, before the walk is given up as stuck. */
const MAX_SAME_CURSOR = 5;

/** BILL `max` for a list call: a size outside 1..cap is refused before anything is sent, not clamped. */
export function pageSize(o: ListOptions, cap: number): number {
  const size = o.pageSize ?? cap;
  if (!Number.isInteger(size) || size < 1 || size > cap) throw new RangeError(`page size must be 1..${cap}, got ${size}`);
  return size;
}

/** A lazily fetched list: walk its pages, or collect with `all()` / `take(n)`; `route` names it in errors, e.g. "GET /v3/bills". */
export function pagedList<T>(route: string, fetchPage: (cursor: string | undefined) => Promise<unknown>, opts: ListOptions) {
  /** Pages in order; stops when BILL gives no next cursor or at the page cap. */
  async function* pages(): AsyncGenerator<ListPage<T>, void, undefined> {
    let cursor: string | undefined;
    // Cursors already sent: one coming back would walk the same rows again until the page cap (10,000 for the mirror).
    const sent = new Set<string>();
    let asked = 0;
    const odd = (what: string) => new BillApiError({ category: 'unknown', status: 200, message: `BILL answered ${route} ${what}` });
    for (let n = 0; n < (opts.maxPages ?? 20); n++) {
      const raw = (await fetchPage(cursor)) as { results?: unknown; nextPage?: unknown } | null | undefined;
      if (!Array.isArray(raw?.results)) throw odd('without a results array');
      if (cursor !== undefined) sent.add(cursor);
      // An absent, null or empty cursor ends the walk.
      const next = typeof raw.nextPage === 'string' && raw.nextPage !== '' ? raw.nextPage : undefined;
      // An empty page giving back the cursor it was asked with means "ask again", a few times; any other cursor seen before is a loop.
      const again = next !== undefined && next === cursor && raw.results.length === 0;
      asked = again ? asked + 1 : 0;
      if (next !== undefined && ((!again && sent.has(next)) || asked > MAX_SAME_CURSOR)) throw odd('with a cursor it had already given');
      cursor = next;
      yield { results: raw.results as T[], nextPage: cursor };
      if (!cursor) return;
    }
  }

  /** The first `n` items (fewer pages when they suffice); `truncated` when BILL still had a next page. */
  async function take(n: number) {
    const items: T[] = [];
    let pageCount = 0;
    let truncated = false;
    for await (const page of pages()) {
      pageCount++;
      items.push(...page.results.slice(0, n - items.length));
      truncated = page.nextPage !== undefined;
      if (items.length >= n) break;
    }
    return { items, truncated, pages: pageCount };
  }

  /** `all()`: every item up to the page cap. */
  return { pages, take, all: () => take(Number.POSITIVE_INFINITY) };
}

export type PagedList<T> = ReturnType<typeof pagedList<T>>;
