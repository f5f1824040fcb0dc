// The bench's arithmetic, kept pure so it can be unit tested: percentiles, interval maths for upstream utilisation,
// a seeded random source and Zipf weights for the compressed hour, and target verdicts.
import { Prng } from '../src/sandbox/prng.js';

/** Percentile by nearest rank: the smallest sample with at least p% of the samples at or below it. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be 0..100, got ${p}`);
  const sorted = isSorted(samples) ? samples : [...samples].sort((a, b) => a - b);
  if (p === 0) return nth(sorted, 0);
  const rank = Math.ceil((p / 100) * sorted.length);
  return nth(sorted, Math.min(sorted.length, Math.max(1, rank)) - 1);
}

/** xs[i] where the caller knows i is in range; a clear error rather than undefined flowing into the figures. */
export function nth<T>(xs: readonly T[], i: number, what = 'item'): T {
  const x = xs[i];
  if (x === undefined) throw new RangeError(`${what} ${i} is outside 0..${xs.length - 1}`);
  return x;
}

function isSorted(xs: readonly number[]): boolean {
  let prev = Number.NEGATIVE_INFINITY;
  for (const x of xs) {
    if (x < prev) return false;
    prev = x;
  }
  return true;
}

export interface LatencySummary {
  n: number;
  min: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const mean = n === 0 ? Number.NaN : sorted.reduce((s, x) => s + x, 0) / n;
  return {
    n,
    min: sorted[0] ?? Number.NaN,
    mean,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[n - 1] ?? Number.NaN,
  };
}

/** A span of time in ms (start <= end). */
export interface Interval {
  start: number;
  end: number;
}

/** The smallest interval holding all of them; undefined for none. */
export function envelope(intervals: readonly Interval[]): Interval | undefined {
  if (intervals.length === 0) return undefined;
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const i of intervals) {
    if (i.start < start) start = i.start;
    if (i.end > end) end = i.end;
  }
  return { start, end };
}

/** Total time covered by at least one interval (overlaps counted once). */
export function unionLength(intervals: readonly Interval[]): number {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  let total = 0;
  let curStart = Number.NaN;
  let curEnd = Number.NaN;
  for (const i of sorted) {
    if (Number.isNaN(curEnd) || i.start > curEnd) {
      if (!Number.isNaN(curEnd)) total += curEnd - curStart;
      curStart = i.start;
      curEnd = i.end;
    } else if (i.end > curEnd) {
      curEnd = i.end;
    }
  }
  if (!Number.isNaN(curEnd)) total += curEnd - curStart;
  return total;
}

/** Highest number of intervals open at the same instant (an interval ending at t does not overlap one starting at t). */
export function maxOverlap(intervals: readonly Interval[]): number {
  const events: Array<[number, number]> = [];
  for (const i of intervals) {
    events.push([i.start, 1]);
    events.push([i.end, -1]);
  }
  // Ends before starts at the same instant.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of events) {
    open += d;
    if (open > max) max = open;
  }
  return max;
}

export interface UtilisationInput {
  /** Every upstream call the org made while the work was pending, as the upstream saw it (slot taken -> released). */
  calls: readonly Interval[];
  /** BILL's concurrent-request limit per org (3). */
  concurrency: number;
  /** The latency the sandbox adds to every call. */
  latencyMs: number;
}

export interface Utilisation {
  /** The span from the first call's start to the last call's end, ms. */
  windowMs: number;
  calls: number;
  /** Calls per second achieved over the window. */
  throughput: number;
  /** What the limit allows at that latency: concurrency / latency, calls per second. */
  ceiling: number;
  /** throughput / ceiling. */
  utilisation: number;
  /** Share of the window's slot-time (window x concurrency) during which a slot was held at the upstream. */
  occupancy: number;
  /** Mean time a call held its slot at the upstream (latency plus the upstream's own work). */
  meanCallMs: number;
  /** Time inside the window with no call in flight at all. */
  idleMs: number;
}

/**
 * Utilisation = achieved upstream throughput / (concurrency / latency), over the span in which upstream work was
 * pending: the first call's start to the last call's end. Gaps inside that span count against it.
 * It factors as occupancy x (latency / mean call time): how full the slots were kept, times how much of each call
 * was the configured latency rather than the upstream's own work.
 */
export function utilisation(input: UtilisationInput): Utilisation {
  const env = envelope(input.calls);
  const calls = input.calls.length;
  if (!env || env.end <= env.start) {
    return {
      windowMs: 0,
      calls,
      throughput: 0,
      ceiling: input.concurrency / (input.latencyMs / 1000),
      utilisation: 0,
      occupancy: 0,
      meanCallMs: 0,
      idleMs: 0,
    };
  }
  const windowMs = env.end - env.start;
  const held = input.calls.reduce((s, c) => s + (c.end - c.start), 0);
  const throughput = calls / (windowMs / 1000);
  const ceiling = input.concurrency / (input.latencyMs / 1000);
  return {
    windowMs,
    calls,
    throughput,
    ceiling,
    utilisation: throughput / ceiling,
    occupancy: held / (windowMs * input.concurrency),
    meanCallMs: held / calls,
    idleMs: windowMs - unionLength(input.calls),
  };
}

/** The sandbox's seeded PRNG (mulberry32): the same seed gives the same load on every run. */
export class Rng extends Prng {
  /** Exponentially distributed with this mean (Poisson arrivals). */
  exponential(mean: number): number {
    return -Math.log(1 - this.next()) * mean;
  }
  /** An index drawn with probability proportional to weights[i]. */
  weightedIndex(weights: readonly number[]): number {
    const total = weights.reduce((s, w) => s + w, 0);
    let r = this.next() * total;
    for (const [i, w] of weights.entries()) {
      r -= w;
      if (r < 0) return i;
    }
    return weights.length - 1;
  }
}

/** Zipf weights for ranks 1..n with exponent s (rank k has weight 1/k^s), normalised to sum to 1. */
export function zipfWeights(n: number, s: number): number[] {
  const raw = Array.from({ length: n }, (_, k) => 1 / Math.pow(k + 1, s));
  const total = raw.reduce((a, b) => a + b, 0);
  return raw.map((w) => w / total);
}

type Direction = 'atMost' | 'atLeast';

export interface Target {
  value: number;
  direction: Direction;
}

/** PASS when the figure meets the target, MISS otherwise (NaN never passes). */
export function verdict(figure: number, target: Target): 'PASS' | 'MISS' {
  if (!Number.isFinite(figure)) return 'MISS';
  return target.direction === 'atMost' ? (figure <= target.value ? 'PASS' : 'MISS') : figure >= target.value ? 'PASS' : 'MISS';
}

/** Runs `count` jobs with at most `limit` in flight; resolves when all settled. */
export async function boundedAll<T>(count: number, limit: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(count);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      out[i] = await job(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker));
  return out;
}

/** Mean number of intervals open during each bucket of `bucketMs` from `from` to `to` (time-weighted). */
export function meanOpenPerBucket(intervals: readonly Interval[], from: number, to: number, bucketMs: number): number[] {
  const n = Math.max(1, Math.ceil((to - from) / bucketMs));
  const out = new Array<number>(n).fill(0);
  for (const i of intervals) {
    const s = Math.max(from, i.start);
    const e = Math.min(to, i.end);
    if (e <= s) continue;
    for (let b = Math.floor((s - from) / bucketMs); b < n && from + b * bucketMs < e; b++) {
      const bs = from + b * bucketMs;
      const overlap = Math.min(e, bs + bucketMs) - Math.max(s, bs);
      if (overlap > 0) out[b] = nth(out, b) + overlap / bucketMs;
    }
  }
  return out;
}
