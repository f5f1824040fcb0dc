// Fleet-wide budget counts in Redis (each instance orders its own waiting calls; its memory keeps what Redis last said).
// Every key expires by itself, so expiry or FLUSHALL only forgets counts (bottleneck's Redis clustering failed for good
// with "ERR SETTINGS_KEY_NOT_FOUND" after either on Redis 7, SGrondin/bottleneck#205). Slots are redis-semaphore locks
// with a TTL refreshed while the call runs, so a crashed instance's slots come back; windows slide over a sorted set
// (a fixed window admits up to twice a limit across its boundary); pauses are keys with PX plus a pub/sub broadcast.
import { randomUUID } from 'node:crypto';
import type { LostLockError } from 'redis-semaphore';
import { DependencyUnavailable, errorMessage } from '../../errors.js';
import type { Logger } from '../log.js';
import { SafeSemaphore as Semaphore, type RedisConnection } from '../state/redisClient.js';
import { LocalBudgetStore, type Block, type RateRule, type TakeResult } from './store.js';
import { HOUR_MS, hourStart, nextFit, nextHour, type RateWindow } from './windows.js';

/** A held slot whose instance stopped refreshing it (crash, partition) is free again after this long. */
const LOCK_TIMEOUT_MS = 15_000;
const BLOCK_CHANNEL = 'limits:blocks';

// Admits one call at ARGV[1] if every window has room; replies {fits, the call times still in the longest window...}.
const TAKE_WINDOWS = `
local now = tonumber(ARGV[1])
local fits = 1
local longest = 0
for i = 3, #ARGV, 2 do
  local limit, ms = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  if ms > longest then longest = ms end
  if redis.call('ZCOUNT', KEYS[1], '(' .. (now - ms), '+inf') >= limit then fits = 0 end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - longest)
if fits == 1 then
  redis.call('ZADD', KEYS[1], now, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], longest)
end
local reply = { fits }
local calls = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for j = 2, #calls, 2 do reply[#reply + 1] = calls[j] end
return reply`;

// Counts one call in a clock hour's counter (which outlives its hour) and replies the hour's count.
const TAKE_HOUR = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

// Keeps the longer of two pauses ARGV[1] "until:kind:id" (an hourly freeze is never shortened by a Retry-After), expiring with it.
const BLOCK = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local until_, kind = string.match(cur, '^(%d+):(%a+):')
  local new_until, new_kind = string.match(ARGV[1], '^(%d+):(%a+):')
  if until_ and tonumber(until_) >= tonumber(new_until) and not (kind == 'retryAfter' and new_kind == 'hourly') then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

export class RedisBudgetStore extends LocalBudgetStore {
  /** A slot another instance frees wakes no one here: a waiter re-checks this often. */
  override readonly pollMs = 20;
  private readonly held = new Map<string, Semaphore[]>();
  /** Slots whose release Redis did not take (it was away): released again when it is back, not left to their TTL. */
  private readonly unreleased = new Set<Semaphore>();
  private lastFallbackLog = 0;
  private closed = false;

  constructor(private readonly deps: { redis: RedisConnection; log: Logger; lockTimeoutMs?: number }) {
    super();
    const { redis } = deps;
    redis.subscribe(BLOCK_CHANNEL, (message) => this.takeBlock(message));
    redis.onResubscribe(() => void this.loadBlocks());
    // Each time commands work again (the first time there is nothing to release).
    redis.client.on('ready', () => this.retryReleases());
  }

  override async take(id: string, rule: RateRule, now: number): Promise<TakeResult> {
    if (rule.type === 'unlimited') return super.take(id, rule, now);
    try {
      return rule.type === 'hourly' ? await this.takeHour(id, rule.limit, now) : await this.takeWindows(id, rule.windows, now);
    } catch (err) {
      const unavailable = err instanceof DependencyUnavailable ? err : new DependencyUnavailable('redis', err);
      // Without Redis, BILL and Spend & Expense budgets refuse: one instance alone must not decide them. Teams and Graph
      // ones count on this instance, so a "temporarily unavailable" card still goes out; those upstreams enforce their
      // limits with 429 + Retry-After, which the limiter honours.
      if (id.startsWith('bill.') || id.startsWith('spend.')) throw unavailable;
      if (Date.now() - this.lastFallbackLog > 60_000) {
        this.lastFallbackLog = Date.now();
        this.deps.log.warn(
          { budget: id.split('|')[0], err: errorMessage(unavailable.cause ?? unavailable) },
          'Redis unavailable: Teams and Graph budgets counted on this instance only until it is back',
        );
      }
      return super.take(id, rule, now);
    }
  }

  private async takeHour(id: string, limit: number, now: number): Promise<TakeResult> {
    const key = this.key('hour', `${id}|${hourStart(now)}`);
    const used = await this.deps.redis.eval<number>(TAKE_HOUR, [key], [2 * HOUR_MS]);
    const e = this.entry(id);
    e.hour = hourStart(now);
    e.hourCount = Math.min(limit, used);
    return used <= limit ? { ok: true } : { ok: false, retryAt: nextHour(now) };
  }

  private async takeWindows(id: string, windows: RateWindow[], now: number): Promise<TakeResult> {
    const call = `${now}:${randomUUID()}`;
    const args = [Math.floor(now), call, ...windows.flatMap((w) => [w.limit, w.windowMs])];
    const [fits, ...calls] = await this.deps.redis.eval<[number, ...string[]]>(TAKE_WINDOWS, [this.key('win', id)], args);
    const e = this.entry(id);
    e.ts = calls.map(Number);
    return fits === 1 ? { ok: true } : { ok: false, retryAt: nextFit(e.ts, windows, now) };
  }

  /** Concurrency budgets are BILL's: without Redis they refuse (DependencyUnavailable), never count locally. */
  override async acquire(id: string, limit: number): Promise<boolean> {
    const lockTimeout = this.deps.lockTimeoutMs ?? LOCK_TIMEOUT_MS;
    const lock = new Semaphore(this.deps.redis.client, this.key('slots', id), limit, {
      lockTimeout,
      acquireAttemptsLimit: 1,
      acquireTimeout: lockTimeout,
      refreshInterval: Math.round(lockTimeout * 0.6),
      onLockLost: (err: LostLockError) =>
        this.deps.log.warn(
          { budget: id.split('|')[0], err: err.message },
          'limiter slot lost in Redis (expired or data lost); it counts as released',
        ),
    });
    try {
      if (this.closed) throw new Error('budget store closed');
      if (!(await lock.tryAcquire())) return false;
    } catch (err) {
      // A timed-out acquire may still run once Redis answers again: take the slot back right behind it.
      this.deps.redis.client.zrem(`semaphore:${this.key('slots', id)}`, lock.identifier).catch(() => undefined);
      throw new DependencyUnavailable('redis', err);
    }
    this.held.set(id, [...(this.held.get(id) ?? []), lock]);
    this.entry(id).inUse++;
    return true;
  }

  override release(id: string): void {
    super.release(id);
    const locks = this.held.get(id);
    const lock = locks?.pop();
    if (locks?.length === 0) this.held.delete(id);
    lock?.release().catch((err: unknown) => {
      this.unreleased.add(lock);
      this.deps.log.debug({ budget: id.split('|')[0], err: errorMessage(err) }, 'limiter slot release failed; retried when Redis is back');
    });
  }

  /** Slots held when Redis went away would otherwise block the fleet until their TTL once it is back. */
  private retryReleases(): void {
    for (const lock of [...this.unreleased]) {
      this.unreleased.delete(lock);
      // A failed release leaves the lock marked as held, so release() tries again (and is a no-op once it is gone).
      lock.release().catch(() => this.unreleased.add(lock));
    }
  }

  override block(id: string, block: Block): void {
    super.block(id, block);
    const ttlMs = Math.max(1, Math.ceil(block.until - Date.now()));
    const pause = `${Math.ceil(block.until)}:${block.kind}:${id}`;
    void this.deps.redis
      .eval(BLOCK, [this.key('block', id)], [pause, ttlMs])
      .then(() => this.deps.redis.publish(BLOCK_CHANNEL, pause))
      .catch((err: unknown) =>
        this.deps.log.warn(
          { budget: id.split('|')[0], err: errorMessage(err) },
          'could not share a budget pause through Redis; it holds on this instance',
        ),
      );
  }

  /** A pause another instance set ("until:kind:id"). */
  private takeBlock(text: string | null): void {
    const m = /^(\d+):(hourly|retryAfter):(.+)$/s.exec(text ?? '');
    if (m?.[3]) super.block(m[3], { until: Number(m[1]), kind: m[2] as Block['kind'] });
  }

  /** Pauses set by other instances before this one (re)subscribed. */
  private async loadBlocks(): Promise<void> {
    const { client, keyPrefix } = this.deps.redis;
    try {
      for await (const keys of client.scanStream({ match: `${keyPrefix}limits:block:*`, count: 200 }) as AsyncIterable<string[]>) {
        if (keys.length > 0) for (const pause of await client.mget(...keys)) this.takeBlock(pause);
      }
    } catch (err) {
      this.deps.log.debug({ err: errorMessage(err) }, 'could not read budget pauses from Redis');
    }
  }

  override async close(): Promise<void> {
    this.closed = true;
    const locks = [...this.held.values()].flat();
    this.held.clear();
    await Promise.allSettled(locks.map((l) => l.release()));
    await super.close();
  }

  private key(kind: 'win' | 'hour' | 'slots' | 'block', id: string): string {
    return `${this.deps.redis.keyPrefix}limits:${kind}:{${id}}`;
  }
}
