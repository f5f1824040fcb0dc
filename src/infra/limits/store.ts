// Where budget counts live: in this process (LocalBudgetStore), or in Redis for a fleet (redisStore.ts), behind one interface.
import type { BudgetRule } from './budgets.js';
import { bindingWindow, hourStart, nextFit, nextHour, nthFit, prune, type RateWindow } from './windows.js';

type BlockKind = 'hourly' | 'retryAfter';

export interface Block {
  until: number;
  kind: BlockKind;
}

export type TakeResult = { ok: true } | { ok: false; retryAt: number };

export interface Usage {
  limit: number;
  used: number;
  remaining: number;
  windowMs?: number;
}

export type RateRule = Exclude<BudgetRule, { type: 'concurrency' }>;

/**
 * The counts behind every budget. Decisions that change counts (take, acquire) are async so a shared store
 * can make them atomically elsewhere; reads used for status and estimates are synchronous (a shared store
 * answers them from what its last atomic reply told it).
 */
export interface BudgetStore {
  /** Counts one call against a rate budget if it fits now; otherwise says when it would. */
  take(id: string, rule: RateRule, now: number): Promise<TakeResult>;
  /** Takes one of `limit` in-flight slots if one is free. */
  acquire(id: string, limit: number): Promise<boolean>;
  release(id: string): void;
  block(id: string, block: Block): void;
  /** The block on a budget that is still in force at `now`. */
  blocked(id: string, now: number): Block | undefined;
  usage(id: string, rule: BudgetRule, now: number): Usage;
  /** When the n-th of n more calls could start (an estimate for "try again in N s"). */
  nthFit(id: string, rule: RateRule, now: number, n: number): number;
  /** Nothing counted, held or blocked any more: the budget may be forgotten. */
  idle(id: string, rule: BudgetRule, now: number): boolean;
  forget(id: string): void;
  /** How often a waiter re-checks a slot that may have been freed by another instance; undefined: local only. */
  readonly pollMs: number | undefined;
  close(): Promise<void>;
}

interface Entry {
  /** Call start times, ascending (window rules). */
  ts: number[];
  /** Calls in the current clock hour (hourly and unlimited rules). */
  hour: number;
  hourCount: number;
  inUse: number;
  block: Block | undefined;
}

function longest(windows: readonly RateWindow[]): number {
  return windows.reduce((m, w) => Math.max(m, w.windowMs), 0);
}

/** One process's budgets, in memory. */
export class LocalBudgetStore implements BudgetStore {
  readonly pollMs = undefined;
  private readonly entries = new Map<string, Entry>();

  private entry(id: string): Entry {
    let e = this.entries.get(id);
    if (!e) {
      e = { ts: [], hour: 0, hourCount: 0, inUse: 0, block: undefined };
      this.entries.set(id, e);
    }
    return e;
  }

  private hourCount(e: Entry, now: number): number {
    const h = hourStart(now);
    if (e.hour !== h) {
      e.hour = h;
      e.hourCount = 0;
    }
    return e.hourCount;
  }

  take(id: string, rule: RateRule, now: number): Promise<TakeResult> {
    return Promise.resolve(this.takeNow(id, rule, now));
  }

  /** What a shared store's atomic reply said the clock hour `hour` has used, for status and estimates. */
  setHourCount(id: string, hour: number, used: number): void {
    const e = this.entry(id);
    e.hour = hour;
    e.hourCount = used;
  }

  takeNow(id: string, rule: RateRule, now: number): TakeResult {
    const e = this.entry(id);
    switch (rule.type) {
      case 'unlimited':
        this.hourCount(e, now);
        e.hourCount++;
        return { ok: true };
      case 'hourly':
        if (this.hourCount(e, now) >= rule.limit) return { ok: false, retryAt: nextHour(now) };
        e.hourCount++;
        return { ok: true };
      case 'windows': {
        prune(e.ts, longest(rule.windows), now);
        const at = nextFit(e.ts, rule.windows, now);
        if (at > now) return { ok: false, retryAt: at };
        // Keep ascending even if a caller's clock reading is a hair older than the last one.
        e.ts.push(Math.max(now, e.ts[e.ts.length - 1] ?? now));
        return { ok: true };
      }
    }
  }

  acquire(id: string, limit: number): Promise<boolean> {
    const e = this.entry(id);
    if (e.inUse >= limit) return Promise.resolve(false);
    e.inUse++;
    return Promise.resolve(true);
  }

  release(id: string): void {
    const e = this.entries.get(id);
    if (e && e.inUse > 0) e.inUse--;
  }

  block(id: string, block: Block): void {
    const e = this.entry(id);
    // A longer block wins; an hourly freeze is never shortened by a Retry-After.
    if (!e.block || e.block.until < block.until || (e.block.kind === 'retryAfter' && block.kind === 'hourly')) e.block = block;
  }

  blocked(id: string, now: number): Block | undefined {
    const e = this.entries.get(id);
    if (!e?.block) return undefined;
    if (e.block.until <= now) {
      e.block = undefined;
      return undefined;
    }
    return e.block;
  }

  usage(id: string, rule: BudgetRule, now: number): Usage {
    const e = this.entries.get(id);
    switch (rule.type) {
      case 'concurrency': {
        const used = e?.inUse ?? 0;
        return { limit: rule.limit, used, remaining: Math.max(0, rule.limit - used) };
      }
      case 'hourly': {
        const used = e ? this.hourCount(e, now) : 0;
        return { limit: rule.limit, used, remaining: Math.max(0, rule.limit - used) };
      }
      case 'unlimited': {
        const used = e ? this.hourCount(e, now) : 0;
        return { limit: Number.POSITIVE_INFINITY, used, remaining: Number.POSITIVE_INFINITY, windowMs: 3_600_000 };
      }
      case 'windows':
        return bindingWindow(e?.ts ?? [], rule.windows, now);
    }
  }

  nthFit(id: string, rule: RateRule, now: number, n: number): number {
    const e = this.entries.get(id);
    switch (rule.type) {
      case 'unlimited':
        return now;
      case 'hourly': {
        const used = e ? this.hourCount(e, now) : 0;
        return used + n <= rule.limit ? now : nextHour(now);
      }
      case 'windows':
        return nthFit(e?.ts ?? [], rule.windows, now, n);
    }
  }

  idle(id: string, rule: BudgetRule, now: number): boolean {
    const e = this.entries.get(id);
    if (!e) return true;
    if (e.inUse > 0 || this.blocked(id, now)) return false;
    if (rule.type === 'windows') {
      const last = e.ts.at(-1);
      return last === undefined || last <= now - longest(rule.windows);
    }
    return e.hourCount === 0 || e.hour !== hourStart(now);
  }

  forget(id: string): void {
    this.entries.delete(id);
  }

  close(): Promise<void> {
    this.entries.clear();
    return Promise.resolve();
  }
}
