// Walking BILL's cursor pages: follow nextPage, keep going past empty pages, stop when it is absent or at the cap.
import { describe, expect, it } from 'vitest';
import { PagedList, type ListPage } from '../../src/bill/paging.js';
import { BillApiError } from '../../src/errors.js';

function pages(...list: Array<ListPage<number>>) {
  const seen: Array<string | undefined> = [];
  const fetch = async (cursor: string | undefined) => {
    seen.push(cursor);
    const i = cursor === undefined ? 0 : Number(cursor);
    return list[i]!;
  };
  return { fetch, seen };
}

describe('PagedList', () => {
  it('follows nextPage until it is absent, continuing past an empty page that carries a cursor', async () => {
    const { fetch, seen } = pages({ results: [1, 2], nextPage: '1' }, { results: [], nextPage: '2' }, { results: [3] });
    const result = await new PagedList('GET /v3/x', fetch, { maxPages: 10 }).all();
    expect(result).toEqual({ items: [1, 2, 3], truncated: false, pages: 3 });
    expect(seen).toEqual([undefined, '1', '2']);
  });

  it('stops at the page cap and says the list was cut short', async () => {
    const { fetch, seen } = pages({ results: [1], nextPage: '1' }, { results: [2], nextPage: '2' }, { results: [3] });
    const result = await new PagedList('GET /v3/x', fetch, { maxPages: 2 }).all();
    expect(result).toEqual({ items: [1, 2], truncated: true, pages: 2 });
    expect(seen).toEqual([undefined, '1']);
  });

  it('take(n) fetches only the pages it needs', async () => {
    const { fetch, seen } = pages({ results: [1, 2, 3], nextPage: '1' }, { results: [4, 5, 6] });
    const first = await new PagedList('GET /v3/x', fetch, { maxPages: 10 }).take(2);
    expect(first.items).toEqual([1, 2]);
    expect(first.truncated).toBe(true);
    expect(seen).toHaveLength(1);
  });

  it('walks pages lazily: the next page is fetched only when the walk asks for it', async () => {
    const { fetch, seen } = pages({ results: [1], nextPage: '1' }, { results: [2] });
    const out: number[] = [];
    for await (const page of new PagedList<number>('GET /v3/x', fetch, { maxPages: 5 }).pages()) {
      expect(seen).toHaveLength(out.length + 1);
      out.push(...page.results);
    }
    expect(out).toEqual([1, 2]);
  });

  it('treats null and empty-string cursors as the end, and refuses an answer without results', async () => {
    for (const nextPage of [null, '']) {
      const list = new PagedList('GET /v3/bills', () => Promise.resolve({ results: [1], nextPage }), { maxPages: 5 });
      expect(await list.all()).toEqual({ items: [1], truncated: false, pages: 1 });
    }
    const wrong = new PagedList('GET /v3/bills', () => Promise.resolve({ bills: [] }), {});
    await expect(wrong.all()).rejects.toThrow(BillApiError);
  });
});
