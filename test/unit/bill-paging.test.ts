// Walking BILL's cursor pages: follow nextPage, keep going past empty pages, stop when it is absent or at the cap.
import { describe, expect, it } from 'vitest';
import { pagedList, type ListPage } from '../../src/bill/paging.js';
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
    const result = await pagedList('GET /v3/x', fetch, { maxPages: 10 }).all();
    expect(result).toEqual({ items: [1, 2, 3], truncated: false, pages: 3 });
    expect(seen).toEqual([undefined, '1', '2']);
  });

  it('stops at the page cap and says the list was cut short', async () => {
    const { fetch, seen } = pages({ results: [1], nextPage: '1' }, { results: [2], nextPage: '2' }, { results: [3] });
    const result = await pagedList('GET /v3/x', fetch, { maxPages: 2 }).all();
    expect(result).toEqual({ items: [1, 2], truncated: true, pages: 2 });
    expect(seen).toEqual([undefined, '1']);
  });

  it('take(n) fetches only the pages it needs', async () => {
    const { fetch, seen } = pages({ results: [1, 2, 3], nextPage: '1' }, { results: [4, 5, 6] });
    const first = await pagedList('GET /v3/x', fetch, { maxPages: 10 }).take(2);
    expect(first.items).toEqual([1, 2]);
    expect(first.truncated).toBe(true);
    expect(seen).toHaveLength(1);
  });

  it('walks pages lazily: the next page is fetched only when the walk asks for it', async () => {
    const { fetch, seen } = pages({ results: [1], nextPage: '1' }, { results: [2] });
    const out: number[] = [];
    for await (const page of pagedList<number>('GET /v3/x', fetch, { maxPages: 5 }).pages()) {
      expect(seen).toHaveLength(out.length + 1);
      out.push(...page.results);
    }
    expect(out).toEqual([1, 2]);
  });

  it('treats null and empty-string cursors as the end, and refuses an answer without results', async () => {
    for (const nextPage of [null, '']) {
      const list = pagedList('GET /v3/bills', () => Promise.resolve({ results: [1], nextPage }), { maxPages: 5 });
      expect(await list.all()).toEqual({ items: [1], truncated: false, pages: 1 });
    }
    const wrong = pagedList('GET /v3/bills', () => Promise.resolve({ bills: [] }), {});
    await expect(wrong.all()).rejects.toThrow(BillApiError);
  });

  it('a page that gives back the cursor it was asked with ends the walk with an error, not 10,000 calls for the same rows', async () => {
    let calls = 0;
    const same = () => {
      calls++;
      return Promise.resolve({ results: [1, 2], nextPage: 'A' });
    };
    await expect(pagedList('GET /v3/bills', same, { maxPages: 10_000 }).all()).rejects.toThrow(/cursor/);
    expect(calls).toBeLessThanOrEqual(2);
  });

  it('cursors that come round again (A, B, A) end the walk with an error', async () => {
    const { fetch, seen } = pages({ results: [1], nextPage: '1' }, { results: [2], nextPage: '2' }, { results: [3], nextPage: '1' });
    const err = await pagedList('GET /v3/bills', fetch, { maxPages: 10_000 })
      .all()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BillApiError);
    expect(seen).toEqual([undefined, '1', '2']);
  });

  it('empty pages that give back the same cursor are asked again a few times, not for ever', async () => {
    let calls = 0;
    const stuck = (cursor: string | undefined) => {
      calls++;
      return Promise.resolve(cursor === undefined ? { results: [1], nextPage: 'A' } : { results: [], nextPage: 'A' });
    };
    await expect(pagedList('GET /v3/bills', stuck, { maxPages: 10_000 }).all()).rejects.toThrow(BillApiError);
    expect(calls).toBeLessThanOrEqual(10);
    // Two in a row (BILL's "continue") still go on to the rows.
    let n = 0;
    const twice = (c: string | undefined) =>
      Promise.resolve(c === undefined ? { results: [1], nextPage: '1' } : n++ < 2 ? { results: [], nextPage: '1' } : { results: [2] });
    expect((await pagedList('GET /v3/bills', twice, { maxPages: 10 }).all()).items).toEqual([1, 2]);
  });
});
