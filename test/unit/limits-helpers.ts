// Builds a real limiter for budget arithmetic tests: fake timers drive time, so nothing really sleeps.
import { setTimeout as delay } from 'node:timers/promises';
import { vi } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { SharedLimiter } from '../../src/infra/limits/limiter.js';
import type { UpstreamCallCounter } from '../../src/infra/upstreamCalls.js';

export const DEV_KEY = 'dev-key-0123456789abcdef';
export const ORG = '00801ABCDEFGHIJ12345';
export const BILL = { service: 'bill', devKey: DEV_KEY, orgId: ORG } as const;
export const LOGIN = { service: 'bill.login', devKey: DEV_KEY, orgId: ORG } as const;

export function limitsConfig(env: Record<string, string> = {}): Config {
  return loadConfig({ NODE_ENV: 'test', STATE_DIR: '/tmp/unused', ...env });
}

/** A limiter whose clock is the (faked) system clock, counting calls into `turns` when given. Call vi.useFakeTimers first. */
export function fakeTimeLimiter(env: Record<string, string> = {}, turns?: UpstreamCallCounter): SharedLimiter {
  const config = limitsConfig(env);
  const log = createLogger({ level: 'silent', secrets: new SecretRegistry() });
  return new SharedLimiter({ config, clock: systemClock, log, turns });
}

/** A call that stays in flight until released, recording when it started. */
export class HeldCall {
  started: number | undefined;
  private release!: () => void;
  readonly done: Promise<void>;
  constructor() {
    this.done = new Promise((r) => (this.release = r));
  }
  fn = async (): Promise<string> => {
    this.started = Date.now();
    await this.done;
    return 'ok';
  };
  finish(): void {
    this.release();
  }
}

/** Lets fake time run in small steps until `cond` holds (the waiting rooms use timers to hand over). */
export async function runUntil(cond: () => boolean, stepMs = 5, maxMs = 4 * 3_600_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > maxMs) throw new Error(`condition not met within ${maxMs} ms of fake time`);
    await vi.advanceTimersByTimeAsync(stepMs);
  }
}

/** Settles a promise into a value or an error without an unhandled rejection. */
export function settle<T>(p: Promise<T>): { value?: T; error?: unknown; done: boolean } {
  const out: { value?: T; error?: unknown; done: boolean } = { done: false };
  p.then(
    (v) => {
      out.value = v;
      out.done = true;
    },
    (e: unknown) => {
      out.error = e;
      out.done = true;
    },
  );
  return out;
}

/**
 * What a person's turn heard: the error it was refused with, 'answered', or, when it still waited 5 s (real time) after
 * its turn's deadline, a line saying so. Call it as the turn starts, so a refusal is never unhandled.
 */
export function heardByTurnEnd(turn: Promise<unknown>): Promise<unknown> {
  const heard = turn.then(
    () => 'answered',
    (err: unknown) => err,
  );
  return Promise.race([heard, delay(5_000).then(() => 'still waiting after the turn ended')]);
}
