// BILL budgets with a fake clock: the hourly reservoir, logins, 3 in flight per org, priorities, bounded waits, BDC_1322/1144.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LimitExceeded } from '../../src/errors.js';
import type { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { BILL, DEV_KEY, HeldCall, LOGIN, ORG, fakeTimeLimiter, runUntil, settle } from './limits-helpers.js';

let limiter: SharedLimiter;

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2025-03-03T10:59:00.000Z') });
});
afterEach(async () => {
  await limiter.close();
  vi.useRealTimers();
});

const ok = async () => 'ok';

describe('bill.requests: a reservoir refilled at the top of each clock hour', () => {
  it('refuses the 11th call of the hour without calling BILL, saying when it resets, and grants again at 11:00', async () => {
    limiter = fakeTimeLimiter({ LIMIT_BILL_REQUESTS_PER_HOUR: '10' });
    for (let i = 0; i < 10; i++) await limiter.run(BILL, { priority: 'interactive' }, ok);
    const upstream = vi.fn(ok);
    const err = await limiter.run(BILL, { priority: 'interactive' }, upstream).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LimitExceeded);
    expect(err).toMatchObject({ budget: 'bill.requests', reason: 'hourly', retryInMs: 60_000 });
    expect(upstream).not.toHaveBeenCalled();
    // Background work is refused just the same: waiting an hour helps nobody.
    await expect(limiter.run(BILL, { priority: 'background' }, upstream)).rejects.toMatchObject({ reason: 'hourly' });
    expect(limiter.blockedUntil(BILL)).toBe(Date.parse('2025-03-03T11:00:00Z'));

    await vi.advanceTimersByTimeAsync(60_000);
    await expect(limiter.run(BILL, { priority: 'interactive' }, upstream)).resolves.toBe('ok');
    expect(upstream).toHaveBeenCalledTimes(1);
    const row = limiter.snapshot().find((r) => r.budget === 'bill.requests')!;
    expect(row).toMatchObject({ limit: 10, used: 1, remaining: 9 });
  });

  it('counts only calls that really went: a call refused while waiting for a slot does not use the hour', async () => {
    limiter = fakeTimeLimiter({ LIMIT_BILL_REQUESTS_PER_HOUR: '5', LIMIT_BILL_CONCURRENCY: '1' });
    const holder = new HeldCall();
    const first = limiter.run(BILL, { priority: 'background' }, holder.fn);
    const late = settle(limiter.run(BILL, { priority: 'interactive', maxWaitMs: 1_000 }, ok));
    await runUntil(() => late.done);
    expect(late.error).toMatchObject({ reason: 'busy' });
    holder.finish();
    await first;
    expect(limiter.snapshot().find((r) => r.budget === 'bill.requests')).toMatchObject({ used: 1, remaining: 4 });
  });
});

describe('bill.logins: 200 per hour per dev key', () => {
  it('fails the 201st login fast with the time until the oldest one leaves the hour', async () => {
    limiter = fakeTimeLimiter();
    for (let i = 0; i < 200; i++) {
      await limiter.run(LOGIN, { priority: 'background' }, ok);
      await vi.advanceTimersByTimeAsync(1_000);
    }
    const login = vi.fn(ok);
    await expect(limiter.run(LOGIN, { priority: 'background' }, login)).rejects.toMatchObject({
      budget: 'bill.logins',
      reason: 'logins',
      retryInMs: 3_600_000 - 200_000,
    });
    expect(login).not.toHaveBeenCalled();
    // Ordinary calls with the same dev key are not logins and still go.
    await expect(limiter.run(BILL, { priority: 'interactive' }, ok)).resolves.toBe('ok');
    await vi.advanceTimersByTimeAsync(3_600_000 - 200_000);
    await expect(limiter.run(LOGIN, { priority: 'background' }, login)).resolves.toBe('ok');
  });
});

describe('bill.concurrency: 3 in flight per dev key and org', () => {
  it('never has more than 3 calls in flight when 100 run at once, and finishes them all', async () => {
    limiter = fakeTimeLimiter();
    let inFlight = 0;
    let max = 0;
    let finished = 0;
    const call = (ms: number) => async () => {
      inFlight++;
      max = Math.max(max, inFlight);
      await new Promise((r) => setTimeout(r, ms));
      inFlight--;
      finished++;
    };
    const all = Array.from({ length: 100 }, (_, i) =>
      limiter.run(BILL, { priority: i % 3 === 0 ? 'interactive' : 'background', maxWaitMs: 3_600_000 }, call(20 + (i % 7) * 13)),
    );
    await runUntil(() => finished === 100);
    await Promise.all(all);
    expect(max).toBe(3);
    const row = limiter.snapshot().find((r) => r.budget === 'bill.concurrency')!;
    expect(row).toMatchObject({ limit: 3, running: 0, queued: 0, used: 0 });
  });

  it('keeps orgs apart: a busy org does not slow another', async () => {
    limiter = fakeTimeLimiter();
    const held = [new HeldCall(), new HeldCall(), new HeldCall()];
    const busy = held.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    await expect(limiter.run({ ...BILL, orgId: '00801OTHERORG0000001' }, { priority: 'interactive', maxWaitMs: 0 }, ok)).resolves.toBe(
      'ok',
    );
    held.forEach((h) => h.finish());
    await Promise.all(busy);
  });

  it('lets a person waiting in a channel go before queued background work', async () => {
    limiter = fakeTimeLimiter();
    const order: string[] = [];
    const holders = [new HeldCall(), new HeldCall(), new HeldCall()];
    const running = holders.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    const queued = Array.from({ length: 20 }, (_, i) =>
      limiter.run(BILL, { priority: 'background' }, async () => {
        order.push(`bg${i}`);
      }),
    );
    await vi.advanceTimersByTimeAsync(50);
    const person = limiter.run(BILL, { priority: 'interactive' }, async () => {
      order.push('person');
    });
    await vi.advanceTimersByTimeAsync(50);
    holders.forEach((h) => h.finish());
    await runUntil(() => order.length === 21);
    await Promise.all([...running, ...queued, person]);
    // At most the one background call already waiting at the head of the queue goes first.
    expect(order.indexOf('person')).toBeLessThanOrEqual(1);
  });

  it('answers "busy" when a command cannot start within its wait, with an honest estimate, and lets background work wait', async () => {
    limiter = fakeTimeLimiter();
    const holders = [new HeldCall(), new HeldCall(), new HeldCall()];
    const running = holders.map((h) => limiter.run(BILL, { priority: 'background' }, h.fn));
    const command = vi.fn(ok);
    const started = Date.now();
    const person = settle(limiter.run(BILL, { priority: 'interactive' }, command));
    const digest = settle(limiter.run(BILL, { priority: 'background' }, ok));
    await runUntil(() => person.done);
    expect(Date.now() - started).toBe(8_000); // COMMAND_WAIT_MS default
    expect(person.error).toBeInstanceOf(LimitExceeded);
    expect(person.error).toMatchObject({ budget: 'bill.concurrency', reason: 'busy' });
    expect((person.error as LimitExceeded).retryInMs).toBeGreaterThanOrEqual(1_000);
    expect(command).not.toHaveBeenCalled();
    expect(digest.done).toBe(false);
    expect(limiter.snapshot().find((r) => r.budget === 'bill.concurrency')).toMatchObject({ queued: 1, running: 3, rejected: 1 });

    holders[0]!.finish();
    await runUntil(() => digest.done);
    expect(digest.value).toBe('ok');
    holders.slice(1).forEach((h) => h.finish());
    await Promise.all(running);
  });

  it('estimates the retry from how long calls take and how many are ahead', async () => {
    limiter = fakeTimeLimiter({ LIMIT_BILL_CONCURRENCY: '1' });
    // Teach it that calls take about 2 s.
    for (let i = 0; i < 20; i++)
      await Promise.all([
        limiter.run(BILL, { priority: 'background' }, () => new Promise((r) => setTimeout(r, 2_000))),
        vi.advanceTimersByTimeAsync(2_000),
      ]);
    const holder = new HeldCall();
    const running = limiter.run(BILL, { priority: 'background' }, holder.fn);
    const ahead = Array.from({ length: 4 }, () => settle(limiter.run(BILL, { priority: 'background' }, ok)));
    const person = settle(limiter.run(BILL, { priority: 'interactive', maxWaitMs: 100 }, ok));
    await runUntil(() => person.done);
    const retry = (person.error as LimitExceeded).retryInMs;
    // Five calls of ~2 s are ahead of it or running.
    expect(retry).toBeGreaterThanOrEqual(8_000);
    expect(retry).toBeLessThanOrEqual(12_000);
    holder.finish();
    await running;
    await runUntil(() => ahead.every((a) => a.done));
  });

  it('does not deadlock when a call made under a slot makes another call to the same org', async () => {
    limiter = fakeTimeLimiter({ LIMIT_BILL_CONCURRENCY: '1' });
    const nested = await limiter.run(BILL, { priority: 'interactive' }, () => limiter.run(LOGIN, { priority: 'interactive' }, ok));
    expect(nested).toBe('ok');
  });
});

describe('server feedback from BILL', () => {
  it('BDC_1322 shrinks the org to fewer calls in flight for a while, then restores one slot at a time', async () => {
    limiter = fakeTimeLimiter();
    limiter.throttled(BILL, { kind: 'concurrency' });
    let row = limiter.snapshot().find((r) => r.budget === 'bill.concurrency')!;
    expect(row).toMatchObject({ limit: 2, configuredLimit: 3, lastThrottleKind: 'concurrency', lastThrottleAt: Date.now() });

    let inFlight = 0;
    let max = 0;
    let done = 0;
    const call = async () => {
      inFlight++;
      max = Math.max(max, inFlight);
      await new Promise((r) => setTimeout(r, 100));
      inFlight--;
      done++;
    };
    const batch = Array.from({ length: 20 }, () => limiter.run(BILL, { priority: 'background' }, call));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(max).toBe(2);
    await runUntil(() => done === 20);
    await Promise.all(batch);

    await vi.advanceTimersByTimeAsync(5_000);
    row = limiter.snapshot().find((r) => r.budget === 'bill.concurrency')!;
    expect(row.limit).toBe(3);
    expect(row.configuredLimit).toBeUndefined();

    // Repeated 1322s go down to one call at a time, never zero.
    for (let i = 0; i < 5; i++) limiter.throttled(BILL, { kind: 'concurrency' });
    expect(limiter.snapshot().find((r) => r.budget === 'bill.concurrency')!.limit).toBe(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(limiter.snapshot().find((r) => r.budget === 'bill.concurrency')!.limit).toBe(3);
  });

  it('BDC_1144 freezes the dev key until the top of the hour: every call fails fast saying when it resets', async () => {
    vi.setSystemTime(new Date('2025-03-03T10:42:00.000Z'));
    limiter = fakeTimeLimiter();
    limiter.throttled(BILL, { kind: 'hourly', untilMs: Date.parse('2025-03-03T11:00:00Z') });
    const upstream = vi.fn(ok);
    for (const priority of ['interactive', 'background'] as const) {
      await expect(limiter.run({ ...BILL, orgId: '00801ANYORG000000001' }, { priority }, upstream)).rejects.toMatchObject({
        budget: 'bill.requests',
        reason: 'hourly',
        retryInMs: 18 * 60_000,
      });
    }
    expect(upstream).not.toHaveBeenCalled();
    expect(limiter.blockedUntil(BILL)).toBe(Date.parse('2025-03-03T11:00:00Z'));
    const row = limiter.snapshot().find((r) => r.budget === 'bill.requests')!;
    expect(row).toMatchObject({ lastThrottleKind: 'hourly', blockedUntil: Date.parse('2025-03-03T11:00:00Z'), rejected: 2 });

    await vi.advanceTimersByTimeAsync(18 * 60_000);
    await expect(limiter.run(BILL, { priority: 'interactive' }, upstream)).resolves.toBe('ok');
    expect(limiter.blockedUntil(BILL)).toBeUndefined();
  });

  it('BDC_1144 without a usable instant still freezes only until the next top of the hour', async () => {
    vi.setSystemTime(new Date('2025-03-03T10:30:00.000Z'));
    limiter = fakeTimeLimiter();
    limiter.throttled(BILL, { kind: 'hourly', untilMs: Date.now() + 3_600_000 });
    expect(limiter.blockedUntil(BILL)).toBe(Date.parse('2025-03-03T11:00:00Z'));
  });

  it('a Retry-After pauses the org: background calls wait it out, commands that cannot wait that long are told when', async () => {
    limiter = fakeTimeLimiter();
    limiter.throttled(BILL, { kind: 'retryAfter', ms: 30_000 });
    const command = vi.fn(ok);
    await expect(limiter.run(BILL, { priority: 'interactive' }, command)).rejects.toMatchObject({ reason: 'throttled', retryInMs: 30_000 });
    expect(command).not.toHaveBeenCalled();
    const started = Date.now();
    const job = settle(limiter.run(BILL, { priority: 'background' }, async () => Date.now()));
    await runUntil(() => job.done, 100);
    expect(job.value! - started).toBeGreaterThanOrEqual(30_000);
  });
});

describe('secret keys never become names', () => {
  it('shows the dev key only as a hash in budget keys', async () => {
    limiter = fakeTimeLimiter();
    await limiter.run(BILL, { priority: 'interactive' }, ok);
    const text = JSON.stringify(limiter.snapshot());
    expect(text).not.toContain(DEV_KEY);
    expect(text).toContain(ORG);
    expect(limiter.snapshot().find((r) => r.budget === 'bill.requests')!.key).toMatch(/^k[0-9a-f]{12}$/);
  });
});
