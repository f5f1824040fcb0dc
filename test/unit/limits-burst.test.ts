// A burst of commands against BILL's 3 slots: once the limiter has timed some calls, a command that cannot get a slot
// within its wait is told "busy" at once (with an honest estimate) instead of after the whole wait.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LimitExceeded } from '../../src/errors.js';
import type { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { BILL, fakeTimeLimiter, HeldCall, runUntil, settle } from './limits-helpers.js';

let limiter: SharedLimiter;

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(async () => {
  await limiter.close();
  vi.useRealTimers();
});

/** Runs `n` calls of `ms` each, one after another, so the limiter learns how long calls take. */
async function teach(n: number, ms: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await Promise.all([
      limiter.run(BILL, { priority: 'background' }, () => new Promise((r) => setTimeout(r, ms))),
      vi.advanceTimersByTimeAsync(ms),
    ]);
  }
}

describe('a burst of commands on a busy organisation', () => {
  it('tells the commands that cannot start within 8 s "busy" at once, and keeps the ones that can', async () => {
    limiter = fakeTimeLimiter();
    await teach(12, 1_000);
    const holders = [new HeldCall(), new HeldCall(), new HeldCall()];
    const running = holders.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    const fn = vi.fn(async () => 'ok');
    const commands = Array.from({ length: 40 }, () => settle(limiter.run(BILL, { priority: 'interactive' }, fn)));
    await vi.advanceTimersByTimeAsync(0);

    // Calls take about a second and 3 run at once: 24 places fit in 8 s, the other 16 cannot.
    const refused = commands.filter((c) => c.done);
    expect(refused).toHaveLength(16);
    for (const c of refused) {
      expect(c.error).toBeInstanceOf(LimitExceeded);
      expect(c.error).toMatchObject({ budget: 'bill.concurrency', reason: 'busy' });
      expect((c.error as LimitExceeded).retryInMs).toBeGreaterThan(8_000);
    }
    expect(fn).not.toHaveBeenCalled();

    holders.forEach((h) => h.finish());
    await Promise.all(running);
    await runUntil(() => commands.every((c) => c.done));
    expect(commands.filter((c) => c.value === 'ok')).toHaveLength(24);
  });

  it('waits the whole wait before saying "busy" while it has not timed enough calls to estimate', async () => {
    limiter = fakeTimeLimiter();
    const holders = [new HeldCall(), new HeldCall(), new HeldCall()];
    const running = holders.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    const commands = Array.from({ length: 40 }, () => settle(limiter.run(BILL, { priority: 'interactive' }, async () => 'ok')));
    await vi.advanceTimersByTimeAsync(7_999);
    expect(commands.some((c) => c.done)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(commands.every((c) => c.done && (c.error as LimitExceeded).reason === 'busy')).toBe(true);
    holders.forEach((h) => h.finish());
    await Promise.all(running);
  });

  it('never refuses background work early: it has no deadline', async () => {
    limiter = fakeTimeLimiter();
    await teach(12, 1_000);
    const holders = [new HeldCall(), new HeldCall(), new HeldCall()];
    const running = holders.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    const work = Array.from({ length: 40 }, () => settle(limiter.run(BILL, { priority: 'background' }, async () => 'ok')));
    await vi.advanceTimersByTimeAsync(0);
    expect(work.some((w) => w.done)).toBe(false);
    holders.forEach((h) => h.finish());
    await Promise.all(running);
    await runUntil(() => work.every((w) => w.done));
    expect(work.every((w) => w.value === 'ok')).toBe(true);
  });
});
