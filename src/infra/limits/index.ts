// The factory every part uses to get the shared limiter (in-process budgets; cluster mode passes the Redis store).
import type { Clock } from '../clock.js';
import type { Config } from '../../config.js';
import type { Logger } from '../log.js';
import { SharedLimiter } from './limiter.js';
import { LocalBudgetStore } from './store.js';

export function createLimiter(deps: { config: Config; clock: Clock; log: Logger; store?: LocalBudgetStore }): SharedLimiter {
  return new SharedLimiter({ ...deps, store: deps.store ?? new LocalBudgetStore() });
}

export { SharedLimiter } from './limiter.js';

export { threadKey } from './budgets.js';
