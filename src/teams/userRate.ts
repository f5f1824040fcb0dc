// Per-person command rate limit (USER_COMMANDS_PER_MINUTE), so one member cannot spend the organisation's BILL budget.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Clock } from '../infra/clock.js';
import { FixedWindows, limiterTake, type WindowDecision } from '../infra/fixedWindows.js';
import type { Caller, ConversationScope } from '../features/types.js';

/** Takes one turn (a command or a card click) for a person; in-memory for one instance, Redis-backed in cluster mode. */
export interface UserCommandRate {
  take(key: string): Promise<WindowDecision>;
}

/** A fleet: a rate-limiter-flexible limiter (RateLimiterRedis); Redis down refuses the turn, never lets it through. */
export function limiterUserCommandRate(limiter: RateLimiterAbstract): UserCommandRate {
  return { take: (key) => limiterTake(limiter, key, 'user command rate limiter') };
}

/** One instance: `perMinute` commands per person in a 60 s window that starts at their first (on the app's clock). */
export function memoryUserCommandRate(perMinute: number, clock: Clock): UserCommandRate {
  const windows = new FixedWindows(perMinute, 60_000, clock);
  return { take: (key) => Promise.resolve(windows.take(key)) };
}

/** The person a command counts against: their Entra object id, else their Bot Framework id, within their tenant. */
export function userRateKey(req: { scope: ConversationScope; caller: Caller }): string {
  // Lower-cased whole, so the key is one flat string rather than a concatenation of two ids: ~80 bytes less per person
  // held in the window (1 MB of the memory bench's live heap, which V8 lets grow about 4x before collecting).
  return `${req.scope.tenantId ?? ''}:${req.caller.aadObjectId || req.caller.id || 'anonymous'}`.toLowerCase();
}
