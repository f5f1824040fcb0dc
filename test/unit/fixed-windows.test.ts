// Per-person windows in one instance: their counting, and that they keep no timer (a timer made in a turn holds the
// turn's async context, and with it the turn's upstream tally, until it fires).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FixedWindows } from '../../src/infra/fixedWindows.js';
import { ManualClock, systemClock } from '../../src/infra/clock.js';
import { memoryUserCommandRate } from '../../src/teams/userRate.js';
import { memoryLinkAttempts } from '../../src/features/approvals/linkAttempts.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('FixedWindows', () => {
  it('allows the limit in a window that starts at the first take, then says how long until it ends', () => {
    const clock = new ManualClock(1_000_000);
    const w = new FixedWindows(2, 60_000, clock);
    expect(w.take('a')).toEqual({ allowed: true });
    clock.advance(10_000);
    expect(w.take('a')).toEqual({ allowed: true });
    expect(w.take('a')).toEqual({ allowed: false, retryInMs: 50_000 });
    expect(w.take('b')).toEqual({ allowed: true });
    clock.advance(50_000);
    expect(w.take('a')).toEqual({ allowed: true });
  });

  it('blocks a key for a while whatever it used, and forgets ended windows', () => {
    const clock = new ManualClock(0);
    const w = new FixedWindows(3, 1_000, clock);
    w.block('p', 5_000);
    expect(w.waitMs('p')).toBe(5_000);
    expect(w.take('p')).toEqual({ allowed: false, retryInMs: 5_000 });
    expect(w.waitMs('q')).toBe(0);
    for (let i = 0; i < 100; i++) w.take(`k${i}`);
    expect(w.size).toBe(101);
    clock.advance(5_000);
    w.take('z');
    expect(w.size).toBe(1);
  });
});

describe('the in-memory person limits', () => {
  it('keep no timer per person', async () => {
    vi.useFakeTimers();
    const rate = memoryUserCommandRate(5, systemClock);
    const links = memoryLinkAttempts(3, 60, systemClock);
    for (let i = 0; i < 50; i++) {
      expect(await rate.take(`t:person-${i}`)).toEqual({ allowed: true });
      expect(await links.take(`t|person-${i}`)).toEqual({ allowed: true });
      await links.refused(`t|person-${i}`);
    }
    expect(vi.getTimerCount()).toBe(0);
    expect((await links.take('t|person-1')).allowed).toBe(false);
  });

  it("run on the app's clock: a fake clock moving past the cooldown and the hour lets a person try again", async () => {
    const clock = new ManualClock(5_000_000);
    const links = memoryLinkAttempts(2, 60, clock);
    expect(await links.take('t|dana')).toEqual({ allowed: true });
    await links.refused('t|dana');
    expect(await links.take('t|dana')).toEqual({ allowed: false, retryInMs: 60_000, why: 'cooldown' });
    clock.advance(60_000);
    expect(await links.take('t|dana')).toEqual({ allowed: true });
    expect(await links.take('t|dana')).toEqual({ allowed: false, retryInMs: 3_600_000 - 60_000, why: 'hourly' });
    clock.advance(3_600_000 - 60_000);
    expect(await links.take('t|dana')).toEqual({ allowed: true });

    const rate = memoryUserCommandRate(1, clock);
    expect(await rate.take('t:dana')).toEqual({ allowed: true });
    expect(await rate.take('t:dana')).toEqual({ allowed: false, retryInMs: 60_000 });
    clock.advance(60_000);
    expect(await rate.take('t:dana')).toEqual({ allowed: true });
  });
});
