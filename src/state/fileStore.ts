// Single-instance state: one JSON file per namespace, atomic rename writes, concurrent writes grouped into one.
import { mkdirSync } from 'node:fs';
import { appendFile, readFile, rename, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Clock } from '../clock.js';
import type { SetOptions, StateStore } from './types.js';

interface Entry {
  v: unknown;
  /** Expiry time in ms since epoch. */
  e?: number;
}

interface Flush {
  running?: Promise<void>;
  queued?: Promise<void>;
}

const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/;

function checkName(kind: string, name: string): void {
  if (!NAME.test(name)) throw new Error(`Invalid state ${kind} name "${name}"`);
}

export class FileStateStore implements StateStore {
  readonly kind = 'file' as const;
  readonly location: string;
  private readonly namespaces = new Map<string, Promise<Map<string, Entry>>>();
  private readonly flushes = new Map<string, Flush>();
  private readonly sweepTimer: NodeJS.Timeout;
  private closed = false;

  constructor(
    dir: string,
    private readonly clock: Clock,
  ) {
    this.location = resolve(dir);
    mkdirSync(this.location, { recursive: true, mode: 0o700 });
    // Expired entries are dropped on read; this keeps memory bounded for write-only namespaces.
    this.sweepTimer = setInterval(() => void this.sweep(), 60_000);
    this.sweepTimer.unref();
  }

  isReady(): boolean {
    return !this.closed;
  }

  async get<T>(ns: string, key: string): Promise<T | undefined> {
    const map = await this.load(ns);
    const entry = map.get(key);
    if (!entry) return undefined;
    if (this.expired(entry)) {
      map.delete(key);
      return undefined;
    }
    return structuredClone(entry.v) as T;
  }

  async set<T>(ns: string, key: string, value: T, opts?: SetOptions): Promise<void> {
    const map = await this.load(ns);
    map.set(key, this.entry(value, opts));
    await this.persist(ns);
  }

  async setIfAbsent<T>(ns: string, key: string, value: T, opts?: SetOptions): Promise<boolean> {
    const map = await this.load(ns);
    const existing = map.get(key);
    if (existing && !this.expired(existing)) return false;
    map.set(key, this.entry(value, opts));
    await this.persist(ns);
    return true;
  }

  async delete(ns: string, key: string): Promise<boolean> {
    const map = await this.load(ns);
    const had = map.delete(key);
    if (had) await this.persist(ns);
    return had;
  }

  async entries<T>(ns: string): Promise<Array<[string, T]>> {
    const map = await this.load(ns);
    const out: Array<[string, T]> = [];
    for (const [k, entry] of map) {
      if (this.expired(entry)) continue;
      out.push([k, structuredClone(entry.v) as T]);
    }
    return out;
  }

  async append(log: string, record: Record<string, unknown>): Promise<void> {
    checkName('log', log);
    await appendFile(join(this.location, `${log}.log`), JSON.stringify(record) + '\n', { mode: 0o600 });
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    const pending = [...this.flushes.values()].flatMap((f) => [f.running, f.queued]).filter(Boolean);
    await Promise.allSettled(pending);
    this.closed = true;
  }

  private entry(value: unknown, opts?: SetOptions): Entry {
    const v = structuredClone(value);
    return opts?.ttlMs !== undefined ? { v, e: this.clock.now() + opts.ttlMs } : { v };
  }

  private expired(entry: Entry): boolean {
    return entry.e !== undefined && entry.e <= this.clock.now();
  }

  private load(ns: string): Promise<Map<string, Entry>> {
    let loaded = this.namespaces.get(ns);
    if (!loaded) {
      checkName('namespace', ns);
      loaded = this.read(ns);
      this.namespaces.set(ns, loaded);
    }
    return loaded;
  }

  private async read(ns: string): Promise<Map<string, Entry>> {
    const map = new Map<string, Entry>();
    let text: string;
    try {
      text = await readFile(this.file(ns), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return map;
      throw err;
    }
    const data = JSON.parse(text) as Record<string, Entry>;
    for (const [k, entry] of Object.entries(data)) {
      if (!this.expired(entry)) map.set(k, entry);
    }
    return map;
  }

  private file(ns: string): string {
    return join(this.location, `${ns}.json`);
  }

  /**
   * Resolves once a write that includes every change made so far is on disk.
   * While one write runs, later changes share a single follow-up write.
   */
  private persist(ns: string): Promise<void> {
    let flush = this.flushes.get(ns);
    if (!flush) {
      flush = {};
      this.flushes.set(ns, flush);
    }
    const f = flush;
    if (f.queued) return f.queued;
    const start = (): Promise<void> => {
      const run = this.write(ns).finally(() => {
        if (f.running === run) f.running = undefined;
      });
      f.running = run;
      return run;
    };
    if (!f.running) return start();
    f.queued = f.running
      .catch(() => undefined)
      .then(() => {
        f.queued = undefined;
        return start();
      });
    return f.queued;
  }

  private async write(ns: string): Promise<void> {
    const map = await this.load(ns);
    const data: Record<string, Entry> = {};
    for (const [k, entry] of map) {
      if (!this.expired(entry)) data[k] = entry;
    }
    const target = this.file(ns);
    const tmp = `${target}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify(data), { mode: 0o600 });
    await rename(tmp, target);
  }

  private async sweep(): Promise<void> {
    for (const [ns, loaded] of this.namespaces) {
      const map = await loaded;
      let dropped = false;
      for (const [k, entry] of map) {
        if (this.expired(entry)) {
          map.delete(k);
          dropped = true;
        }
      }
      if (dropped) await this.persist(ns).catch(() => undefined);
    }
  }
}
