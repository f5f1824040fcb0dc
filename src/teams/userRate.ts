// Per-person command rate limit (USER_COMMANDS_PER_MINUTE), so one member cannot spend the organisation's BILL budget.
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { DependencyUnavailable } from '../errors.js';
import { FixedWindows, type WindowDecision } from '../infra/fixedWindows.js';
import type { Caller, ConversationScope } from '../features/types.js';

/** Takes one turn (a command or a card click) for a person; in-memory for one instance, Redis-backed in cluster mode. */
export interface UserCommandRate {
  take(key: string): Promise<WindowDecision>;
}

/**
 * A rate-limiter-flexible limiter (RateLimiterRedis, for a fleet) as a UserCommandRate: a refusal
 * comes back as the time to wait; a store failure (Redis down) as DependencyUnavailable, never as "allowed".
 */
export function limiterUserCommandRate(limiter: RateLimiterAbstract): UserCommandRate {
  return {
    take: async (key) => {
      try {
        await limiter.consume(key, 1);
        return { allowed: true };
      } catch (err) {
        // It rejects with an Error when Redis fails and with its RateLimiterRes when the points are spent (its README);
        // told apart without loading the package, which one instance never needs.
        if (err instanceof Error) throw new DependencyUnavailable('user command rate limiter', err);
        return { allowed: false, retryInMs: Math.max(1, (err as RateLimiterRes).msBeforeNext) };
      }
    },
  };
}

/** One instance: `perMinute` commands per person in a 60 s window that starts at their first. */
export function memoryUserCommandRate(perMinute: number): UserCommandRate {
  const windows = new FixedWindows(perMinute, 60_000);
  return { take: (key) => Promise.resolve(windows.take(key)) };
}

/** The person a command counts against: their Entra object id, else their Bot Framework id, within their tenant. */
export function userRateKey(req: { scope: ConversationScope; caller: Caller }): string {
  const who = (req.caller.aadObjectId || req.caller.id || 'anonymous').toLowerCase();
  return `${(req.scope.tenantId ?? '').toLowerCase()}:${who}`;
}
