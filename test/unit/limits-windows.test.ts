// Rate budgets with a fake clock: Bot Connector sends per thread (7/1 s, 8/2 s, 60/30 s, 1800/h), Spend & Expense, Graph.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LimitExceeded } from '../../src/errors.js';
import type { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { threadKey } from '../../src/infra/limits/budgets.js';
import { countInWindow, nextFit, nthFit, type RateWindow } from '../../src/infra/limits/windows.js';
import { fakeTimeLimiter, runUntil, settle } from './limits-helpers.js';

const TEAMS_WINDOWS: RateWindow[] = [
  { limit: 7, windowMs: 1_000 },
  { limit: 8, windowMs: 2_000 },
  { limit: 60, windowMs: 30_000 },
  { limit: 1_800, windowMs: 3_600_000 },
];

/** The largest number of starts any window of each length ever saw. */
function worstWindows(starts: number[], windows: RateWindow[]): Map<number, number> {
  const worst = new Map<number, number>();
  for (const w of windows) {
    let max = 0;
    for (const t of starts)
      max = Math.max(
        max,
        countInWindow(
          starts.filter((s) => s <= t),
          w.windowMs,
          t,
        ),
      );
    worst.set(w.windowMs, max);
  }
  return worst;
}

describe('sliding windows, pure arithmetic', () => {
  it('lets 7 sends go in a second, the 8th a second later, the 9th when the 2 s window has room', () => {
    const ts: number[] = [];
    for (let i = 0; i < 9; i++) ts.push(nextFit(ts, TEAMS_WINDOWS, ts[ts.length - 1] ?? 0));
    expect(ts).toEqual([0, 0, 0, 0, 0, 0, 0, 1_000, 2_000]);
  });

  it('holds a thread that sent 1,800 in the last hour until the oldest of them is an hour old', () => {
    const hour = [{ limit: 1_800, windowMs: 3_600_000 }];
    const ts = Array.from({ length: 1_800 }, (_, i) => 1_000_000 + i * 1_000);
    const now = ts[ts.length - 1]! + 500;
    expect(nextFit(ts, hour, now)).toBe(1_000_000 + 3_600_000);
    expect(nextFit(ts.slice(1), hour, now)).toBe(now);
  });

  it('knows when the n-th of n queued calls could go', () => {
    expect(nthFit([], [{ limit: 60, windowMs: 60_000 }], 0, 60)).toBe(0);
    expect(nthFit([], [{ limit: 60, windowMs: 60_000 }], 0, 61)).toBe(60_000);
  });

  it('treats a channel reply chain as its channel (Teams counts per channel, group chat or 1:1 chat)', () => {
    expect(threadKey('19:abc@thread.tacv2;messageid=1700000000000')).toBe('19:abc@thread.tacv2');
    expect(threadKey('a:1xyz')).toBe('a:1xyz');
  });
});

let limiter: SharedLimiter;
beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2025-03-03T10:00:00.000Z') });
});
afterEach(async () => {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the tests above this block never set it
  await limiter?.close();
  vi.useRealTimers();
});

describe('connector.thread: bot sends per conversation thread', () => {
  it('spreads 130 proactive sends in one channel so no window of 1 s, 2 s, 30 s or 1 h is ever exceeded', async () => {
    limiter = fakeTimeLimiter();
    const starts: number[] = [];
    const sends = Array.from({ length: 130 }, (_, i) =>
      limiter.run(
        { service: 'connector', conversationId: `19:general@thread.tacv2;messageid=${i % 5}` },
        { priority: 'background' },
        async () => {
          starts.push(Date.now());
        },
      ),
    );
    await runUntil(() => starts.length === 130, 250);
    await Promise.all(sends);
    const t0 = Date.parse('2025-03-03T10:00:00.000Z');
    expect(starts.filter((t) => t === t0)).toHaveLength(7);
    const worst = worstWindows(starts, TEAMS_WINDOWS);
    expect(worst.get(1_000)).toBe(7);
    expect(worst.get(2_000)).toBe(8);
    expect(worst.get(30_000)).toBe(60);
    // 130 sends need three 30 s windows: sends 121-127 go at 60 s, the 128th at 61 s, the last two at 62 s.
    expect(starts[starts.length - 1]! - t0).toBeGreaterThanOrEqual(62_000);
    expect(starts[starts.length - 1]! - t0).toBeLessThan(62_100);
  });

  it('caps a thread at 1,800 sends an hour (windows shortened by config so the test stays fast)', async () => {
    limiter = fakeTimeLimiter({ LIMIT_CONNECTOR_THREAD: '7/1s,1800/3600s' });
    const conv = { service: 'connector', conversationId: 'a:personal-chat' } as const;
    let sent = 0;
    for (let i = 0; i < 1_800; i++) {
      await limiter.run(conv, { priority: 'background' }, async () => {
        sent++;
      });
      if (i % 7 === 6) await vi.advanceTimersByTimeAsync(1_000);
    }
    const err = await limiter
      .run(conv, { priority: 'interactive', maxWaitMs: 60_000 }, async () => {
        sent++;
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LimitExceeded);
    expect(err).toMatchObject({ budget: 'connector.thread', reason: 'busy' });
    // The first sends of the hour leave the window after an hour from the start.
    expect(Date.now() + (err as LimitExceeded).retryInMs).toBe(Date.parse('2025-03-03T11:00:00.000Z'));
    expect(sent).toBe(1_800);
  });

  it('keeps threads apart and shows them as one row', async () => {
    limiter = fakeTimeLimiter();
    for (let i = 0; i < 7; i++)
      await limiter.run({ service: 'connector', conversationId: 'a:one' }, { priority: 'interactive', maxWaitMs: 0 }, async () => 1);
    await expect(
      limiter.run({ service: 'connector', conversationId: 'a:two' }, { priority: 'interactive', maxWaitMs: 0 }, async () => 1),
    ).resolves.toBe(1);
    await expect(
      limiter.run({ service: 'connector', conversationId: 'a:one' }, { priority: 'interactive', maxWaitMs: 0 }, async () => 1),
    ).rejects.toMatchObject({ reason: 'busy' });
    const rows = limiter.snapshot().filter((r) => r.budget === 'connector.thread');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ key: '*', keys: 2, limit: 7, used: 7, remaining: 0, windowMs: 1_000, rejected: 1 });
    expect(JSON.stringify(rows)).not.toContain('a:one');
  });

  it('a 429 Retry-After pauses the thread: the next send waits it out, other threads do not', async () => {
    limiter = fakeTimeLimiter();
    const thread = { service: 'connector', conversationId: '19:busy@thread.tacv2;messageid=1' } as const;
    limiter.throttled(thread, { kind: 'retryAfter', ms: 1_000 });
    const t0 = Date.now();
    const next = settle(
      limiter.run(
        { ...thread, conversationId: '19:busy@thread.tacv2;messageid=2' },
        { priority: 'interactive', maxWaitMs: 60_000 },
        async () => Date.now(),
      ),
    );
    await expect(
      limiter.run({ service: 'connector', conversationId: 'a:other' }, { priority: 'interactive', maxWaitMs: 0 }, async () => Date.now()),
    ).resolves.toBe(t0);
    await runUntil(() => next.done, 50);
    expect(next.value! - t0).toBe(1_000);
    const row = limiter.snapshot().find((r) => r.budget === 'connector.thread')!;
    expect(row.lastThrottleKind).toBe('retryAfter');
    expect(row.lastThrottleAt).toBe(t0);
  });
});

describe('spend.requests: 60 per minute per apiToken', () => {
  it('tells a command at once that the next call is more than its wait away, and lets background work wait', async () => {
    limiter = fakeTimeLimiter();
    const spend = { service: 'spend', token: 'se-api-token-secret-0001' } as const;
    for (let i = 0; i < 60; i++) await limiter.run(spend, { priority: 'background' }, async () => 1);
    await vi.advanceTimersByTimeAsync(30_000);
    const command = vi.fn(async () => 1);
    const t0 = Date.now();
    await expect(limiter.run(spend, { priority: 'interactive' }, command)).rejects.toMatchObject({
      budget: 'spend.requests',
      reason: 'busy',
      retryInMs: 30_000,
    });
    expect(Date.now()).toBe(t0); // refused without waiting 8 s for nothing
    expect(command).not.toHaveBeenCalled();
    const job = settle(limiter.run(spend, { priority: 'background' }, async () => Date.now()));
    await runUntil(() => job.done, 500);
    expect(job.value).toBe(t0 + 30_000);
    expect(JSON.stringify(limiter.snapshot())).not.toContain('se-api-token-secret-0001');
  });
});

describe('graph budgets: 4/s per team, 30/s per tenant, 1,500/s per app', () => {
  it('holds the fifth call to one team in a second, not calls to other teams of the tenant', async () => {
    limiter = fakeTimeLimiter();
    const starts: Array<[string, number]> = [];
    const calls = [];
    for (let i = 0; i < 5; i++)
      calls.push(
        limiter.run(
          { service: 'graph', tenantId: 't1', teamId: 'team-a' },
          { priority: 'interactive' },
          async () => void starts.push(['a', Date.now()]),
        ),
      );
    calls.push(
      limiter.run(
        { service: 'graph', tenantId: 't1', teamId: 'team-b' },
        { priority: 'interactive' },
        async () => void starts.push(['b', Date.now()]),
      ),
    );
    await runUntil(() => starts.length === 6, 50);
    await Promise.all(calls);
    const t0 = Date.parse('2025-03-03T10:00:00.000Z');
    expect(
      starts
        .filter(([, t]) => t === t0)
        .map(([k]) => k)
        .sort(),
    ).toEqual(['a', 'a', 'a', 'a', 'b']);
    expect(starts.find(([, t]) => t !== t0)).toEqual(['a', t0 + 1_000]);
    const tenant = limiter.snapshot().find((r) => r.budget === 'graph.tenant' && r.key === 't1')!;
    expect(tenant).toMatchObject({ limit: 30, used: 1, windowMs: 1_000 });
  });

  it('counts every call against the tenant: the 31st in a second waits', async () => {
    limiter = fakeTimeLimiter();
    const starts: number[] = [];
    const calls = Array.from({ length: 31 }, (_, i) =>
      limiter.run(
        { service: 'graph', tenantId: 't2', teamId: `team-${i}` },
        { priority: 'background' },
        async () => void starts.push(Date.now()),
      ),
    );
    await runUntil(() => starts.length === 31, 50);
    await Promise.all(calls);
    expect(new Set(starts).size).toBe(2);
    expect(starts[30]! - starts[0]!).toBe(1_000);
  });
});
