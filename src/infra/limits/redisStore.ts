// Fleet-wide budget counts in Redis behind the BudgetStore seam (each instance orders its own waiting calls).
//
// Why not bottleneck's own Redis clustering: with bottleneck 2.19.5, ioredis 5 and Redis 7.0.15, two limiters
// sharing an id held 3 in flight, but once their keys expired (the `timeout` option) or Redis lost its data
// (FLUSHALL, a restart without persistence), every job failed with "ERR SETTINGS_KEY_NOT_FOUND" for good:
// its recovery compares the error message with "SETTINGS_KEY_NOT_FOUND", without Redis 7's "ERR " prefix
// (bottleneck/lib/RedisDatastore.js; SGrondin/bottleneck#205). So the shared counts live on maintained primitives:
// - concurrency (3 in flight per dev key and org): redis-semaphore, one lock per call with a TTL refreshed while
//   the call runs, so a crashed instance's slots come back after LOCK_TIMEOUT_MS;
// - clock-hour reservoirs (20,000 BILL calls per hour): rate-limiter-flexible's RateLimiterRedis, one key per hour;
// - sliding windows (200 logins/h, Teams' 7/1 s...8/2 s...60/30 s...1,800/h per thread, Graph, S&E): one small
//   Lua script over a sorted set of call times, because rate-limiter-flexible's Redis limiters are fixed windows
//   that admit up to twice a limit across a window boundary (14 sends to a thread within one second vs 7/1 s);
// - pauses (BDC_1144 freeze, Retry-After): a key with PX plus a pub/sub broadcast, read from memory.
// Every key expires by itself, so expiry or FLUSHALL only forgets counts: the next call starts them afresh.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { LostLockError } from 'redis-semaphore';
import { DependencyUnavailable, errorMessage } from '../../errors.js';
import type { Logger } from '../log.js';
import { SafeSemaphore as Semaphore, type RedisConnection } from '../state/redisClient.js';
import type { BudgetRule } from './budgets.js';
import { LocalBudgetStore, type Block, type BudgetStore, type RateRule, type TakeResult, type Usage } from './store.js';
import { hourStart, nextHour, type RateWindow } from './windows.js';

/** A held slot whose instance stopped refreshing it (crash, partition) is free again after this long. */
const LOCK_TIMEOUT_MS = 15_000;
/** How often a waiter re-checks a slot another instance may have freed. */
const SLOT_POLL_MS = 20;
/** Oldest call times returned per window: enough for exact "next N fit at" estimates while N stays below it. */
const VIEW_OLDEST = 32;
const BLOCK_CHANNEL = 'limits:blocks';

// A sliding log: admits one call at ARGV[1] if every window has room; otherwise says when the first would.
// Replies {ok, nextFitAt, counts..., oldest call times per window...} so the instance can estimate without asking.
const TAKE_WINDOWS = `
local now = tonumber(ARGV[1])
local k = tonumber(ARGV[3])
local wins = {}
local longest = 0
for i = 4, #ARGV, 2 do
  local w = { tonumber(ARGV[i]), tonumber(ARGV[i + 1]) }
  wins[#wins + 1] = w
  if w[2] > longest then longest = w[2] end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - longest)
local at = now
for _, w in ipairs(wins) do
  local lo = '(' .. (now - w[2])
  local count = redis.call('ZCOUNT', KEYS[1], lo, '+inf')
  if count >= w[1] then
    local e = redis.call('ZRANGEBYSCORE', KEYS[1], lo, '+inf', 'WITHSCORES', 'LIMIT', count - w[1], 1)
    local t = tonumber(e[2]) + w[2]
    if t > at then at = t end
  end
end
local ok = 0
if at <= now then
  redis.call('ZADD', KEYS[1], now, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], longest)
  ok = 1
end
local reply = { ok, tostring(at) }
for _, w in ipairs(wins) do
  local lo = '(' .. (now - w[2])
  reply[#reply + 1] = redis.call('ZCOUNT', KEYS[1], lo, '+inf')
  local e = redis.call('ZRANGEBYSCORE', KEYS[1], lo, '+inf', 'WITHSCORES', 'LIMIT', 0, k)
  local scores = {}
  for j = 2, #e, 2 do scores[#scores + 1] = e[j] end
  reply[#reply + 1] = scores
end
return reply`;

// Keeps the longer of two pauses (an hourly freeze is never shortened by a Retry-After), expiring with it.
const BLOCK = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local until_, kind = string.match(cur, '^(%d+):(%a+)$')
  if until_ and tonumber(until_) >= tonumber(ARGV[1]) and not (kind == 'retryAfter' and ARGV[2] == 'hourly') then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. ARGV[2], 'PX', ARGV[3])
return 1`;

type ScriptedRedis = Redis & {
  billbridgeTakeWindows(key: string, ...args: Array<string | number>): Promise<[number, string, ...Array<number | string[]>]>;
  billbridgeBlock(key: string, until: string, kind: string, ttlMs: string): Promise<number>;
};

/** What the last atomic reply said about a window budget: per window, how many calls and the oldest of them. */
export interface WindowView {
  at: number;
  windows: Array<{ count: number; oldest: number[] }>;
}

/**
 * When the n-th of n more calls could start, from a WindowView (the same arithmetic as windows.ts nthFit: the
 * call that makes a window exceed its limit waits until the entry `limit` places before it leaves). Calls beyond
 * the known oldest ones are assumed as new as the reply, so the estimate errs late, never early.
 */
export function viewNthFit(view: WindowView, windows: readonly RateWindow[], now: number, n: number): number {
  const sims: number[] = [];
  let at = now;
  for (let j = 0; j < Math.max(1, n); j++) {
    let t = at;
    windows.forEach((w, i) => {
      const v = view.windows[i] ?? { count: 0, oldest: [] };
      const idx = v.count + sims.length - w.limit;
      if (idx < 0) return;
      const leaves = v.oldest[idx] ?? (idx < v.count ? view.at : sims[idx - v.count]);
      if (leaves !== undefined) t = Math.max(t, leaves + w.windowMs);
    });
    sims.push(t);
    at = t;
  }
  return at;
}

/** The window closest to its limit, from a view (entries known to have left since are not counted). */
function viewUsage(view: WindowView | undefined, windows: readonly RateWindow[], now: number): Usage {
  let best: Usage | undefined;
  windows.forEach((w, i) => {
    const v = view?.windows[i];
    const left = v ? v.oldest.filter((t) => t <= now - w.windowMs).length : 0;
    const used = v ? Math.max(0, v.count - left) : 0;
    const u = { limit: w.limit, used, remaining: Math.max(0, w.limit - used), windowMs: w.windowMs };
    if (!best || u.remaining / u.limit < best.remaining / best.limit) best = u;
  });
  return best ?? { limit: 0, used: 0, remaining: 0, windowMs: 0 };
}

type Held = { where: 'redis'; lock: Semaphore } | { where: 'local' };

export interface RedisBudgetStoreDeps {
  redis: RedisConnection;
  log: Logger;
  /** Default LOCK_TIMEOUT_MS (tests of a crashed instance shorten it). */
  lockTimeoutMs?: number;
}

/**
 * Budgets whose counts must never be decided by one instance alone: BILL (per dev key and org) and Spend & Expense.
 * Without Redis they refuse with DependencyUnavailable. The others (Teams threads, Graph) fall back to this
 * instance's own counts while Redis is away, so a "temporarily unavailable" card can still be delivered; Teams
 * and Graph still enforce their limits with 429 + Retry-After, which the limiter honours.
 */
function failsClosed(id: string): boolean {
  return id.startsWith('bill.') || id.startsWith('spend.');
}

export class RedisBudgetStore implements BudgetStore {
  readonly pollMs = SLOT_POLL_MS;
  private readonly redis: RedisConnection;
  private readonly local = new LocalBudgetStore();
  private readonly held = new Map<string, Held[]>();
  /** Slots whose release Redis did not take (it was away): released again when it is back, not left to their TTL. */
  private readonly unreleased = new Set<Semaphore>();
  private readonly windowViews = new Map<string, WindowView>();
  private readonly hourly = new Map<number, RateLimiterRedis>();
  private readonly lockTimeoutMs: number;
  private readonly instance = randomUUID();
  private lastFallbackLog = 0;
  private closed = false;

  constructor(private readonly deps: RedisBudgetStoreDeps) {
    this.redis = deps.redis;
    this.lockTimeoutMs = deps.lockTimeoutMs ?? LOCK_TIMEOUT_MS;
    const client = this.redis.client;
    client.defineCommand('billbridgeTakeWindows', { numberOfKeys: 1, lua: TAKE_WINDOWS });
    client.defineCommand('billbridgeBlock', { numberOfKeys: 1, lua: BLOCK });
    this.redis.subscribe(BLOCK_CHANNEL, (message) => this.onBlockMessage(message));
    this.redis.onResubscribe(() => void this.loadBlocks());
    this.redis.onReconnect(() => this.retryReleases());
  }

  // ---- counts ------------------------------------------------------------------------------------------------

  async take(id: string, rule: RateRule, now: number): Promise<TakeResult> {
    if (rule.type === 'unlimited') return this.local.takeNow(id, rule, now);
    try {
      return rule.type === 'hourly' ? await this.takeHourly(id, rule.limit, now) : await this.takeWindows(id, rule.windows, now);
    } catch (err) {
      return this.fallback(id, err, () => this.local.takeNow(id, rule, now));
    }
  }

  private async takeHourly(id: string, limit: number, now: number): Promise<TakeResult> {
    const hour = hourStart(now);
    try {
      const res = await this.reservoir(limit).consume(`${id}|${hour}`, 1);
      this.local.setHourCount(id, hour, res.consumedPoints);
      return { ok: true };
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      this.local.setHourCount(id, hour, Math.min(limit, err.consumedPoints));
      return { ok: false, retryAt: nextHour(now) };
    }
  }

  /** One RateLimiterRedis per reservoir size; the key carries the clock hour, so each hour starts full. */
  private reservoir(limit: number): RateLimiterRedis {
    let rl = this.hourly.get(limit);
    if (!rl) {
      rl = new RateLimiterRedis({
        storeClient: this.redis.client,
        keyPrefix: `${this.redis.keyPrefix}limits:hour`,
        points: limit,
        // Longer than the hour the key belongs to, so it cannot expire before the hour ends.
        duration: 2 * 3600,
        rejectIfRedisNotReady: true,
      });
      this.hourly.set(limit, rl);
    }
    return rl;
  }

  private async takeWindows(id: string, windows: RateWindow[], now: number): Promise<TakeResult> {
    const args: Array<string | number> = [Math.floor(now), `${now}:${this.instance}:${randomUUID().slice(0, 8)}`, VIEW_OLDEST];
    for (const w of windows) args.push(w.limit, w.windowMs);
    const reply = await this.redis.run((r) => (r as ScriptedRedis).billbridgeTakeWindows(this.key('win', id), ...args));
    const view: WindowView = { at: now, windows: [] };
    for (let i = 0; i < windows.length; i++) {
      view.windows.push({ count: Number(reply[2 + 2 * i]), oldest: (reply[3 + 2 * i] as string[]).map(Number) });
    }
    this.windowViews.set(id, view);
    return reply[0] === 1 ? { ok: true } : { ok: false, retryAt: Number(reply[1]) };
  }

  async acquire(id: string, limit: number): Promise<boolean> {
    let lock: Semaphore | undefined;
    try {
      if (this.closed) throw new Error('budget store closed');
      lock = new Semaphore(this.redis.client, this.key('slots', id), limit, {
        lockTimeout: this.lockTimeoutMs,
        acquireAttemptsLimit: 1,
        acquireTimeout: this.lockTimeoutMs,
        refreshInterval: Math.round(this.lockTimeoutMs * 0.6),
        onLockLost: (err: LostLockError) =>
          this.deps.log.warn(
            { budget: id.split('|')[0], err: err.message },
            'limiter slot lost in Redis (expired or data lost); it counts as released',
          ),
      });
      const ok = await lock.tryAcquire();
      if (ok) this.push(id, { where: 'redis', lock });
      return ok;
    } catch (err) {
      // A timed-out acquire may still run once Redis answers again: take the slot back right behind it.
      if (lock) this.redis.client.zrem(`semaphore:${this.key('slots', id)}`, lock.identifier).catch(() => undefined);
      const ok = await this.fallback(id, err, () => this.local.acquire(id, limit));
      if (ok) this.push(id, { where: 'local' });
      return ok;
    }
  }

  release(id: string): void {
    const list = this.held.get(id);
    const h = list?.pop();
    if (list?.length === 0) this.held.delete(id);
    if (!h) return;
    if (h.where === 'local') return this.local.release(id);
    h.lock.release().catch((err: unknown) => {
      this.unreleased.add(h.lock);
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

  private push(id: string, h: Held): void {
    const list = this.held.get(id);
    if (list) list.push(h);
    else this.held.set(id, [h]);
  }

  /** Redis failed: BILL budgets refuse (DependencyUnavailable); the others decide on this instance's counts. */
  private fallback<T>(id: string, err: unknown, local: () => T | Promise<T>): T | Promise<T> {
    const unavailable = err instanceof DependencyUnavailable ? err : new DependencyUnavailable('redis', err);
    if (failsClosed(id)) throw unavailable;
    const now = Date.now();
    if (now - this.lastFallbackLog > 60_000) {
      this.lastFallbackLog = now;
      this.deps.log.warn(
        { budget: id.split('|')[0], err: errorMessage(unavailable.cause ?? unavailable) },
        'Redis unavailable: Teams and Graph budgets counted on this instance only until it is back',
      );
    }
    return local();
  }

  // ---- pauses ------------------------------------------------------------------------------------------------

  block(id: string, block: Block): void {
    this.local.block(id, block);
    const ttlMs = Math.max(1, Math.ceil(block.until - Date.now()));
    void this.redis
      .run((r) => (r as ScriptedRedis).billbridgeBlock(this.key('block', id), String(Math.ceil(block.until)), block.kind, String(ttlMs)))
      .then(() => this.redis.publish(BLOCK_CHANNEL, JSON.stringify({ id, until: block.until, kind: block.kind })))
      .catch((err: unknown) =>
        this.deps.log.warn(
          { budget: id.split('|')[0], err: errorMessage(err) },
          'could not share a budget pause through Redis; it holds on this instance',
        ),
      );
  }

  blocked(id: string, now: number): Block | undefined {
    return this.local.blocked(id, now);
  }

  private onBlockMessage(message: string): void {
    try {
      const m = JSON.parse(message) as { id?: unknown; until?: unknown; kind?: unknown };
      if (typeof m.id !== 'string' || typeof m.until !== 'number' || (m.kind !== 'hourly' && m.kind !== 'retryAfter')) return;
      this.local.block(m.id, { until: m.until, kind: m.kind });
    } catch {
      // not ours
    }
  }

  /** Pauses set by other instances before this one (re)subscribed. */
  private async loadBlocks(): Promise<void> {
    const head = `${this.redis.keyPrefix}limits:block:{`;
    try {
      let cursor = '0';
      do {
        const [next, keys] = await this.redis.client.scan(cursor, 'MATCH', `${head}*`, 'COUNT', 200);
        cursor = next;
        if (keys.length === 0) continue;
        const values = await this.redis.client.mget(...keys);
        keys.forEach((k, i) => {
          const m = /^(\d+):(hourly|retryAfter)$/.exec(values[i] ?? '');
          if (m) this.local.block(k.slice(head.length, -1), { until: Number(m[1]), kind: m[2] as Block['kind'] });
        });
      } while (cursor !== '0');
    } catch (err) {
      this.deps.log.debug({ err: errorMessage(err) }, 'could not read budget pauses from Redis');
    }
  }

  // ---- views for status and estimates (synchronous: from the last atomic reply) ---------------------------------

  // Hour counts and local fallbacks live in `local`; window budgets keep the view of the last atomic reply.
  usage(id: string, rule: BudgetRule, now: number): Usage {
    if (rule.type === 'windows') return viewUsage(this.windowViews.get(id), rule.windows, now);
    if (rule.type !== 'concurrency') return this.local.usage(id, rule, now);
    const used = this.held.get(id)?.length ?? 0;
    return { limit: rule.limit, used, remaining: Math.max(0, rule.limit - used) };
  }

  nthFit(id: string, rule: RateRule, now: number, n: number): number {
    if (rule.type !== 'windows') return this.local.nthFit(id, rule, now, n);
    const view = this.windowViews.get(id);
    return view ? viewNthFit(view, rule.windows, now, n) : now;
  }

  idle(id: string, rule: BudgetRule, now: number): boolean {
    if (this.held.has(id) || this.local.blocked(id, now)) return false;
    if (rule.type !== 'windows') return this.local.idle(id, rule, now);
    const view = this.windowViews.get(id);
    const longest = rule.windows.reduce((m, w) => Math.max(m, w.windowMs), 0);
    return !view || view.at <= now - longest;
  }

  forget(id: string): void {
    this.windowViews.delete(id);
    this.local.forget(id);
  }

  async close(): Promise<void> {
    this.closed = true;
    const locks = [...this.held.values()].flat().flatMap((h) => (h.where === 'redis' ? [h.lock] : []));
    this.held.clear();
    await Promise.allSettled(locks.map((l) => l.release()));
    await this.local.close();
  }

  private key(kind: 'win' | 'slots' | 'block', id: string): string {
    return `${this.redis.keyPrefix}limits:${kind}:{${id}}`;
  }
}
