// A job that runs every few seconds, one run at a time, and stops cleanly: the clockwork of the outbox worker and the digests.
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/log.js';
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

/**
 * The digests' job: each run offers every item (a channel's or an approver's schedule) its slot in turn and counts the
 * outcomes `post` answers (undefined: nothing due); a throw counts as failed, and the next run offers the item again.
 */
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
