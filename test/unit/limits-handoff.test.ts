// BILL's 3 slots per org stay busy: a freed slot goes to the next waiting call in the same turn of the event loop, not timers later.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { BILL, fakeTimeLimiter, HeldCall } from './limits-helpers.js';

let limiter: SharedLimiter;
// Captured before timers are faked: one real turn of the event loop, after every promise continuation queued so far.
const realSetImmediate = setImmediate;
const eventLoopTurn = () => new Promise<void>((resolve) => realSetImmediate(resolve));

beforeEach(() => {
  // No timer fires unless the test advances fake time, so whatever starts here started without one.
  vi.useFakeTimers();
});

afterEach(async () => {
  await limiter.close();
  vi.useRealTimers();
});

const startedCount = (calls: HeldCall[]) => calls.filter((c) => c.started !== undefined).length;

describe('handing freed slots to waiting calls', () => {
  it('starts a queued call for every slot freed, before any timer fires, in priority order', async () => {
    limiter = fakeTimeLimiter();
    const holders = [new HeldCall(), new HeldCall(), new HeldCall()];
    const running = holders.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    const background = Array.from({ length: 5 }, () => new HeldCall());
    const waiting = background.map((c) => limiter.run(BILL, { priority: 'background', maxWaitMs: 60_000 }, c.fn));
    const person = new HeldCall();
    const personCall = limiter.run(BILL, { priority: 'interactive', maxWaitMs: 60_000 }, person.fn);
    // Let the waiting room settle however it needs to before any slot is freed.
    await vi.advanceTimersByTimeAsync(100);
    expect(startedCount(background) + startedCount([person])).toBe(0);

    // All three slots freed at once: three waiting calls start, the person among them.
    holders.forEach((h) => h.finish());
    await eventLoopTurn();
    expect(startedCount([person, ...background])).toBe(3);
    expect(person.started).toBeDefined();

    // Slots freed one at a time, each in a later turn: each goes to the next call in line at once.
    for (const [i, call] of [person, ...background.slice(0, 3)].entries()) {
      call.finish();
      await eventLoopTurn();
      expect(startedCount(background)).toBe(Math.min(5, 3 + i));
    }
    expect(limiter.snapshot().find((r) => r.budget === 'bill.concurrency')).toMatchObject({ queued: 0, running: 2 });
    background.forEach((c) => c.finish());
    await Promise.all([...running, ...waiting, personCall]);
  });

  it('does not lose a slot freed while the waiting call at the head is asking for one, whatever the moment', async () => {
    // The second slot is freed 0, 1, 2, ... promise continuations after the first: some of those land while the head is
    // between asking the store and going to sleep.
    for (let continuations = 0; continuations < 10; continuations++) {
      limiter = fakeTimeLimiter();
      const holders = [new HeldCall(), new HeldCall(), new HeldCall()];
      const running = holders.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
      const queued = Array.from({ length: 5 }, () => new HeldCall());
      const waiting = queued.map((c) => limiter.run(BILL, { priority: 'background' }, c.fn));
      await vi.advanceTimersByTimeAsync(100);
      holders[0]?.finish();
      for (let i = 0; i < continuations; i++) await Promise.resolve();
      holders[1]?.finish();
      await eventLoopTurn();
      expect({ continuations, started: startedCount(queued) }).toEqual({ continuations, started: 2 });
      holders[2]?.finish();
      queued.forEach((c) => c.finish());
      await Promise.all([...running, ...waiting]);
      await limiter.close();
    }
  });
});
