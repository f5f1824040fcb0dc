// Counts the upstream calls each turn makes (per service) for the audit trail, carried through its awaits
// (asyncContext.ts), and keeps a person's turn within the time Teams waits for it.
import { ContextSlot } from './asyncContext.js';
import type { Clock } from './clock.js';
import type { Limiter, Upstream } from './limits/types.js';

export type UpstreamCounts = Partial<Record<Upstream['service'], number>>;

/** No upstream work of a person's turn starts later than this after it began: Teams waits 15 s, the answer needs the last. */
export const TURN_DEADLINE_MS = 14_000;

interface TurnScope {
  counts: UpstreamCounts;
  /** When the turn's upstream calls must have started by (ms since epoch). */
  deadline: number;
}

/**
 * One scope per turn (the adapter runs each authenticated turn in `run`); the limiter wrapper counts every call
 * that actually starts into the scope that asked for it. Calls outside any scope (background work) are not
 * counted. The scope is captured when the call is queued, so a limiter that starts the call from another
 * async context (a queue draining) still counts it for the right turn.
 */
export class UpstreamCallCounter {
  private readonly turns = new ContextSlot<TurnScope>('turn scope');

  /**
   * A person's call (interactive, other than the Bot Connector sends that carry the answer) waits at most until the
   * turn's deadline: a command that makes several calls in a row (pages, then names) says "busy" in time instead of
   * answering after Teams has given up on the turn. `commandWaitMs`: the wait a person's call gets by default.
   */
  constructor(private readonly deadline: { clock: Clock; commandWaitMs: number }) {}

  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.turns.run({ counts: {}, deadline: this.deadline.clock.now() + TURN_DEADLINE_MS }, fn);
  }

  current(): UpstreamCounts | undefined {
    const scope = this.turns.getStore();
    return scope && { ...scope.counts };
  }

  /** The same limiter, counting each call that starts (refused or timed-out calls were never made). */
  counting(limiter: Limiter): Limiter {
    const run: Limiter['run'] = (upstream, opts, fn) => {
      const scope = this.turns.getStore();
      let runOpts = opts;
      if (scope && opts.priority === 'interactive' && upstream.service !== 'connector') {
        const left = Math.max(0, scope.deadline - this.deadline.clock.now());
        runOpts = { ...opts, maxWaitMs: Math.min(opts.maxWaitMs ?? this.deadline.commandWaitMs, left) };
      }
      return limiter.run(upstream, runOpts, () => {
        if (scope) scope.counts[upstream.service] = (scope.counts[upstream.service] ?? 0) + 1;
        return fn();
      });
    };
    return {
      run,
      throttled: (upstream, throttle) => limiter.throttled(upstream, throttle),
      snapshot: () => limiter.snapshot(),
      blockedUntil: (upstream) => limiter.blockedUntil(upstream),
      activeGrant: () => limiter.activeGrant?.(),
      close: () => limiter.close(),
    };
  }
}

/** Calls to BILL, Spend & Expense, Graph and token endpoints; bot connector sends are transport, not work. */
export function upstreamTotal(counts: UpstreamCounts | undefined): number {
  if (!counts) return 0;
  return Object.entries(counts).reduce((sum, [service, n]) => (service === 'connector' ? sum : sum + n), 0);
}
