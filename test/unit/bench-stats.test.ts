// The bench's arithmetic: percentiles, the interval maths behind BILL slot utilisation, Zipf weights and verdicts.
import { describe, expect, it } from 'vitest';
import {
  boundedAll,
  envelope,
  maxOverlap,
  meanOpenPerBucket,
  percentile,
  Rng,
  summarize,
  unionLength,
  utilisation,
  verdict,
  zipfWeights,
} from '../../bench/stats.js';

describe('latency percentiles (nearest rank)', () => {
  it('takes the smallest sample with at least p% of the samples at or below it', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile(xs, 0)).toBe(1);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([30, 10, 20], 50)).toBe(20);
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow(RangeError);
  });

  it("summarises a set of latencies without reordering the caller's array", () => {
    const xs = [5, 1, 4, 2, 3];
    expect(summarize(xs)).toEqual({ n: 5, min: 1, mean: 3, p50: 3, p95: 5, p99: 5, max: 5 });
    expect(xs).toEqual([5, 1, 4, 2, 3]);
  });
});

describe('upstream slots as intervals', () => {
  const calls = [
    { start: 0, end: 120 },
    { start: 0, end: 120 },
    { start: 10, end: 130 },
    { start: 120, end: 240 },
    { start: 400, end: 520 },
  ];

  it('measures the span, the time covered and the most open at once', () => {
    expect(envelope(calls)).toEqual({ start: 0, end: 520 });
    expect(unionLength(calls)).toBe(240 + 120);
    // A call ending at 120 and one starting at 120 are not in flight together.
    expect(maxOverlap(calls)).toBe(3);
    expect(maxOverlap([])).toBe(0);
    expect(envelope([])).toBeUndefined();
  });

  it('utilisation = calls per second over the span / (3 / latency), and factors into occupancy x latency / mean call', () => {
    // 3 slots kept full for 1.2 s with calls of exactly the latency: 30 calls, utilisation 100%.
    const full = Array.from({ length: 30 }, (_, i) => ({ start: Math.floor(i / 3) * 120, end: Math.floor(i / 3) * 120 + 120 }));
    const u = utilisation({ calls: full, concurrency: 3, latencyMs: 120 });
    expect(u.windowMs).toBe(1_200);
    expect(u.ceiling).toBeCloseTo(25);
    expect(u.throughput).toBeCloseTo(25);
    expect(u.utilisation).toBeCloseTo(1);
    expect(u.occupancy).toBeCloseTo(1);
    expect(u.idleMs).toBe(0);

    // The same calls taking 150 ms of slot time each (the upstream's own work on top of the latency): slots full, 80%.
    const slow = Array.from({ length: 30 }, (_, i) => ({ start: Math.floor(i / 3) * 150, end: Math.floor(i / 3) * 150 + 150 }));
    const v = utilisation({ calls: slow, concurrency: 3, latencyMs: 120 });
    expect(v.utilisation).toBeCloseTo(0.8);
    expect(v.occupancy).toBeCloseTo(1);
    expect(v.meanCallMs).toBeCloseTo(150);
    expect(v.utilisation).toBeCloseTo(v.occupancy * (120 / v.meanCallMs));

    // A gap with nothing in flight counts against it.
    const gap = [...full, { start: 2_400, end: 2_520 }];
    const w = utilisation({ calls: gap, concurrency: 3, latencyMs: 120 });
    expect(w.idleMs).toBe(1_200);
    expect(w.utilisation).toBeCloseTo(31 / 2.52 / 25);
  });

  it('says 0 for no calls rather than dividing by zero', () => {
    expect(utilisation({ calls: [], concurrency: 3, latencyMs: 120 })).toMatchObject({ calls: 0, utilisation: 0, windowMs: 0 });
  });

  it('averages calls in flight per bucket, time-weighted', () => {
    const buckets = meanOpenPerBucket(
      [
        { start: 0, end: 1_000 },
        { start: 500, end: 1_500 },
        { start: 0, end: 2_000 },
      ],
      0,
      2_000,
      1_000,
    );
    expect(buckets).toEqual([2.5, 1.5]);
  });
});

describe('the generated load', () => {
  it('is the same for the same seed', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const xs = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(xs);
    for (const x of xs) expect(x >= 0 && x < 1).toBe(true);
    expect(new Rng(43).next()).not.toBe(xs[0]);
  });

  it('draws Zipf-weighted ranks: rank 1 about twice rank 2 at s = 1', () => {
    const w = zipfWeights(100, 1);
    expect(w.reduce((s, x) => s + x, 0)).toBeCloseTo(1);
    expect(w[0]! / w[1]!).toBeCloseTo(2);
    const rng = new Rng(7);
    const counts = new Array(100).fill(0);
    for (let i = 0; i < 20_000; i++) counts[rng.weightedIndex(w)]++;
    expect(counts[0] / counts[1]).toBeGreaterThan(1.7);
    expect(counts[0] / counts[1]).toBeLessThan(2.3);
  });
});

describe('verdicts', () => {
  it('passes a figure that meets its target and never a missing one', () => {
    expect(verdict(1.2, { value: 1.25, direction: 'atMost' })).toBe('PASS');
    expect(verdict(1.3, { value: 1.25, direction: 'atMost' })).toBe('MISS');
    expect(verdict(90, { value: 90, direction: 'atLeast' })).toBe('PASS');
    expect(verdict(89.9, { value: 90, direction: 'atLeast' })).toBe('MISS');
    expect(verdict(Number.NaN, { value: 0, direction: 'atMost' })).toBe('MISS');
  });
});

describe('bounded concurrency', () => {
  it('never runs more than the limit at once and keeps results in order', async () => {
    let open = 0;
    let max = 0;
    const out = await boundedAll(20, 3, async (i) => {
      open++;
      max = Math.max(max, open);
      await Promise.resolve();
      await Promise.resolve();
      open--;
      return i * 2;
    });
    expect(max).toBe(3);
    expect(out).toEqual(Array.from({ length: 20 }, (_, i) => i * 2));
  });
});
