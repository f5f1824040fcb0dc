// Budget arithmetic, pure: sliding windows over call timestamps, fixed clock-hour reservoirs, an upstream's Retry-After.
import type { BudgetSnapshot } from './types.js';

export const HOUR_MS = 3_600_000;

export interface RateWindow {
  limit: number;
  windowMs: number;
}

/** What a budget allows and has used; `windowMs`: the window the figures describe, for rate budgets. */
export type Usage = Pick<BudgetSnapshot, 'limit' | 'used' | 'remaining' | 'windowMs'>;

/** Start of the clock hour `now` falls in (UTC; BILL counts per clock hour, every zone it runs in is whole-hour aligned). */
export function hourStart(now: number): number {
  return Math.floor(now / HOUR_MS) * HOUR_MS;
}

export function nextHour(now: number): number {
  return hourStart(now) + HOUR_MS;
}

/** Retry-After as milliseconds: delta-seconds (Graph sends decimals like 2.128) or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.ceil(Number(raw) * 1000);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Exponential backoff with jitter for a retry with no Retry-After: min(maxMs, baseMs * 2^attempt), scaled into [0.5, 1). */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  return Math.round(Math.min(maxMs, baseMs * 2 ** attempt) * (0.5 + Math.random() * 0.5));
}

/** Index of the first timestamp strictly after `since` in an ascending array. */
function firstAfter(ts: readonly number[], since: number): number {
  let lo = 0;
  let hi = ts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const t = ts[mid];
    if (t !== undefined && t > since) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Calls a window counts at `now`: those made in (now - windowMs, now]. */
export function countInWindow(ts: readonly number[], windowMs: number, now: number): number {
  return ts.length - firstAfter(ts, now - windowMs);
}

/** The earliest instant >= now at which one more call fits every window, given the calls in `ts` (ascending). */
export function nextFit(ts: readonly number[], windows: readonly RateWindow[], now: number): number {
  let at = now;
  for (const w of windows) {
    const leaves = ts[ts.length - w.limit];
    if (countInWindow(ts, w.windowMs, now) >= w.limit && leaves !== undefined) at = Math.max(at, leaves + w.windowMs);
  }
  return at;
}

/** When the n-th of n calls queued now could start, if each starts as soon as the windows allow. */
export function nthFit(ts: readonly number[], windows: readonly RateWindow[], now: number, n: number): number {
  const sim = [...ts];
  let at = now;
  for (let i = 0; i < Math.max(1, n); i++) {
    at = nextFit(sim, windows, at);
    sim.push(at);
  }
  return at;
}

/** The window closest to its limit right now (the one that decides when the next call may go). */
export function bindingWindow(ts: readonly number[], windows: readonly RateWindow[], now: number): Usage {
  let best: Usage = { limit: 0, used: 0, remaining: 0, windowMs: 0 };
  for (const [i, w] of windows.entries()) {
    const used = countInWindow(ts, w.windowMs, now);
    const u = { limit: w.limit, used, remaining: Math.max(0, w.limit - used), windowMs: w.windowMs };
    if (i === 0 || u.remaining / u.limit < best.remaining / best.limit) best = u;
  }
  return best;
}
