// The delivery worker: takes accepted events from the durable outbox, routes them to the channels subscribed to
// their kind (re-checking each channel's binding right before it sends), sends one card per channel through the
// Bot Framework, retries what Teams asks to retry, and dead-letters what cannot be delivered.
//
// - Routing happens once per event and is stored with it; each channel's delivery state is stored after each send,
//   so a restart resends at most the one send that was in flight when the process died.
// - Retries: 429, 412, 502, 503, 504 (Teams' list), 500 and network failures, with backoff (Retry-After when Teams
//   gives one) and a bounded number of tries; then a dead letter (NS.deadLetters, shown by `status`).
// - 403 BotNotInConversationRoster or 404: the bot can no longer post there; the channel's subscriptions go.
// - Instances share the outbox: an event is worked on under a lease (setIfAbsent with a TTL), so two instances
//   never send the same event, and a crashed instance's lease expires.
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { errorMessage } from '../errors.js';
import type { BindingScope } from '../state/bindings.js';
import { NS, type StateStore } from '../state/types.js';
import { EVENT_ID_TTL_MS, outboxKey } from './receiver.js';
import { channelScope, targetOf, type ChannelSubscription, type ChannelSubscriptions } from './subscriptions.js';
import type { ChannelSender, ChannelTarget, DeliveryState, Enrichment, NotificationPresenter, OutboxEvent, SendOutcome } from './types.js';

/** Waits before the 2nd, 3rd... try; the number of entries + 1 is the most tries a delivery gets. */
export const RETRY_DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000];
export const DEAD_LETTER_TTL_MS = 30 * 24 * 3_600_000;
const LEASE_MS = 120_000;
const POLL_MS = 5_000;
/** Channels sent to at once for one event. */
const PARALLEL_SENDS = 4;

const RETRY_STATUSES = new Set([0, 429, 412, 500, 502, 503, 504]);

export interface DeadLetter {
  eventId: string;
  type: string;
  orgId: string;
  tenantId: string;
  teamId: string;
  channelId: string;
  kind: string;
  tries: number;
  status: number;
  code: string | undefined;
  reason: string;
  at: number;
}

export interface WorkerDeps {
  state: StateStore;
  clock: Clock;
  log: Logger;
  subscriptions: ChannelSubscriptions;
  /** The org a channel is bound to right now (OrgBindings.resolve). */
  resolveOrg(scope: BindingScope): Promise<string | undefined>;
  sender: ChannelSender;
  presenter: NotificationPresenter;
  /** Names and numbers the card needs beyond the payload (one look-up per event). */
  enrich(event: OutboxEvent): Promise<Enrichment>;
  /** Keeps the number indexes current with the record in the event. */
  apply(event: OutboxEvent): Promise<void>;
  /** The bot was removed from a channel (403 roster / 404): its subscriptions (and digest) are gone. */
  onChannelGone(target: ChannelTarget, reason: string): Promise<void>;
  retryDelaysMs?: number[];
  pollMs?: number;
}

export interface DrainReport {
  sent: number;
  retried: number;
  dead: number;
  dropped: number;
  finished: number;
}

const isEvent = (v: unknown): v is OutboxEvent => v !== null && typeof v === 'object' && (v as OutboxEvent).v === 1 && typeof (v as OutboxEvent).eventId === 'string';

function jitter(ms: number): number {
  return Math.round(ms * (0.8 + Math.random() * 0.4));
}

export class DeliveryWorker {
  private readonly instance = randomUUID();
  private readonly retryDelaysMs: number[];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<DrainReport> | undefined;
  private again = false;
  private stopped = false;
  private kicked: NodeJS.Immediate | undefined;

  constructor(private readonly deps: WorkerDeps) {
    this.retryDelaysMs = deps.retryDelaysMs ?? RETRY_DELAYS_MS;
  }

  /** Polls the outbox (retries, events another instance left behind) and drains what is there now. */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => this.kick(), this.deps.pollMs ?? POLL_MS);
    this.timer.unref();
    this.kick();
  }

  /** Drains soon (after the current I/O), without waiting. */
  kick(): void {
    if (this.stopped || this.kicked) return;
    this.kicked = setImmediate(() => {
      this.kicked = undefined;
      this.drain().catch((err) => this.deps.log.error({ err: errorMessage(err) }, 'notification worker failed'));
    });
  }

  /** Works through every due delivery; concurrent calls share one run (plus one more if asked meanwhile). */
  drain(): Promise<DrainReport> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = (async () => {
      const total: DrainReport = { sent: 0, retried: 0, dead: 0, dropped: 0, finished: 0 };
      do {
        this.again = false;
        const r = await this.pass();
        for (const k of Object.keys(total) as Array<keyof DrainReport>) total[k] += r[k];
      } while (this.again && !this.stopped);
      return total;
    })();
    this.running = run.finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.kicked) clearImmediate(this.kicked);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** Events in the outbox and deliveries still to make, for `status`. */
  async depth(): Promise<{ events: number; pending: number; nextAt: number | undefined }> {
    let events = 0;
    let pending = 0;
    let nextAt: number | undefined;
    for (const [key, ev] of await this.deps.state.entries<OutboxEvent>(NS.outbox)) {
      if (!key.startsWith('ev|') || !isEvent(ev)) continue;
      events++;
      for (const t of Object.values(ev.targets ?? {})) {
        if (t.state !== 'pending') continue;
        pending++;
        nextAt = nextAt === undefined ? t.nextAt : Math.min(nextAt, t.nextAt);
      }
    }
    return { events, pending, nextAt };
  }

  private async pass(): Promise<DrainReport> {
    const report: DrainReport = { sent: 0, retried: 0, dead: 0, dropped: 0, finished: 0 };
    const now = this.deps.clock.now();
    const due = (await this.deps.state.entries<OutboxEvent>(NS.outbox))
      .filter(([key, ev]) => key.startsWith('ev|') && isEvent(ev))
      .map(([, ev]) => ev)
      .filter((ev) => !ev.targets || Object.values(ev.targets).some((t) => t.state === 'pending' && t.nextAt <= now) || Object.values(ev.targets).every((t) => t.state !== 'pending'))
      .sort((a, b) => a.receivedAt - b.receivedAt);
    for (const ev of due) {
      if (this.stopped) break;
      const lease = `lease|${ev.eventId}`;
      if (!(await this.deps.state.setIfAbsent(NS.outbox, lease, { by: this.instance, at: now }, { ttlMs: LEASE_MS }))) continue;
      try {
        // Another instance may have finished or advanced it since the list was read.
        const fresh = await this.deps.state.get<OutboxEvent>(NS.outbox, outboxKey(ev.eventId));
        if (fresh && isEvent(fresh)) await this.process(fresh, report);
      } catch (err) {
        this.deps.log.error({ eventId: ev.eventId, err: errorMessage(err) }, 'notification delivery failed; will try again');
      } finally {
        const held = await this.deps.state.get<{ by: string }>(NS.outbox, lease).catch(() => undefined);
        if (held?.by === this.instance) await this.deps.state.delete(NS.outbox, lease).catch(() => undefined);
      }
    }
    return report;
  }

  private async process(ev: OutboxEvent, report: DrainReport): Promise<void> {
    const { state, log } = this.deps;
    const elog = log.child({ eventId: ev.eventId, eventType: ev.type, orgId: ev.orgId });
    const save = () => state.set(NS.outbox, outboxKey(ev.eventId), ev);
    if (!ev.applied) {
      await this.deps.apply(ev).catch((err) => elog.warn({ err: errorMessage(err) }, 'index update from a webhook event failed'));
      ev.applied = true;
      await save();
    }
    if (!ev.targets) {
      ev.targets = {};
      for (const [key, sub] of await this.deps.subscriptions.forKind(ev.kind)) {
        if ((await this.deps.resolveOrg(channelScope(targetOf(sub)))) === ev.orgId) ev.targets[key] = { state: 'pending', tries: 0, nextAt: this.deps.clock.now() };
      }
      await save();
      elog.info({ channels: Object.keys(ev.targets).length }, 'notification routed');
    }
    const pending = () => Object.entries(ev.targets!).filter(([, t]) => t.state === 'pending');
    if (pending().length > 0 && !ev.enrichment) {
      ev.enrichment = await this.deps.enrich(ev).catch((err) => {
        elog.info({ err: errorMessage(err) }, 'notification details could not be looked up; the card uses the payload only');
        return {};
      });
      await save();
    }
    const now = this.deps.clock.now();
    const due = pending().filter(([, t]) => t.nextAt <= now);
    if (due.length > 0) {
      const message = this.deps.presenter.event(ev, now);
      // Sends to different channels run side by side; each result is stored as soon as it is known.
      let saving = Promise.resolve();
      const record = () => {
        saving = saving.then(save, save);
        return saving;
      };
      for (let i = 0; i < due.length; i += PARALLEL_SENDS) {
        await Promise.all(
          due.slice(i, i + PARALLEL_SENDS).map(async ([key, target]) => {
            await this.deliver(ev, key, target, message, report, elog);
            await record();
          }),
        );
      }
    }
    if (Object.values(ev.targets!).every((t) => t.state !== 'pending')) {
      // The id stays recorded after the outbox entry goes, so a late duplicate from BILL finds it.
      await state.set(NS.webhookEvents, ev.eventId, { at: this.deps.clock.now(), type: ev.type }, { ttlMs: EVENT_ID_TTL_MS });
      await state.delete(NS.outbox, outboxKey(ev.eventId));
      report.finished++;
    }
  }

  private async deliver(ev: OutboxEvent, key: string, target: DeliveryState, message: Parameters<ChannelSender['send']>[1], report: DrainReport, elog: Logger): Promise<void> {
    const sub = await this.deps.subscriptions.get(key);
    if (!sub) {
      Object.assign(target, { state: 'dropped', lastError: 'unsubscribed' });
      report.dropped++;
      return;
    }
    const channel = targetOf(sub);
    const clog = elog.child({ teamId: sub.teamId, channelId: sub.channelId });
    if ((await this.deps.resolveOrg(channelScope(channel))) !== ev.orgId) {
      clog.info('channel no longer bound to the event\'s organisation; not sent');
      Object.assign(target, { state: 'dropped', lastError: 'binding changed' });
      report.dropped++;
      return;
    }
    // Keep the lease while sends wait on Teams' budgets.
    await this.deps.state.set(NS.outbox, `lease|${ev.eventId}`, { by: this.instance, at: this.deps.clock.now() }, { ttlMs: LEASE_MS });
    target.tries++;
    let outcome: SendOutcome;
    try {
      outcome = await this.deps.sender.send(sub.reference, message);
    } catch (err) {
      outcome = { ok: false, status: 0, message: errorMessage(err) };
    }
    const now = this.deps.clock.now();
    if (outcome.ok) {
      Object.assign(target, { state: 'sent', sentAt: now, lastError: undefined });
      report.sent++;
      clog.info({ tries: target.tries }, 'notification sent');
      return;
    }
    target.lastError = `${outcome.status}${outcome.code ? ` ${outcome.code}` : ''}`;
    if ((outcome.status === 403 && outcome.code === 'BotNotInConversationRoster') || outcome.status === 404) {
      Object.assign(target, { state: 'dropped' });
      report.dropped++;
      clog.warn({ status: outcome.status, code: outcome.code }, 'bot is no longer in the channel; its subscriptions are removed');
      await this.deps.onChannelGone(channel, outcome.code ?? `HTTP ${outcome.status}`).catch((err) => clog.error({ err: errorMessage(err) }, 'could not remove the channel\'s subscriptions'));
      return;
    }
    const retryable = RETRY_STATUSES.has(outcome.status) || outcome.status === 401;
    if (retryable && target.tries <= this.retryDelaysMs.length) {
      const wait = Math.max(outcome.retryAfterMs ?? 0, jitter(this.retryDelaysMs[target.tries - 1]!));
      target.nextAt = now + wait;
      report.retried++;
      clog.info({ status: outcome.status, code: outcome.code, tries: target.tries, retryInMs: wait }, 'notification send failed; will retry');
      return;
    }
    Object.assign(target, { state: 'dead' });
    report.dead++;
    await this.deadLetter(ev, sub, target, outcome);
    clog.warn({ status: outcome.status, code: outcome.code, tries: target.tries }, 'notification could not be delivered; dead-lettered');
  }

  private async deadLetter(ev: OutboxEvent, sub: ChannelSubscription, target: DeliveryState, outcome: Extract<SendOutcome, { ok: false }>): Promise<void> {
    const letter: DeadLetter = {
      eventId: ev.eventId,
      type: ev.type,
      orgId: ev.orgId,
      tenantId: sub.tenantId,
      teamId: sub.teamId,
      channelId: sub.channelId,
      kind: sub.kind,
      tries: target.tries,
      status: outcome.status,
      code: outcome.code,
      reason: outcome.message.slice(0, 200),
      at: this.deps.clock.now(),
    };
    await this.deps.state.set(NS.deadLetters, `${ev.eventId}|${sub.tenantId}|${sub.teamId}|${sub.channelId}`, letter, { ttlMs: DEAD_LETTER_TTL_MS });
  }
}
