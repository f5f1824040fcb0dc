// Fleet-wide state in Redis: one key per entry with native TTLs, a sorted-set index per namespace, logs as streams.
//   billbridge:state:{<ns>}:k:<key>  the JSON value, PX when it has a TTL (the hash tag keeps a namespace in one slot)
//   billbridge:state:{<ns>}:idx      keys by expiry in ms (+inf without TTL), for entries(); not for UNLISTED namespaces
//   billbridge:log:<log>             a stream; each record is one entry with a single field "r" (JSON)
// Bounded under `noeviction`: a write with a TTL drops the index members that expired; UNLISTED namespaces (written per
// delivery, read by key) have no index; entries without a TTL grow with customers, not deliveries; a log keeps about
// its newest `logMaxEntries` records (XADD MAXLEN ~).
import type { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import type { RedisConnection } from './redisClient.js';
import { NS, checkName, type SetOptions, type StateStore } from './types.js';

/** Keys read per MGET in entries(): namespaces may hold thousands of keys, replies stay small. */
const MGET_CHUNK = 500;
/** Records a log (stream) keeps, about (MAXLEN ~ trims whole radix-tree nodes, so a few more may stay). */
const LOG_MAX_ENTRIES = 100_000;

/**
 * Namespaces written per delivery and only ever read by key: no index (entries() refuses them), so a delivery
 * leaves exactly one key behind, and Redis expires it.
 */
const UNLISTED: ReadonlySet<string> = new Set([
  NS.seenActivities,
  NS.webhookEvents,
  NS.approvalCards,
  NS.approvalDigests,
  NS.cardMessages,
  NS.tabEvents,
]);

// SET NX (with PX) and index the key only when this call created it (ARGV[5]: now, to drop expired members).
const SET_IF_ABSENT = `
local created
if ARGV[2] == '' then
  created = redis.call('SET', KEYS[1], ARGV[1], 'NX')
else
  created = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
end
if not created then return 0 end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
if ARGV[2] ~= '' then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5]) end
return 1`;

// prepend(): GET, put ARGV[1] first, keep ARGV[2] items, SET (PX ARGV[3] unless ''), in one script so no instance's
// item is lost to another's write. JSON.stringify never writes a raw newline, so the list is kept as "[item,\nitem]"
// (still JSON) and split on newlines here without parsing the items.
const PREPEND = `
local items = { ARGV[1] }
local keep = tonumber(ARGV[2])
local raw = redis.call('GET', KEYS[1])
if raw then
  for item in string.gmatch(string.sub(raw, 2, -2), '[^\\n]+') do
    if #items >= keep then break end
    items[#items + 1] = (string.gsub(item, ',$', ''))
  end
end
local list = '[' .. table.concat(items, ',\\n') .. ']'
if ARGV[3] == '' then redis.call('SET', KEYS[1], list) else redis.call('SET', KEYS[1], list, 'PX', ARGV[3]) end
return #items`;

type ScriptedRedis = Redis & {
  billbridgePrepend(key: string, value: string, keep: string, ttlMs: string): Promise<number>;
  billbridgeSetIfAbsent(
    key: string,
    idx: string,
    value: string,
    ttlMs: string,
    member: string,
    score: string,
    now: string,
  ): Promise<number>;
};

export class RedisStateStore implements StateStore {
  readonly kind = 'redis' as const;
  readonly location: string;
  private closed = false;

  constructor(
    private readonly conn: RedisConnection,
    private readonly clock: Clock,
    private readonly logMaxEntries = LOG_MAX_ENTRIES,
  ) {
    this.location = conn.location;
    conn.client.defineCommand('billbridgeSetIfAbsent', { numberOfKeys: 2, lua: SET_IF_ABSENT });
    conn.client.defineCommand('billbridgePrepend', { numberOfKeys: 1, lua: PREPEND });
  }

  /**
   * Ready once Redis has answered since start. A later outage does not make the instance unready (the whole fleet
   * would drop out of the load balancer): each read or write fails with DependencyUnavailable instead.
   */
  isReady(): boolean {
    return !this.closed && this.conn.hasBeenReady();
  }

  async get<T>(ns: string, key: string): Promise<T | undefined> {
    const k = this.key(ns, key);
    const raw = await this.conn.run((r) => r.get(k));
    return raw === null ? undefined : (JSON.parse(raw) as T);
  }

  async set(ns: string, key: string, value: unknown, opts?: SetOptions): Promise<void> {
    const k = this.key(ns, key);
    const idx = this.index(ns);
    const json = encode(value);
    if (UNLISTED.has(ns)) {
      await this.conn.run((r) => (opts?.ttlMs !== undefined ? r.set(k, json, 'PX', ttl(opts.ttlMs)) : r.set(k, json)));
      return;
    }
    await this.conn.run(async (r) => {
      const m = r.multi();
      if (opts?.ttlMs !== undefined) {
        const now = this.clock.now();
        m.set(k, json, 'PX', ttl(opts.ttlMs));
        m.zadd(idx, now + ttl(opts.ttlMs), key);
        // Keys that expired leave the index here (write-only namespaces such as webhook event ids stay bounded).
        m.zremrangebyscore(idx, '-inf', now);
      } else {
        m.set(k, json);
        m.zadd(idx, '+inf', key);
      }
      check(await m.exec());
    });
  }

  async setIfAbsent(ns: string, key: string, value: unknown, opts?: SetOptions): Promise<boolean> {
    const k = this.key(ns, key);
    const idx = this.index(ns);
    const json = encode(value);
    const ttlMs = opts?.ttlMs === undefined ? undefined : ttl(opts.ttlMs);
    if (UNLISTED.has(ns)) {
      const res = await this.conn.run((r) => (ttlMs !== undefined ? r.set(k, json, 'PX', ttlMs, 'NX') : r.set(k, json, 'NX')));
      return res === 'OK';
    }
    const now = this.clock.now();
    const score = ttlMs !== undefined ? String(now + ttlMs) : '+inf';
    const created = await this.conn.run((r) =>
      (r as ScriptedRedis).billbridgeSetIfAbsent(k, idx, json, ttlMs !== undefined ? String(ttlMs) : '', key, score, String(now)),
    );
    return created === 1;
  }

  async prepend(ns: string, key: string, value: unknown, keep: number, opts?: SetOptions): Promise<void> {
    // A programming error, not an outage: the list keeps no index entry, so entries() could not list it.
    if (!UNLISTED.has(ns)) throw new Error(`State namespace "${ns}" is listable: prepend() is for namespaces read by key`);
    const k = this.key(ns, key);
    const ttlMs = opts?.ttlMs === undefined ? '' : String(ttl(opts.ttlMs));
    await this.conn.run((r) => (r as ScriptedRedis).billbridgePrepend(k, encode(value), String(Math.max(1, keep)), ttlMs));
  }

  async delete(ns: string, key: string): Promise<boolean> {
    const k = this.key(ns, key);
    if (UNLISTED.has(ns)) return (await this.conn.run((r) => r.del(k))) > 0;
    const idx = this.index(ns);
    const res = await this.conn.run(async (r) => check(await r.multi().del(k).zrem(idx, key).exec()));
    return Number(res[0]) > 0;
  }

  async entries<T>(ns: string): Promise<Array<[string, T]>> {
    // A programming error, not an outage: these namespaces keep no index so that they stay bounded.
    if (UNLISTED.has(ns)) throw new Error(`State namespace "${ns}" is not listable`);
    const idx = this.index(ns);
    const now = this.clock.now();
    const keys = await this.conn.run((r) => r.zrangebyscore(idx, `(${now}`, '+inf'));
    const out: Array<[string, T]> = [];
    for (let i = 0; i < keys.length; i += MGET_CHUNK) {
      const chunk = keys.slice(i, i + MGET_CHUNK);
      const keyNames = chunk.map((k) => this.key(ns, k));
      const values = await this.conn.run((r) => r.mget(...keyNames));
      chunk.forEach((k, j) => {
        const raw = values[j];
        // Gone since the index was read (deleted, or expired by Redis's clock a moment before ours).
        if (raw !== null && raw !== undefined) out.push([k, JSON.parse(raw) as T]);
      });
    }
    return out;
  }

  async append(log: string, record: object): Promise<void> {
    checkName('log', log);
    await this.conn.run((r) =>
      r.xadd(`${this.conn.keyPrefix}log:${log}`, 'MAXLEN', '~', this.logMaxEntries, '*', 'r', JSON.stringify(record)),
    );
  }

  /** The newest `count` records of a log, oldest first (status pages and tests read the audit stream). */
  async tail(log: string, count: number): Promise<Array<Record<string, unknown>>> {
    checkName('log', log);
    const rows = await this.conn.run((r) => r.xrevrange(`${this.conn.keyPrefix}log:${log}`, '+', '-', 'COUNT', count));
    return rows.reverse().map(([, fields]) => JSON.parse(fields[1] ?? '{}') as Record<string, unknown>);
  }

  /** The connection is shared with the limiter and sessions; app.ts closes it last. */
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private key(ns: string, key: string): string {
    checkName('namespace', ns);
    return `${this.conn.keyPrefix}state:{${ns}}:k:${key}`;
  }

  private index(ns: string): string {
    checkName('namespace', ns);
    return `${this.conn.keyPrefix}state:{${ns}}:idx`;
  }
}

function encode(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}

/** Redis refuses PX 0; an entry that expires at once still has to be written and gone. */
function ttl(ms: number): number {
  return Math.max(1, Math.ceil(ms));
}

/** A MULTI reply with a failed command throws like a failed single command would. */
function check(res: Array<[Error | null, unknown]> | null): unknown[] {
  if (!res) throw new Error('Redis transaction aborted');
  for (const [err] of res) if (err) throw err;
  return res.map(([, v]) => v);
}
