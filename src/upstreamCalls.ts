// Counts the upstream calls each turn makes (per service) for the audit trail, carried by AsyncLocalStorage.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Limiter, Upstream } from './limits/types.js';

export type UpstreamService = Upstream['service'];
export type UpstreamCounts = Partial<Record<UpstreamService, number>>;

/**
 * One scope per turn (the adapter runs each authenticated turn in `run`); the limiter wrapper counts every call
 * that actually starts into the scope that asked for it. Calls outside any scope (background work) are not
 * counted. The scope is captured when the call is queued, so a limiter that starts the call from another
 * async context (a queue draining) still counts it for the right turn.
 */
export class UpstreamCallCounter {
  private readonly als = new AsyncLocalStorage<Map<UpstreamService, number>>();

  run<T>(fn: () => Promise<T>): Promise<T> {
    return this.als.run(new Map(), fn);
  }

  /** Calls counted so far in the current scope; undefined outside one. */
  current(): UpstreamCounts | undefined {
    const store = this.als.getStore();
    return store ? Object.fromEntries(store) : undefined;
  }

  /** The same limiter, counting each call that starts (refused or timed-out calls were never made). */
  counting(limiter: Limiter): Limiter {
    const als = this.als;
    const run: Limiter['run'] = (upstream, opts, fn) => {
      const store = als.getStore();
      return limiter.run(upstream, opts, () => {
        if (store) store.set(upstream.service, (store.get(upstream.service) ?? 0) + 1);
        return fn();
      });
    };
    return new Proxy(limiter, {
      get(target, prop, receiver) {
        if (prop === 'run') return run;
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }
}

/** Calls to BILL, Spend & Expense, Graph and token endpoints; bot connector sends are transport, not work. */
export function upstreamTotal(counts: UpstreamCounts | undefined): number {
  if (!counts) return 0;
  return Object.entries(counts).reduce((sum, [service, n]) => (service === 'connector' ? sum : sum + (n ?? 0)), 0);
}
