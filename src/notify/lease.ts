// Short leases in the StateStore (setIfAbsent with a TTL) so that one worker at a time works on an outbox event or a
// digest slot. A lease names its holder by a random id made when the holder starts (not host + pid: two containers
// on one host can share a hostname and a pid, and a pid of another pid namespace looks dead from here), so a lease
// is taken over only once it has expired — or, on a single-instance store, when it was last written before this
// process started (only one process may use that store, so its holder is a predecessor that is gone).
import { randomUUID } from 'node:crypto';
import type { Clock } from '../infra/clock.js';
import type { StateStore } from '../infra/state/types.js';

interface LeaseHolder {
  by: string;
  /** When it took or last renewed the lease (ms since epoch). */
  at: number;
}

export class Leases {
  readonly id = randomUUID();
  private readonly startedAt: number;

  constructor(
    private readonly state: StateStore,
    private readonly clock: Clock,
    private readonly ns: string,
    readonly ttlMs: number,
  ) {
    this.startedAt = clock.now();
  }

  private holder(): LeaseHolder {
    return { by: this.id, at: this.clock.now() };
  }

  /** Left on the file store (one process alone uses it) by a predecessor, before this process started. */
  private leftBehind(held: LeaseHolder | undefined): boolean {
    if (this.state.kind !== 'file' || !held || typeof held !== 'object' || held.by === this.id) return false;
    return typeof held.at !== 'number' || held.at < this.startedAt;
  }

  async acquire(key: string): Promise<boolean> {
    if (await this.state.setIfAbsent(this.ns, key, this.holder(), { ttlMs: this.ttlMs })) return true;
    const held = await this.state.get<LeaseHolder>(this.ns, key);
    if (!this.leftBehind(held)) return false;
    await this.state.delete(this.ns, key);
    return this.state.setIfAbsent(this.ns, key, this.holder(), { ttlMs: this.ttlMs });
  }

  /**
   * Extends a lease this holder has; false when it lost it: another holder has it, or it expired (another worker
   * may have finished the work and let go since, so it is not simply taken again). The check and the write are two
   * commands: a takeover in between is possible only when this holder had already gone a whole TTL unrenewed.
   */
  async renew(key: string): Promise<boolean> {
    const held = await this.state.get<LeaseHolder>(this.ns, key);
    if (held?.by !== this.id) return false;
    await this.state.set(this.ns, key, this.holder(), { ttlMs: this.ttlMs });
    return true;
  }

  async release(key: string): Promise<void> {
    const held = await this.state.get<LeaseHolder>(this.ns, key).catch(() => undefined);
    if (held?.by === this.id) await this.state.delete(this.ns, key).catch(() => undefined);
  }
}
