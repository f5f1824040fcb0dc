// Per-person command rate limit (USER_COMMANDS_PER_MINUTE), so one member cannot spend the organisation's BILL budget.
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { DependencyUnavailable } from '../errors.js';
import type { Caller, ConversationScope } from '../features/types.js';

export type RateDecision = { allowed: true } | { allowed: false; retryInMs: number };

/** Takes one turn (a command or a card click) for a person; in-memory for one instance, Redis-backed in cluster mode. */
export interface UserCommandRate {
  take(key: string): Promise<RateDecision>;
}

/**
 * Any rate-limiter-flexible limiter (RateLimiterMemory, RateLimiterRedis...) as a UserCommandRate: a refusal
 * comes back as the time to wait; a store failure (Redis down) as DependencyUnavailable, never as "allowed".
 */
export class RateLimiterUserCommandRate implements UserCommandRate {
  constructor(private readonly limiter: RateLimiterAbstract) {}

  async take(key: string): Promise<RateDecision> {
    try {
      await this.limiter.consume(key, 1);
      return { allowed: true };
    } catch (err) {
      if (err instanceof RateLimiterRes) return { allowed: false, retryInMs: Math.max(1, err.msBeforeNext) };
      throw new DependencyUnavailable('user command rate limiter', err);
    }
  }
}

/** One instance: `perMinute` commands per person in any rolling 60 s window's fixed bucket. */
export function memoryUserCommandRate(perMinute: number): UserCommandRate {
  return new RateLimiterUserCommandRate(new RateLimiterMemory({ points: perMinute, duration: 60, keyPrefix: 'user-commands' }));
}

/** The person a command counts against: their Entra object id, else their Bot Framework id, within their tenant. */
export function userRateKey(req: { scope: ConversationScope; caller: Caller }): string {
  const who = (req.caller.aadObjectId || req.caller.id || 'anonymous').toLowerCase();
  return `${(req.scope.tenantId ?? '').toLowerCase()}:${who}`;
}
