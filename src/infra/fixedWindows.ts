// Per-key fixed-window counters in this process (a person's commands a minute, connect attempts an hour), with no
// timer per key (rate-limiter-flexible's memory store sets one): a timer made during a turn holds that turn's async
// context until it fires, which at 8,000 people a minute was 9 MB of the 63 MB live heap (the memory bench's heap
// snapshot). Expired windows are swept instead. A fleet's limits live in Redis (rate-limiter-flexible): limiterTake
// answers for them in the same shape.
import type { RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { DependencyUnavailable } from '../errors.js';
import type { Clock } from './clock.js';

export type WindowDecision = { allowed: true } | { allowed: false; retryInMs: number };

/**
 * Takes one point from a rate-limiter-flexible limiter: it rejects with an Error when Redis fails (DependencyUnavailable,
 * never "allowed") and with a RateLimiterRes when the points are spent, told apart without loading the package.
 */
export async function limiterTake(limiter: RateLimiterAbstract, key: string, dependency: string): Promise<WindowDecision> {
  try {
    await limiter.consume(key, 1);
    return { allowed: true };
  } catch (err) {
    if (err instanceof Error) throw new DependencyUnavailable(dependency, err);
    return { allowed: false, retryInMs: Math.max(1, (err as RateLimiterRes).msBeforeNext) };
  }
}

export class FixedWindows {
  private readonly windows = new Map<string, { used: number; endsAt: number }>();
  private nextSweep = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
  ) {}

  /** Takes one from the key's window (which starts at its first take), or says how long until the window ends. */
  take(key: string): WindowDecision {
    const now = this.clock.now();
    this.sweep(now);
    let w = this.windows.get(key);
    if (!w || w.endsAt <= now) {
      w = { used: 0, endsAt: now + this.windowMs };
      this.windows.set(key, w);
    }
    if (w.used >= this.limit) return { allowed: false, retryInMs: w.endsAt - now };
    w.used++;
    return { allowed: true };
  }

  /** Refuses the key for `ms` from now, whatever it has used. */
  block(key: string, ms: number): void {
    this.windows.set(key, { used: this.limit, endsAt: this.clock.now() + ms });
  }

  waitMs(key: string): number {
    const now = this.clock.now();
    const w = this.windows.get(key);
    return w && w.used >= this.limit && w.endsAt > now ? w.endsAt - now : 0;
  }

  /** Drops ended windows, at most once a window length, so the map holds only the keys seen in the last window. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + this.windowMs;
    for (const [key, w] of this.windows) if (w.endsAt <= now) this.windows.delete(key);
  }

  get size(): number {
    return this.windows.size;
  }
}
