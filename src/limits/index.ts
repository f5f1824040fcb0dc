// PLACEHOLDER until issue 4 lands: the factory every part uses to get the shared limiter.
// It enforces nothing yet; src/limits/ replaces the body behind this same signature.
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { BudgetSnapshot, Limiter, RunOptions, Throttle, Upstream } from './types.js';

export interface LimiterDeps {
  config: Config;
  clock: Clock;
  log: Logger;
}

export function createLimiter(_deps: LimiterDeps): Limiter {
  return {
    run<T>(_upstream: Upstream, _opts: RunOptions, fn: () => Promise<T>): Promise<T> {
      return fn();
    },
    throttled(_upstream: Upstream, _throttle: Throttle): void {},
    snapshot(): BudgetSnapshot[] {
      return [];
    },
    blockedUntil(): number | undefined {
      return undefined;
    },
    async close(): Promise<void> {},
  };
}
