// Fleet-wide state in Redis: one key per entry with native TTLs, a sorted-set index per namespace, logs as streams.
//   billbridge:state:{<ns>}:k:<key>  the JSON value, PX when it has a TTL (the hash tag keeps a namespace in one slot)
//   billbridge:state:{<ns>}:idx      keys by expiry in ms (+inf without TTL), for entries(); not for UNLISTED namespaces
//   billbridge:log:audit             the audit trail, a stream; each record is one entry with a single field "r" (JSON)
// Bounded under `noeviction`: a write with a TTL drops the index members that expired; UNLISTED namespaces (written per
// delivery, read by key) have no index; entries without a TTL grow with customers, not deliveries; a log keeps about
// its newest `logMaxEntries` records (XADD MAXLEN ~).
import type { Clock } from '../clock.js';
import type { RedisConnection } from './redisClient.js';
import { NS, checkNamespace, encode, type SetOptions, type StateStore } from './types.js';

const AUDIT_STREAM = 'audit';
/** Keys read per MGET in entries(): namespaces may hold thousands of keys, replies stay small. */
const MGET_CHUNK = 500;
/** Records a log (stream) keeps, about (MAXLEN ~ trims whole radix-tree nodes, so a few more may stay). */
const LOG_MAX_ENTRIES = 100_000;

/** Namespaces written per delivery and read by key only: no index (entries() refuses them), one expiring key each. */
const UNLISTED: ReadonlySet<string> = new Set([
  NS.seenActivities,
  NS.webhookEvents,
  NS.approvalCards,
  NS.networkInvites,
  NS.approvalDigests,
  NS.cardMessages,
  NS.tabEvents,
]);

// set() and setIfAbsent(): SET (PX ARGV[2] unless '', NX when ARGV[5] is 'nx'); when it wrote and the namespace is
// listed (ARGV[6]), index the key by its expiry score ARGV[3] and drop members that expired by ARGV[4].
const PUT = `
local set = { 'SET', KEYS[1], ARGV[1] }
if ARGV[2] ~= '' then set[#set + 1] = 'PX'; set[#set + 1] = ARGV[2] end
if ARGV[5] == 'nx' then set[#set + 1] = 'NX' end
if not redis.call(unpack(set)) then return 0 end
if ARGV[6] == 'listed' then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[7])
  -- Keys that expired leave the index here (write-only namespaces such as webhook event ids stay bounded).
  if ARGV[2] ~= '' then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4]) end
end
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

export class RedisStateStore implements StateStore {
  readonly kind = 'redis' as const;
  readonly auditLocation: string;
  private closed = false;

  constructor(
    private readonly conn: RedisConnection,
    private readonly clock: Clock,
    private readonly logMaxEntries = LOG_MAX_ENTRIES,
  ) {
    this.auditLocation = `${conn.location} (stream "${AUDIT_STREAM}")`;
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
    await this.put(ns, key, value, opts, 'always');
  }

  async setIfAbsent(ns: string, key: string, value: unknown, opts?: SetOptions): Promise<boolean> {
    return this.put(ns, key, value, opts, 'nx');
  }

  /** One script writes the value and its index entry together; true when it wrote (always, unless NX found one). */
  private async put(ns: string, key: string, value: unknown, opts: SetOptions | undefined, mode: 'always' | 'nx'): Promise<boolean> {
    const k = this.key(ns, key);
    const idx = this.index(ns);
    const now = this.clock.now();
    const ttlMs = opts?.ttlMs === undefined ? undefined : ttl(opts.ttlMs);
    const args = [
      encode(value),
      ttlMs ?? '',
      ttlMs === undefined ? '+inf' : now + ttlMs,
      now,
      mode,
      UNLISTED.has(ns) ? 'unlisted' : 'listed',
      key,
    ];
    return (await this.conn.eval<number>(PUT, [k, idx], args)) === 1;
  }

  async prepend(ns: string, key: string, value: unknown, keep: number, opts?: SetOptions): Promise<void> {
    // A programming error, not an outage: the list keeps no index entry, so entries() could not list it.
    if (!UNLISTED.has(ns)) throw new Error(`State namespace "${ns}" is listable: prepend() is for namespaces read by key`);
    const k = this.key(ns, key);
    const ttlMs = opts?.ttlMs === undefined ? '' : ttl(opts.ttlMs);
    await this.conn.eval(PREPEND, [k], [encode(value), Math.max(1, keep), ttlMs]);
  }

  async delete(ns: string, key: string): Promise<boolean> {
    const k = this.key(ns, key);
    const idx = this.index(ns);
    // An index member whose key is gone is skipped by entries(), so the two need not change in one transaction.
    const [deleted] = await this.conn.run((r) => Promise.all([r.del(k), r.zrem(idx, key)]));
    return deleted > 0;
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

  async appendAudit(record: object): Promise<void> {
    await this.conn.run((r) =>
      r.xadd(`${this.conn.keyPrefix}log:${AUDIT_STREAM}`, 'MAXLEN', '~', this.logMaxEntries, '*', 'r', JSON.stringify(record)),
    );
  }

  /** The connection is shared with the limiter and sessions; app.ts closes it last. */
  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private key(ns: string, key: string): string {
    checkNamespace(ns);
    return `${this.conn.keyPrefix}state:{${ns}}:k:${key}`;
  }

  private index(ns: string): string {
    checkNamespace(ns);
    return `${this.conn.keyPrefix}state:{${ns}}:idx`;
  }
}

/** Redis refuses PX 0; an entry that expires at once still has to be written and gone. */
function ttl(ms: number): number {
  return Math.max(1, Math.ceil(ms));
}
