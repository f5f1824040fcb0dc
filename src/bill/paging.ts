// Walks BILL's cursor pages: follow nextPage until it is absent, keep going past empty pages, stop at a page cap.
// Facts ([X][P], shared/reference/bill-v3-api.md §2 and §6): the cursor is opaque; an empty `results` that still
// carries nextPage means "continue"; AP/AR sends it back as `page=`, Spend & Expense as `nextPage=`.
import { BillApiError } from '../errors.js';
import type { ListPage, ListResult } from './types.js';

/** Pages per walk unless the caller says otherwise (2,000 rows at 100 a page). */
export const DEFAULT_MAX_PAGES = 20;

export type PageFetcher<T> = (cursor: string | undefined) => Promise<ListPage<T>>;

/** Checks the envelope and normalises absent/null/empty cursors to undefined. */
export function readPage<T>(raw: unknown, route: string): ListPage<T> {
  const obj = raw as { results?: unknown; nextPage?: unknown; prevPage?: unknown } | null | undefined;
  if (!obj || typeof obj !== 'object' || !Array.isArray(obj.results)) {
    throw new BillApiError({ category: 'unknown', status: 200, message: `BILL answered ${route} without a results array` });
  }
  const cursor = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
  return { results: obj.results as T[], nextPage: cursor(obj.nextPage), prevPage: cursor(obj.prevPage) };
}

/** A lazily fetched list: iterate items, iterate pages, or collect with `all()` / `take(n)`. */
export class PagedList<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: PageFetcher<T>,
    private readonly opts: { maxPages: number; startPage?: string },
  ) {}

  /** Pages in order; stops when BILL gives no next cursor or at the page cap. */
  async *pages(): AsyncGenerator<ListPage<T>, void, undefined> {
    let cursor = this.opts.startPage;
    for (let n = 0; n < this.opts.maxPages; n++) {
      const page = await this.fetchPage(cursor);
      yield page;
      if (!page.nextPage) return;
      cursor = page.nextPage;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.results;
  }

  /** Every item up to the page cap; `truncated` says whether BILL had more. */
  all(): Promise<ListResult<T>> {
    return this.take(Number.POSITIVE_INFINITY);
  }

  /** The first `n` items (fewer pages when they suffice). */
  async take(n: number): Promise<ListResult<T>> {
    const items: T[] = [];
    let cursor = this.opts.startPage;
    let pages = 0;
    while (pages < this.opts.maxPages) {
      const page = await this.fetchPage(cursor);
      pages++;
      for (const item of page.results) {
        if (items.length >= n) break;
        items.push(item);
      }
      cursor = page.nextPage;
      if (!cursor) return { items, truncated: false, pages };
      if (items.length >= n) return { items, truncated: true, nextPage: cursor, pages };
    }
    return { items, truncated: cursor !== undefined, nextPage: cursor, pages };
  }
}
