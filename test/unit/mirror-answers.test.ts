// The answers kept beside the mirror (payments, Spend & Expense, lists asked while the mirror is built): a TTL per
// answer, one upstream load for identical questions, a bound, and dropped when a record kind they came from changes.
import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { answerKey, Answers } from '../../src/mirror/answers.js';

const ORG = '00801ORGANISATION001';
const OTHER = '00801ORGANISATION002';
const NOW = Date.parse('2025-03-03T10:42:00.000Z');

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((a, b) => {
    resolve = a;
    reject = b;
  });
  return { promise, resolve, reject };
}

const make = (maxEntries = 1_000) => {
  const clock = new ManualClock(NOW);
  return { clock, answers: new Answers(clock, maxEntries) };
};
const LIST = { ttlS: 60, kinds: ['bill'] as const };

describe('freshness', () => {
  it('keeps an answer for its TTL and says when it was fetched; organisations are kept apart', async () => {
    const { clock, answers } = make();
    let loads = 0;
    const get = (org = ORG) => answers.get(org, 'bills due', LIST, async () => ++loads);
    expect(await get()).toEqual({ value: 1, fetchedAt: NOW, hit: false });
    clock.advance(59_000);
    expect(await get()).toEqual({ value: 1, fetchedAt: NOW, hit: true });
    expect(await get(OTHER)).toMatchObject({ value: 2, hit: false });
    clock.advance(1_000);
    expect(await get()).toEqual({ value: 3, fetchedAt: NOW + 60_000, hit: false });
  });

  it('does not keep failures: the next ask tries again', async () => {
    const { answers } = make();
    await expect(answers.get(ORG, 'bill 1', LIST, async () => Promise.reject(new Error('BILL down')))).rejects.toThrow('BILL down');
    expect(await answers.get(ORG, 'bill 1', LIST, async () => 'bill')).toMatchObject({ value: 'bill', hit: false });
    expect(answers.stats()).toMatchObject({ misses: 2, entries: 1 });
  });

  it('with a TTL of 0 keeps nothing but still shares loads in flight', async () => {
    const { answers } = make();
    const d = deferred<string>();
    const load = vi.fn(() => d.promise);
    const both = Promise.all([answers.get(ORG, 'x', { ttlS: 0, kinds: [] }, load), answers.get(ORG, 'x', { ttlS: 0, kinds: [] }, load)]);
    d.resolve('v');
    await both;
    await answers.get(ORG, 'x', { ttlS: 0, kinds: [] }, async () => 'again');
    expect(load).toHaveBeenCalledTimes(1);
    expect(answers.stats().entries).toBe(0);
  });
});

describe('one upstream load for identical questions', () => {
  it('answers 50 identical "bills due" asked at once with a single load, and gives every waiter the same failure', async () => {
    const { answers } = make();
    const d = deferred<string[]>();
    const load = vi.fn(() => d.promise);
    const asks = Array.from({ length: 50 }, () => answers.get(ORG, answerKey('billsDue', { days: 7 }), LIST, load));
    d.resolve(['b1', 'b2']);
    expect((await Promise.all(asks)).every((a) => a.value.length === 2)).toBe(true);
    expect(load).toHaveBeenCalledTimes(1);
    const failing = deferred<string>();
    const fails = Array.from({ length: 5 }, () =>
      answers.get(ORG, 'q', LIST, () => failing.promise).catch((e: unknown) => (e as Error).message),
    );
    failing.reject(new Error('BDC_1322'));
    expect(await Promise.all(fails)).toEqual(Array(5).fill('BDC_1322'));
  });

  it('builds keys that ignore parameter order and missing values', () => {
    expect(answerKey('bills', { days: 7, vendor: 'Acme' })).toBe(answerKey('bills', { vendor: 'Acme', status: undefined, days: 7 }));
    expect(answerKey('help')).toBe('help');
  });
});

describe('bounds and copies', () => {
  it('drops the oldest answers beyond CACHE_MAX_ENTRIES', async () => {
    const { answers } = make(10);
    for (let i = 0; i < 11; i++) await answers.get(ORG, `bill ${i}`, LIST, async () => i);
    expect(answers.stats().entries).toBe(10);
    expect(await answers.get(ORG, 'bill 0', LIST, async () => -1)).toMatchObject({ hit: false, value: -1 });
    expect(await answers.get(ORG, 'bill 10', LIST, async () => -1)).toMatchObject({ hit: true, value: 10 });
  });

  it('a hit is a copy: a caller that changes it changes nothing for the next one', async () => {
    const { answers } = make();
    const load = async () => ({ id: 'b1', lines: [{ amount: 10 }] });
    await answers.get(ORG, 'bill 1', LIST, load);
    const first = await answers.get(ORG, 'bill 1', LIST, load);
    first.value.lines[0]!.amount = 999;
    expect((await answers.get(ORG, 'bill 1', LIST, load)).value).toEqual({ id: 'b1', lines: [{ amount: 10 }] });
  });
});

describe('dropped when what they were built from changes', () => {
  it("a changed bill drops the answers built from bills, not those built from vendors or another organisation's", async () => {
    const { answers } = make();
    const put = (org: string, key: string, kinds: Array<'bill' | 'vendor' | 'payment'>) =>
      answers.get(org, key, { ttlS: 60, kinds }, async () => key);
    await put(ORG, 'bills due', ['bill', 'vendor']);
    await put(ORG, 'payments', ['payment', 'bill']);
    await put(ORG, 'vendors', ['vendor']);
    await put(OTHER, 'bills due', ['bill']);
    answers.drop(ORG, 'bill');
    const hit = async (org: string, key: string) => (await answers.get(org, key, LIST, async () => 'reloaded')).hit;
    expect(await hit(ORG, 'vendors')).toBe(true);
    expect(await hit(OTHER, 'bills due')).toBe(true);
    expect(await hit(ORG, 'bills due')).toBe(false);
    expect(await hit(ORG, 'payments')).toBe(false);
  });

  it("drops one answer by key (a Refresh button), or all of an org's", async () => {
    const { answers } = make();
    await answers.get(ORG, 'a', LIST, async () => 1);
    await answers.get(ORG, 'b', LIST, async () => 2);
    answers.drop(ORG, undefined, 'a');
    expect(answers.stats().entries).toBe(1);
    answers.drop(ORG);
    expect(answers.stats().entries).toBe(0);
  });

  it('does not keep an answer fetched before a change that arrived while it was loading', async () => {
    const { answers } = make();
    const d = deferred<string>();
    const first = answers.get(ORG, 'bills due', LIST, () => d.promise);
    answers.drop(ORG, 'bill');
    d.resolve('stale');
    expect((await first).value).toBe('stale');
    expect(await answers.get(ORG, 'bills due', LIST, async () => 'fresh')).toMatchObject({ value: 'fresh', hit: false });
  });
});
