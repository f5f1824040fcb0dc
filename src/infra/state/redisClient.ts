// The Redis connection of a cluster-mode instance: commands fail fast while Redis is away, reconnects forever, one subscriber.
import { setTimeout as delay } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import { Mutex, Semaphore } from 'redis-semaphore';
import { DependencyUnavailable, errorMessage } from '../../errors.js';
import type { Logger } from '../log.js';

interface RedisConnectionOptions {
  /** config.redisUrl: redis://[:password@]host:port[/db] or rediss://... */
  url: string;
  log: Logger;
  /** Default 2,000 ms: a hung Redis must not hang a turn. */
  commandTimeoutMs?: number;
  maxReconnectDelayMs?: number;
  /** Of every key billbridge writes; default "billbridge:". */
  keyPrefix?: string;
}

/** A Lua script defined on the command connection (defineCommand), called with its keys, then its arguments. */
type Script = (...keysThenArgs: Array<string | number>) => Promise<unknown>;

/** The URL without user name or password, for logs and status. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return 'redis://(unparseable URL)';
  }
}

/**
 * One command connection and one subscriber connection (pub/sub). While Redis is unreachable every command is refused at
 * once (no offline queue, no resend): callers answer "temporarily unavailable" instead of acting on a stale decision.
 */
export class RedisConnection {
  readonly client: Redis;
  readonly location: string;
  readonly keyPrefix: string;
  private readonly subscriber: Redis;
  private readonly handlers = new Map<string, Set<(message: string) => void>>();
  private readonly resubscribed = new Set<() => void>();
  private everReady = false;
  private down = false;
  private closed = false;
  private readonly scripts = new Map<string, Script>();
  /** Settles once the settings of the Redis first connected to were looked at (checkSettings). */
  readonly settingsChecked: Promise<void>;

  constructor(private readonly opts: RedisConnectionOptions) {
    this.location = redactRedisUrl(opts.url);
    this.keyPrefix = opts.keyPrefix ?? 'billbridge:';
    const maxDelay = opts.maxReconnectDelayMs ?? 2_000;
    const options: RedisOptions = {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: opts.commandTimeoutMs ?? 2_000,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(maxDelay, 50 * 2 ** Math.min(times, 10)),
    };
    this.client = new Redis(opts.url, { ...options, connectionName: 'billbridge' });
    this.settingsChecked = new Promise((resolve) => this.client.once('ready', () => void this.checkSettings().finally(resolve)));
    // One clear line when Redis goes away and one when it is back, never an unhandled error event.
    const wentDown = (err: Error | undefined) => {
      this.down = true;
      opts.log.error(
        { redis: this.location, err: err && errorMessage(err) },
        this.everReady
          ? 'Redis connection lost: BILL commands answer "temporarily unavailable" and nothing is sent to BILL until it is back'
          : `Redis at ${this.location} is unreachable: /readyz reports not ready until it answers`,
      );
    };
    this.client.on('error', (err: Error) => {
      if (this.closed) return;
      if (!this.down) wentDown(err);
      else opts.log.debug({ redis: this.location, role: 'commands', err: errorMessage(err) }, 'Redis connection error');
    });
    this.client.on('close', () => {
      if (!this.closed && !this.down && this.everReady) wentDown(undefined);
    });
    this.client.on('ready', () => {
      if (this.down || !this.everReady)
        opts.log.info({ redis: this.location }, this.everReady ? 'Redis connection restored' : 'Redis connected: cluster mode');
      this.down = false;
      this.everReady = true;
    });
    const sub = new Redis(opts.url, { ...options, enableOfflineQueue: true, connectionName: 'billbridge-sub' });
    this.subscriber = sub;
    sub.on('error', (err: Error) => {
      if (!this.closed) opts.log.debug({ redis: this.location, role: 'subscriber', err: errorMessage(err) }, 'Redis connection error');
    });
    sub.on('ready', () => {
      const channels = [...this.handlers.keys()];
      if (channels.length === 0) return;
      sub.subscribe(...channels).then(
        () => this.callEach(this.resubscribed, undefined, 'Redis resubscribe hook failed'),
        (err: unknown) => opts.log.warn({ err: errorMessage(err) }, 'Redis subscribe failed'),
      );
    });
    sub.on('message', (channel: string, message: string) => {
      this.callEach(this.handlers.get(channel) ?? [], message, 'Redis message handler failed');
    });
  }

  ready(): boolean {
    return !this.closed && this.client.status === 'ready';
  }

  /** True once Redis has answered since start (readiness: unavailable at start is "not ready"; lost later is an outage). */
  hasBeenReady(): boolean {
    return this.everReady;
  }

  waitReady(timeoutMs: number): Promise<boolean> {
    if (this.ready()) return Promise.resolve(true);
    const ready = new Promise<boolean>((resolve) => this.client.once('ready', () => resolve(true)));
    return Promise.race([ready, delay(timeoutMs, false, { ref: false })]);
  }

  /** Runs a Redis call; any failure (down, timeout, reply error) becomes DependencyUnavailable('redis'). */
  async run<T>(fn: (client: Redis) => Promise<T>): Promise<T> {
    if (this.closed) throw new DependencyUnavailable('redis');
    try {
      return await fn(this.client);
    } catch (err) {
      throw new DependencyUnavailable('redis', err);
    }
  }

  /** Runs a Lua script (sent once, then named by its SHA); it fails as `run` does. */
  eval<R>(lua: string, keys: string[], args: Array<string | number>): Promise<R> {
    let script = this.scripts.get(lua);
    if (!script) {
      const name = `billbridgeScript${this.scripts.size}`;
      this.client.defineCommand(name, { numberOfKeys: keys.length, lua });
      script = (Reflect.get(this.client, name) as Script).bind(this.client);
      this.scripts.set(lua, script);
    }
    const run = script;
    return this.run(() => run(...keys, ...args) as Promise<R>);
  }

  /** Publishes on a channel (prefixed); false when Redis did not take it. */
  async publish(channel: string, message: string): Promise<boolean> {
    if (!this.ready()) return false;
    try {
      await this.client.publish(this.keyPrefix + channel, message);
      return true;
    } catch (err) {
      this.opts.log.debug({ channel, err: errorMessage(err) }, 'Redis publish failed');
      return false;
    }
  }

  /** Calls handler with every message on a channel (prefixed) from any instance, this one included. */
  subscribe(channel: string, handler: (message: string) => void): void {
    const name = this.keyPrefix + channel;
    let set = this.handlers.get(name);
    if (!set) {
      set = new Set();
      this.handlers.set(name, set);
      if (this.subscriber.status === 'ready') this.subscriber.subscribe(name).catch(() => undefined);
    }
    set.add(handler);
  }

  /** Called every time the subscriber (re)subscribes: whoever relies on messages published while it was away resynchronises. */
  onResubscribe(fn: () => void): void {
    this.resubscribed.add(fn);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const connections = [this.client, this.subscriber];
    for (const c of connections) if (c.status !== 'ready') c.disconnect();
    await Promise.all(connections.filter((c) => c.status === 'ready').map((c) => c.quit().catch(() => c.disconnect())));
  }

  /** Warns once of settings that let acknowledged state vanish; a Redis refusing INFO (some managed ones rename it) is trusted. */
  private async checkSettings(): Promise<void> {
    const info = await this.client.info().catch(() => undefined);
    if (info === undefined) return;
    const field = (name: string): string | undefined => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
    const policy = field('maxmemory_policy');
    if (policy !== undefined && policy !== 'noeviction' && Number(field('maxmemory')) > 0)
      this.opts.log.error(
        { redis: this.location, maxmemoryPolicy: policy },
        `Redis may evict keys (maxmemory-policy ${policy}): billbridge state it acknowledged can vanish under memory pressure; set maxmemory-policy noeviction`,
      );
    if (field('aof_enabled') === '0')
      this.opts.log.warn(
        { redis: this.location },
        'Redis keeps no append-only file (appendonly no): a restart of Redis loses billbridge state stored since its last snapshot; set appendonly yes',
      );
  }

  /** Calls every hook or handler; one that throws is logged and the others still run. */
  private callEach<A>(fns: Iterable<(arg: A) => void>, arg: A, failed: string): void {
    for (const fn of fns) {
      try {
        fn(arg);
      } catch (err) {
        this.opts.log.warn({ err: errorMessage(err) }, failed);
      }
    }
  }
}

/**
 * redis-semaphore lets a failed refresh of a held lock reject unhandled, which would end the process when Redis goes
 * away. These keep the lock (its TTL frees it if it really is lost); a lock found gone is still reported to onLockLost.
 */
export class SafeSemaphore extends Semaphore {
  protected override _refresh(): Promise<boolean> {
    return super._refresh().catch(() => true);
  }
}

export class SafeMutex extends Mutex {
  protected override _refresh(): Promise<boolean> {
    return super._refresh().catch(() => true);
  }
}
