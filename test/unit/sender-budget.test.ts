// The bytes unauthenticated senders may make the bot read run on the app's clock: a fake clock refills them and
// ends a verified sender's pass, as real time does.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { senderBudget } from '../../src/http/senderBudget.js';

const KB = 1024;

describe('the unauthenticated senders budget', () => {
  it('refills as the app clock moves, not the system clock', () => {
    const clock = new ManualClock(1_000_000);
    const budget = senderBudget(clock);
    expect(budget.reserve('203.0.113.7', 512 * KB, 512 * KB)).toMatchObject({ bytes: 512 * KB });
    expect(budget.reserve('203.0.113.7', 64 * KB, 512 * KB)).toEqual({ retryAfterS: 1 });
    clock.advance(1_000); // 64 KB a second come back
    expect(budget.reserve('203.0.113.7', 64 * KB, 512 * KB)).toMatchObject({ bytes: 64 * KB });
  });

  it("a verified sender's pass past the shared bucket ends after a day of the app clock", () => {
    const clock = new ManualClock(1_000_000);
    const budget = senderBudget(clock);
    const first = budget.reserve('198.51.100.1', 4 * KB, 512 * KB);
    if (!('source' in first)) throw new Error('refused');
    budget.verifiedSender(first);
    expect(budget.reserve('198.51.100.1', 4 * KB, 512 * KB)).toMatchObject({ global: false });
    clock.advance(24 * 3_600_000);
    expect(budget.reserve('198.51.100.1', 4 * KB, 512 * KB)).toMatchObject({ global: true });
  });
});
