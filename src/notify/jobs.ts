// The clockwork of the outbox worker and the digests: a job that runs every few seconds, one run at a time, and stops
// cleanly; and short leases in the StateStore so that one worker at a time works on an outbox event or a digest slot.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/log.js';
import type { StateStore } from '../infra/state/types.js';
import { errorMessage } from '../errors.js';

export class Periodic<R> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<R> | undefined;
  private queued: Promise<R> | undefined;
  /** True once stop() was called; a long run checks it between items. */
  stopped = false;

  constructor(
    private readonly job: () => Promise<R>,
    /** `what` names the job in the log line when a run fails. */
    private readonly opts: { everyMs: number; log: Logger; what: string },
  ) {}

  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      this.tick().catch((err: unknown) => this.opts.log.error({ err: errorMessage(err) }, `${this.opts.what} failed`));
    }, this.opts.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await Promise.allSettled([this.running, this.queued]);
  }

  /** Runs the job now. A call made while one runs gets one fresh run after it (with its own "now"). */
  tick(): Promise<R> {
    if (!this.running) {
      const run = this.job().finally(() => {
        if (this.running === run) this.running = undefined;
      });
      this.running = run;
      return run;
    }
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.tick();
      });
    return this.queued;
  }
}

/** Runs `work` once everything queued before it under `key` has settled; a key's queue is dropped when it empties. */
export function inTurn<T>(queues: Map<string, Promise<unknown>>, key: string, work: () => Promise<T>): Promise<T> {
  const result = (queues.get(key) ?? Promise.resolve()).then(work);
  const tail = result.catch(() => undefined);
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return result;
}

/** The digests' job: each run offers every schedule its slot and counts `post`'s outcomes; a throw counts as failed. */
export function slotJob<T, K extends string>(opts: {
  what: string;
  clock: Clock;
  log: Logger;
  outcomes: Record<K, 0>;
  items: () => Promise<T[]>;
  post: (item: T, now: number) => Promise<K | 'failed' | undefined>;
  failed: (item: T, err: unknown) => void;
}): Periodic<Record<K | 'failed', number>> {
  const job = new Periodic<Record<K | 'failed', number>>(
    async () => {
      const report: Record<K | 'failed', number> = { ...opts.outcomes, failed: 0 };
      const now = opts.clock.now();
      for (const item of job.stopped ? [] : await opts.items()) {
        if (job.stopped) break;
        try {
          const outcome = await opts.post(item, now);
          if (outcome) report[outcome]++;
        } catch (err) {
          report.failed++;
          opts.failed(item, err);
        }
      }
      return report;
    },
    { everyMs: 30_000, log: opts.log, what: opts.what },
  );
  return job;
}

const SLOT_LEASE_MS = 10 * 60_000;
/** A handled slot is remembered this long (longer than any catch-up window). */
const SLOT_MARKER_TTL_MS = 8 * 24 * 3_600_000;

/** What the work on a claimed slot may do besides returning (which marks the slot done). */
interface SlotClaim {
  /** Call just before the send: false when this worker lost the lease meanwhile (the slot is left to the new holder). */
  sending: () => Promise<boolean>;
  /** Leaves the slot open: a later tick tries it again, at once or after `afterMs`. */
  reopen: (afterMs?: number) => Promise<void>;
}

/**
 * Runs a digest slot's work once across restarts and instances: claimed with a short lease, marked "sending" before the
 * message goes out and "done" when the work returns; any marker makes later ticks leave it alone. A process killed
 * before "sending" leaves only its lease (the slot is worked again once it expires); one killed during the send leaves
 * "sending" (at most once). A throw leaves the slot as it was.
 */
export function slotClaims(state: StateStore, clock: Clock, ns: string) {
  const leases = new Leases(state, clock, ns, SLOT_LEASE_MS);
  return async <R>(key: string, work: (claim: SlotClaim) => Promise<R>): Promise<R | undefined> => {
    if (await state.get(ns, key)) return;
    const lease = `${key}|lease`;
    if (!(await leases.acquire(lease))) return;
    const mark = (marker: 'sending' | 'done' | 'retry', ttlMs = SLOT_MARKER_TTL_MS) =>
      state.set(ns, key, { state: marker, at: clock.now() }, { ttlMs });
    // The work's return marks the slot done, unless it left the slot open or lost the lease.
    const end = { done: true };
    try {
      // Another instance may have finished the slot between our look and our lease.
      if (await state.get(ns, key)) return;
      const result = await work({
        sending: async () => {
          end.done = await leases.renew(lease);
          if (end.done) await mark('sending');
          return end.done;
        },
        reopen: async (afterMs) => {
          end.done = false;
          if (afterMs) await mark('retry', afterMs);
          else await state.delete(ns, key);
        },
      });
      if (end.done) await mark('done');
      return result;
    } finally {
      await leases.release(lease);
    }
  };
}

// A lease (setIfAbsent with a TTL) names its holder by a random id made when the holder starts (not host + pid: two
// containers can share a hostname and a pid, and a pid of another namespace looks dead from here). It is taken over
// only once it has expired, or, on the single-process file store, when written before this process started (its
// holder is a predecessor that is gone).
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
   * Extends a lease this holder has; false when another holder has it or it expired (another worker may have finished
   * since, so it is not taken again). A takeover between check and write needs a whole TTL unrenewed first.
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
