// What the limiter keeps for each conversation thread it has sent to: Teams' per-thread windows reach back an hour, so
// every thread the bot answered in the last hour is remembered, and at 15,000 threads (the memory bench) each byte
// per thread is 15 KB of live heap.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { fakeTimeLimiter } from './limits-helpers.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function liveHeap(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const thread = (i: number) => `19:${i.toString(16).padStart(32, '0')}@thread.tacv2;messageid=${1_700_000_000_000 + i}`;

let limiter: SharedLimiter | undefined;
afterEach(async () => {
  await limiter?.close();
  limiter = undefined;
  vi.useRealTimers();
});

describe('per-thread send budgets in memory', () => {
  it('an idle thread costs its send times and little else', async () => {
    // Time stands still: every send below falls in the same second.
    vi.useFakeTimers({ now: new Date('2026-01-05T10:00:00.000Z') });
    limiter = fakeTimeLimiter();
    const send = (i: number) =>
      limiter!.run({ service: 'connector', conversationId: thread(i) }, { priority: 'interactive', maxWaitMs: 0 }, async () => i);
    for (let i = 0; i < 200; i++) await send(i);
    const before = liveHeap();
    const threads = 5_000;
    for (let i = 200; i < 200 + threads; i++) await send(i);
    const perThread = (liveHeap() - before) / threads;
    // Measured: ~800 B a thread when each kept its waiting room, its ref and a 17-slot array of send times; ~250 B now.
    expect(perThread).toBeLessThan(450);
    // Still counted: every thread is one key of the aggregate row, and a thread's sends still count against it.
    const row = limiter.snapshot().find((r) => r.budget === 'connector.thread');
    expect(row).toMatchObject({ key: '*', keys: 200 + threads, used: 1 });
    for (let n = 1; n < 7; n++) await send(7);
    await expect(send(7)).rejects.toMatchObject({ budget: 'connector.thread', reason: 'busy' });
    expect(limiter.snapshot().find((r) => r.budget === 'connector.thread')).toMatchObject({ keys: 200 + threads, used: 7, rejected: 1 });
  });
});
