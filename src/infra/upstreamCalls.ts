// Counts the upstream calls each turn makes (per service) for the audit trail, carried through its awaits
// (asyncContext.ts), and keeps a person's turn within the time Teams waits for it.
import { ContextSlot } from './asyncContext.js';
import type { Clock } from './clock.js';
import type { Upstream } from './limits/types.js';

export type UpstreamCounts = Partial<Record<Upstream['service'], number>>;

/** No upstream work of a person's turn starts, or runs on, later than this after it began: Teams waits 15 s, the answer needs the last. */
export const TURN_DEADLINE_MS = 14_000;

/** A turn's counts, and when its upstream calls must have started and ended by (ms since epoch). */
interface TurnScope {
  counts: UpstreamCounts;
  deadline: number;
}

/**
 * One scope per turn (the adapter runs each authenticated turn in `run`): the limiter counts each call that starts into
 * the scope that asked for it and holds a person's calls to its deadline. Background work runs in none.
 */
export class UpstreamCallCounter {
  private readonly turns = new ContextSlot<TurnScope>('turn scope');

  constructor(private readonly clock: Clock) {}

  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.turns.run({ counts: {}, deadline: this.clock.now() + TURN_DEADLINE_MS }, fn);
  }

  /** The turn running now: the limiter counts into it, the audit copies its counts. */
  scope(): TurnScope | undefined {
    return this.turns.getStore();
  }
}

/** Calls to BILL, Spend & Expense, Graph and token endpoints; bot connector sends are transport, not work. */
export function upstreamTotal(counts: UpstreamCounts | undefined): number {
  return Object.entries(counts ?? {}).reduce((sum, [service, n]) => (service === 'connector' ? sum : sum + n), 0);
}
