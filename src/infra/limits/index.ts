// The factory every part uses to get the shared limiter (in-process budgets; cluster mode swaps the store).
import type { Clock } from '../clock.js';
import type { Config } from '../../config.js';
import type { Logger } from '../log.js';
import { SharedLimiter, type LimiterTuning } from './limiter.js';
import { LocalBudgetStore, type BudgetStore } from './store.js';

export interface LimiterDeps {
  config: Config;
  clock: Clock;
  log: Logger;
  /** Where the counts live; default: this process's memory. */
  store?: BudgetStore;
  tuning?: Partial<LimiterTuning>;
}

export function createLimiter(deps: LimiterDeps): SharedLimiter {
  return new SharedLimiter({ ...deps, store: deps.store ?? new LocalBudgetStore() });
}

export { SharedLimiter, type LimiterTuning } from './limiter.js';

export { threadKey } from './budgets.js';
