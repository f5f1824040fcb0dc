// Per-person connect attempts: each one signs in to BILL with a typed token, so a person gets LINK_ATTEMPTS_PER_HOUR
// of them and, after BILL refused one, waits LINK_COOLDOWN_S. In memory for one instance, in Redis for a fleet.
// Why: a refused sign-in used to cost nothing but BILL's shared budget (the refused session slot is released, so the
// per-slot credential back-off never applied), and 200 bogus submissions locked every organisation out of BILL for an hour.
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

/**
 * A fleet: both limits in Redis, through rate-limiter-flexible. `hourly`: LINK_ATTEMPTS_PER_HOUR points per person
 * over 3,600 s. `cooldown`: one point per person over LINK_COOLDOWN_S, blocked that long after a refusal; undefined
 * when the cooldown is 0.
 */
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
