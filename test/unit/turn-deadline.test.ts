// A person's turn stays within the 15 s Teams waits for it: a command whose first BILL call waited long does not get
// a second full wait for its next call; it answers "busy" at the turn's deadline. Connector sends are not cut short.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { LimitExceeded } from '../../src/errors.js';
import type { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { TURN_DEADLINE_MS, UpstreamCallCounter } from '../../src/infra/upstreamCalls.js';
import { BILL, fakeTimeLimiter, HeldCall, runUntil, settle } from './limits-helpers.js';

let limiter: SharedLimiter;
let counter: UpstreamCallCounter;

beforeEach(() => {
  vi.useFakeTimers();
  counter = new UpstreamCallCounter(systemClock);
  limiter = fakeTimeLimiter({ COMMAND_WAIT_MS: '8000' }, counter);
});

afterEach(async () => {
  await limiter.close();
  vi.useRealTimers();
});

const ok = async () => 'ok';

describe('a command making two BILL calls while the organisation is busy', () => {
  it('is told "busy" at the turn deadline, not after a second full wait', async () => {
    const start = Date.now();
    // BILL's 3 slots are taken for 7 s; 3 more background calls wait behind the person and then keep the slots.
    const first = [new HeldCall(), new HeldCall(), new HeldCall()];
    const firstRunning = first.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    const turn = settle(
      counter.run(async () => {
        await limiter.run(BILL, { priority: 'interactive' }, () => new Promise((r) => setTimeout(r, 1_000)));
        return limiter.run(BILL, { priority: 'interactive' }, ok);
      }),
    );
    await vi.advanceTimersByTimeAsync(10);
    const then = [new HeldCall(), new HeldCall(), new HeldCall()];
    const thenRunning = then.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    await vi.advanceTimersByTimeAsync(7_000 - 10);
    first.forEach((h) => h.finish());
    await runUntil(() => turn.done);

    // First call: 7 s waiting + 1 s running. Second call: 6 s left of the turn's 14, not another 8.
    expect(Date.now() - start).toBe(TURN_DEADLINE_MS);
    expect(turn.error).toBeInstanceOf(LimitExceeded);
    expect(turn.error).toMatchObject({ budget: 'bill.concurrency', reason: 'busy' });
    expect(counter.scope()).toBeUndefined();

    then.forEach((h) => h.finish());
    await Promise.all([...firstRunning, ...thenRunning]);
  });

  it('keeps the usual wait for the first call, and the whole wait outside a turn', async () => {
    const holders = [new HeldCall(), new HeldCall(), new HeldCall()];
    const running = holders.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    const start = Date.now();
    const inTurn = settle(counter.run(() => limiter.run(BILL, { priority: 'interactive' }, ok)));
    const outside = settle(limiter.run(BILL, { priority: 'interactive' }, ok));
    await runUntil(() => inTurn.done && outside.done);
    expect(Date.now() - start).toBe(8_000);
    expect((inTurn.error as LimitExceeded).reason).toBe('busy');
    expect((outside.error as LimitExceeded).reason).toBe('busy');
    holders.forEach((h) => h.finish());
    await Promise.all(running);
  });

  it('a command whose first BILL call answered after the turn deadline starts no further call, though slots are free', async () => {
    let secondStarted = false;
    const turn = settle(
      counter.run(async () => {
        // BILL is slow, not busy: the one call takes the whole turn and more, and every slot is free afterwards.
        await limiter.run(BILL, { priority: 'interactive' }, () => new Promise((r) => setTimeout(r, TURN_DEADLINE_MS + 500)));
        return limiter.run(BILL, { priority: 'interactive' }, async () => {
          secondStarted = true;
          return 'ok';
        });
      }),
    );
    await runUntil(() => turn.done);
    expect(secondStarted).toBe(false);
    expect(turn.error).toBeInstanceOf(LimitExceeded);
    expect(turn.error).toMatchObject({ budget: 'bill.concurrency', reason: 'busy' });
  });

  it('never cuts short a Bot Connector send: a late answer beats none', async () => {
    const thread = { service: 'connector', conversationId: '19:finance@thread.tacv2' } as const;
    const sent = settle(
      counter.run(async () => {
        await new Promise((r) => setTimeout(r, TURN_DEADLINE_MS + 1_000));
        // Past the deadline, 9 sends to one channel: Teams allows 7 a second, so the last ones must wait for it.
        return Promise.all(Array.from({ length: 9 }, () => limiter.run(thread, { priority: 'interactive', maxWaitMs: 60_000 }, ok)));
      }),
    );
    await runUntil(() => sent.done);
    expect(sent.error).toBeUndefined();
    expect(sent.value).toEqual(Array(9).fill('ok'));
  });
});
