// Per-person connect attempts: each signs in to BILL, so a person gets LINK_ATTEMPTS_PER_HOUR and waits LINK_COOLDOWN_S
// after a refused one (else 200 bogus submissions lock every organisation out of BILL for an hour). Memory or Redis.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { DependencyUnavailable } from '../../errors.js';
import type { Clock } from '../../infra/clock.js';
import { FixedWindows, limiterTake } from '../../infra/fixedWindows.js';

type LinkDecision = { allowed: true } | { allowed: false; retryInMs: number; why: 'cooldown' | 'hourly' };

const LIMITER = 'connect attempt limiter';

function unavailable(err: unknown): never {
  throw new DependencyUnavailable(LIMITER, err);
}

export interface LinkAttempts {
  /** Takes one attempt for the person (their session slot owner), or says how long until they may try again. */
  take(person: string): Promise<LinkDecision>;
  /** BILL refused the person's token: their next attempt waits for the cooldown. */
  refused(person: string): Promise<void>;
}

/** A fleet: both limits in Redis; `cooldown` (one point over LINK_COOLDOWN_S, blocked after a refusal) is undefined at 0 s. */
export function redisLinkAttempts(hourly: RateLimiterAbstract, cooldown: RateLimiterAbstract | undefined): LinkAttempts {
  return {
    async take(person) {
      const waiting = await cooldown?.get(person).catch(unavailable);
      if (waiting && waiting.consumedPoints > 0 && waiting.msBeforeNext > 0)
        return { allowed: false, retryInMs: Math.max(1_000, waiting.msBeforeNext), why: 'cooldown' };
      const d = await limiterTake(hourly, person, LIMITER);
      return d.allowed ? d : { allowed: false, retryInMs: Math.max(1_000, d.retryInMs), why: 'hourly' };
    },
    async refused(person) {
      await cooldown?.block(person, cooldown.duration).catch(unavailable);
    },
  };
}

/** One instance: both limits kept in this process, on the app's clock, with no timer per person (see fixedWindows.ts). */
export function memoryLinkAttempts(perHour: number, cooldownS: number, clock: Clock): LinkAttempts {
  const hourly = new FixedWindows(perHour, 3_600_000, clock);
  const cooldown = new FixedWindows(1, Math.max(1, cooldownS) * 1_000, clock);
  return {
    take(person) {
      const wait = cooldown.waitMs(person);
      if (wait > 0) return Promise.resolve({ allowed: false, retryInMs: Math.max(1_000, wait), why: 'cooldown' });
      const d = hourly.take(person);
      return Promise.resolve(d.allowed ? d : { allowed: false, retryInMs: Math.max(1_000, d.retryInMs), why: 'hourly' });
    },
    refused(person) {
      if (cooldownS > 0) cooldown.block(person, cooldownS * 1_000);
      return Promise.resolve();
    },
  };
}
