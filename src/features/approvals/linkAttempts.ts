// Per-person connect attempts: each one signs in to BILL with a typed token, so a person gets LINK_ATTEMPTS_PER_HOUR
// of them and, after BILL refused one, waits LINK_COOLDOWN_S. In memory for one instance, in Redis for a fleet.
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { DependencyUnavailable } from '../../errors.js';

export type LinkDecision = { allowed: true } | { allowed: false; retryInMs: number; why: 'cooldown' | 'hourly' };

export interface LinkAttemptLimiters {
  /** LINK_ATTEMPTS_PER_HOUR points per person, over 3,600 s. */
  hourly: RateLimiterAbstract;
  /** One point per person, blocked for LINK_COOLDOWN_S after a refusal; undefined when the cooldown is 0. */
  cooldown: RateLimiterAbstract | undefined;
  cooldownS: number;
}

/**
 * Why this exists: a refused sign-in used to cost nothing but BILL's shared budget (the refused session slot is
 * released, so the per-slot credential back-off never applied), and 200 bogus submissions locked every organisation
 * out of BILL for an hour.
 */
export class LinkAttempts {
  constructor(private readonly limiters: LinkAttemptLimiters) {}

  /** Takes one attempt for the person (tenant|object id), or says how long until they may try again. */
  async take(person: string): Promise<LinkDecision> {
    const { hourly, cooldown } = this.limiters;
    try {
      const waiting = cooldown ? await cooldown.get(person) : null;
      if (waiting && waiting.consumedPoints > 0 && waiting.msBeforeNext > 0)
        return { allowed: false, retryInMs: Math.max(1_000, waiting.msBeforeNext), why: 'cooldown' };
      await hourly.consume(person, 1);
      return { allowed: true };
    } catch (err) {
      if (err instanceof RateLimiterRes) return { allowed: false, retryInMs: Math.max(1_000, err.msBeforeNext), why: 'hourly' };
      throw new DependencyUnavailable('connect attempt limiter', err);
    }
  }

  /** BILL refused the person's token: their next attempt waits for the cooldown. */
  async refused(person: string): Promise<void> {
    const { cooldown, cooldownS } = this.limiters;
    if (!cooldown) return;
    try {
      await cooldown.block(person, cooldownS);
    } catch (err) {
      throw new DependencyUnavailable('connect attempt limiter', err);
    }
  }
}

/** One instance: both limits kept in this process. */
export function memoryLinkAttempts(perHour: number, cooldownS: number): LinkAttempts {
  return new LinkAttempts({
    hourly: new RateLimiterMemory({ points: perHour, duration: 3_600, keyPrefix: 'link-attempts' }),
    cooldown: cooldownS > 0 ? new RateLimiterMemory({ points: 1, duration: cooldownS, keyPrefix: 'link-cooldown' }) : undefined,
    cooldownS,
  });
}

/** The key a person's attempts count against: their Entra object id within their tenant. */
export function linkAttemptKey(tenantId: string, aadObjectId: string): string {
  return `${tenantId.trim().toLowerCase()}|${aadObjectId.trim().toLowerCase()}`;
}
