// Short leases in the StateStore (setIfAbsent with a TTL) so that one instance at a time works on an outbox event or a
// digest slot. A lease names its holder (instance, host, pid): a process that restarts on the same host takes over
// the leases its dead predecessor left at once, instead of waiting for them to expire.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Clock } from '../clock.js';
import type { StateStore } from '../state/types.js';

export interface LeaseHolder {
  by: string;
  host: string;
  pid: number;
  /** When the holding process started (ms since epoch): tells a restarted process with the same pid apart. */
  started: number;
  at: number;
}

/** This process's start, fixed for its lifetime. */
const PROCESS_STARTED = Math.round(performance.timeOrigin);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class Leases {
  readonly id = randomUUID();
  private readonly host = hostname();

  constructor(
    private readonly state: StateStore,
    private readonly clock: Clock,
    private readonly ns: string,
    readonly ttlMs: number,
  ) {}

  private holder(): LeaseHolder {
    return { by: this.id, host: this.host, pid: process.pid, started: PROCESS_STARTED, at: this.clock.now() };
  }

  /**
   * A lease left by a process of this host that is gone: its pid is not running, or the pid is ours but the process
   * that held it started earlier (a restarted container keeps pid 1). Two holders in one process are both alive.
   */
  private stale(held: LeaseHolder | undefined): boolean {
    if (!held || typeof held !== 'object' || held.by === this.id || held.host !== this.host || typeof held.pid !== 'number') return false;
    return held.pid === process.pid ? held.started !== PROCESS_STARTED : !alive(held.pid);
  }

  async acquire(key: string): Promise<boolean> {
    if (await this.state.setIfAbsent(this.ns, key, this.holder(), { ttlMs: this.ttlMs })) return true;
    const held = await this.state.get<LeaseHolder>(this.ns, key);
    if (!this.stale(held)) return false;
    await this.state.delete(this.ns, key);
    return this.state.setIfAbsent(this.ns, key, this.holder(), { ttlMs: this.ttlMs });
  }

  /** Extends a lease this instance holds; false when it lost it. */
  async renew(key: string): Promise<boolean> {
    const held = await this.state.get<LeaseHolder>(this.ns, key);
    if (held && held.by !== this.id) return false;
    await this.state.set(this.ns, key, this.holder(), { ttlMs: this.ttlMs });
    return true;
  }

  async release(key: string): Promise<void> {
    const held = await this.state.get<LeaseHolder>(this.ns, key).catch(() => undefined);
    if (held?.by === this.id) await this.state.delete(this.ns, key).catch(() => undefined);
  }
}
