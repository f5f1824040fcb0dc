// The delivery worker: takes accepted events from the durable outbox, routes them to the channels subscribed to
// their kind (re-checking each channel's binding right before it sends), sends one card per channel, retries what
// Teams asks to retry, and dead-letters what cannot be delivered.
//
// Guarantee: at-least-once delivery to each channel routed to, never a silent loss. A card goes out twice only when
// the process dies (or the store refuses the write, or the lease is lost) between Teams accepting a send and the
// worker storing it.
// - Routing is stored with the event once; each channel's delivery state is stored after each send.
// - One lane per channel: its cards go out in the order BILL's events arrived, so a channel Teams throttles (60 sends
//   per 30 s) delays only itself.
// - The card is drawn from the record as BILL answers a GET (a holder of the webhook key could put any amount in a
//   payload). A record BILL no longer has is not posted; see `unconfirmed` for when BILL cannot answer.
// - Retries: Teams' list (429, 412, 502, 503, 504) plus 500, 401 and network failures, with backoff (Retry-After when
//   given) and a bounded number of tries; then a dead letter (NS.deadLetters, shown by `status`).
// - Instances share the outbox: an event is worked on under a lease (jobs.ts), renewed while its sends wait and
//   checked right before each send; a worker that lost it neither sends nor writes the event any more.
import type { Logger } from '../infra/log.js';
import { BillApiError, errorMessage } from '../errors.js';
import { NS } from '../infra/state/types.js';
import { inTurn, Leases, Periodic } from './jobs.js';
import { EVENT_ID_TTL_MS, eventKey, outboxKey } from './receiver.js';
import { channelScope, type ChannelSubscription, type ChannelSubscriptions } from './subscriptions.js';
import type { ConfirmedRecord } from './project.js';
import {
  removedFromChannel,
  type ChannelTarget,
  type DeliveryState,
  type Enrichment,
  type NotificationPresenter,
  type NotifyDeps,
  type OutboxEvent,
  type SendOutcome,
} from './types.js';

/** Waits before the 2nd, 3rd... try; the number of entries + 1 is the most tries a delivery gets. */
export const RETRY_DELAYS_MS = [5_000, 30_000, 120_000, 600_000, 1_800_000];
const DEAD_LETTER_TTL_MS = 30 * 24 * 3_600_000;
/**
 * An event whose record BILL has not answered for this long (sign-in refused, BILL down) is a dead letter after its
 * next failed read. Longer than BILL redelivers an event (hours) and a weekend; shorter than event ids are kept (8 days).
 */
export const UNREADABLE_FOR_MS = 3 * 24 * 3_600_000;
/** A dead instance's events wait at most this long for another instance. */
const LEASE_MS = 30_000;
const POLL_MS = 5_000;
/** On shutdown, sends already under way get this long to finish; what is left goes out after the restart. */
const STOP_GRACE_MS = 10_000;

const RETRY_STATUSES = new Set([0, 401, 412, 429, 500, 502, 503, 504]);

/** Why a delivery was set aside without Teams refusing a send: BILL refused or never answered the read, or the card could not be drawn. */
type SetAside = 'refused' | 'unreadable' | 'undrawable';

export type DeadLetter = Pick<OutboxEvent, 'eventId' | 'type' | 'orgId'> &
  Pick<ChannelSubscription, keyof ChannelTarget | 'kind'> &
  Pick<DeliveryState, 'tries'> & { status: number; code: string | undefined; reason: string; at: number; cause?: SetAside };

export type WorkerDeps = Pick<NotifyDeps, 'state' | 'clock' | 'log' | 'resolveOrg' | 'sender' | 'presenter'> & {
  subscriptions: ChannelSubscriptions;
  /** The event's record as BILL has it now (confirmRecord); throws when BILL is unreachable or busy. */
  confirm(event: OutboxEvent): Promise<ConfirmedRecord>;
  /** Names and numbers the card needs beyond the record (one look-up per event). */
  enrich(event: OutboxEvent): Promise<Enrichment>;
  /** Marks the records the event names stale in the mirror. */
  apply(event: OutboxEvent): Promise<void>;
  /** The bot was removed from a channel (403 roster / 404): its subscriptions (and digest) are gone. */
  onChannelGone(target: ChannelTarget, reason: string): Promise<void>;
  /** How long a lease lasts unrenewed; default LEASE_MS. */
  leaseMs?: number;
};

/** An event this instance holds the lease of while some of its sends wait in lanes. */
interface Held {
  ev: OutboxEvent;
  log: Logger;
  message?: ReturnType<NotificationPresenter['event']>;
  /** Subscription keys whose sends are queued or under way. */
  queued: Set<string>;
  /** Writes of the record, one after another. */
  saving: Promise<void>;
  settling?: boolean;
  /** Another worker holds the event's lease now: nothing more is sent or written for it here. */
  lost?: boolean;
}

const isObject = (v: unknown): v is object => v !== null && typeof v === 'object';

/** An outbox entry this version can work on; any other shape is passed over (a null delivery once stalled every org's events). */
const isEvent = (v: unknown): v is OutboxEvent => {
  if (!isObject(v)) return false;
  const ev = v as Partial<OutboxEvent> & { v?: unknown };
  if (ev.v !== 1 || typeof ev.eventId !== 'string' || typeof ev.orgId !== 'string' || !isObject(ev.entity)) return false;
  return ev.targets === undefined || (isObject(ev.targets) && Object.values(ev.targets).every(isObject));
};

/** The deliveries of the event still to be made (none before it is routed). */
const pendingOf = (ev: OutboxEvent): DeliveryState[] => Object.values(ev.targets ?? {}).filter((t) => t.state === 'pending');

const jitter = (ms: number): number => Math.round(ms * (0.8 + Math.random() * 0.4));

/** The event's own key (its organisation and id): what this instance holds, leases and dead letters are keyed by. */
const keyOf = (ev: Pick<OutboxEvent, 'orgId' | 'eventId'>): string => eventKey(ev.orgId, ev.eventId);

const leaseKey = (ev: Pick<OutboxEvent, 'orgId' | 'eventId'>) => `lease|${keyOf(ev)}`;

export function deliveryWorker(deps: WorkerDeps) {
  const { state, clock } = deps;
  const leaseMs = deps.leaseMs ?? LEASE_MS;
  const leases = new Leases(state, clock, NS.outbox, leaseMs);
  let renewedAt = -Infinity;
  const held = new Map<string, Held>();
  const lanes = new Map<string, Promise<unknown>>();
  let kicked: NodeJS.Immediate | undefined;

  /** The outbox's events, as this instance holds them, in the order BILL's events arrived. */
  const events = async (): Promise<OutboxEvent[]> =>
    (await state.entries<OutboxEvent>(NS.outbox))
      .filter(([key, ev]) => key.startsWith('ev|') && isEvent(ev))
      .map(([, ev]) => held.get(keyOf(ev))?.ev ?? ev)
      .sort((a, b) => a.receivedAt - b.receivedAt);

  const lanesIdle = async (): Promise<void> => {
    while (lanes.size > 0) await Promise.all([...lanes.values()]);
  };

  /** Renews the event's lease; false (and the event is given up here) when another worker has it now. */
  const stillHeld = async (h: Held): Promise<boolean> => {
    if (!h.lost && !(await leases.renew(leaseKey(h.ev)))) {
      h.lost = true;
      h.log.warn('outbox lease lost to another worker; this one stops working on the event without sending');
    }
    return !h.lost;
  };

  /** Stores the event after the writes queued before, unless another worker holds it by then. */
  const save = (h: Held): Promise<void> => {
    const write = async () => {
      if (!h.lost) await state.set(NS.outbox, outboxKey(h.ev.orgId, h.ev.eventId), h.ev);
    };
    h.saving = h.saving.then(write, write);
    return h.saving;
  };

  /** Stores the event as prepared so far, if it is still ours; false when it is not. */
  const checkpoint = async (h: Held): Promise<boolean> => {
    if (!(await stillHeld(h))) return false;
    await save(h);
    return true;
  };

  /**
   * BILL did not answer for the event's record. Down or busy: the deliveries wait and it is read again (never a card
   * from the payload). Refused as a wrong request (a 4xx that is no not-found, sign-in refusal or limit: asking again
   * cannot change that) or unanswered for UNREADABLE_FOR_MS (it would be read forever): its deliveries are dead letters.
   */
  const unconfirmed = async (h: Held, err: unknown): Promise<undefined> => {
    const { ev, log } = h;
    const tries = (ev.confirmTries ?? 0) + 1;
    const refused = err instanceof BillApiError && err.category === 'validation';
    if (!refused && clock.now() - ev.receivedAt < UNREADABLE_FOR_MS) {
      ev.confirmTries = tries;
      const wait = jitter(RETRY_DELAYS_MS[Math.min(tries, RETRY_DELAYS_MS.length) - 1] ?? POLL_MS);
      const nextAt = clock.now() + wait;
      for (const t of pendingOf(ev)) t.nextAt = Math.max(t.nextAt, nextAt);
      log.info({ err: errorMessage(err), tries, retryInMs: wait }, 'record of a webhook event could not be read from BILL; will try again');
      return;
    }
    const answer = err instanceof BillApiError ? { status: err.status, code: err.code } : { status: 0, code: undefined };
    const why = refused
      ? { ...answer, message: 'BILL refused to read the record', cause: 'refused' as const }
      : { ...answer, message: `BILL did not answer for the record: ${errorMessage(err)}`, cause: 'unreadable' as const };
    for (const [key, target] of Object.entries(ev.targets ?? {})) {
      if (target.state !== 'pending') continue;
      const sub = await deps.subscriptions.get(key);
      if (sub) await deadLetter(ev, sub, target, why);
      else target.state = 'dropped';
    }
    ev.confirmed = true;
    if (refused) log.warn(answer, 'record of a webhook event was refused by BILL; nothing posted, dead-lettered');
    else
      log.warn(
        { ...answer, err: errorMessage(err), tries },
        'record of a webhook event could not be read from BILL for too long; nothing posted, dead-lettered',
      );
  };

  /** Index updates with routing, BILL's record and details for the card, each once and stored as soon as done. */
  const prepare = async (h: Held): Promise<void> => {
    const { ev, log } = h;
    if (!ev.targets) {
      await deps.apply(ev).catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'index update from a webhook event failed'));
      const targets: Record<string, DeliveryState> = {};
      for (const [key, sub] of await deps.subscriptions.forEvent(ev.type)) {
        if ((await deps.resolveOrg(channelScope(sub))) === ev.orgId) targets[key] = { state: 'pending', tries: 0, nextAt: clock.now() };
      }
      ev.targets = targets;
      if (!(await checkpoint(h))) return;
      log.info({ channels: Object.keys(targets).length }, 'notification routed');
    }
    if (!ev.confirmed && pendingOf(ev).length > 0) {
      const got = await deps.confirm(ev).catch((err: unknown) => unconfirmed(h, err));
      if (!got) {
        await checkpoint(h);
        return;
      }
      if (got.state === 'gone') {
        // Deleted since, or never there: a card about a record nobody can open would only puzzle the channel.
        for (const t of pendingOf(ev)) t.state = 'dropped';
        log.info('record of a webhook event is not in BILL; nothing posted');
      } else ev.entity = got.entity;
      ev.confirmed = true;
      if (!(await checkpoint(h))) return;
    }
    if (!ev.enrichment && pendingOf(ev).length > 0) {
      ev.enrichment = await deps.enrich(ev).catch((err: unknown) => {
        log.info({ err: errorMessage(err) }, 'notification details could not be looked up; the card shows the record without them');
        return {};
      });
      await checkpoint(h);
    }
  };

  /** Nothing of the event is queued any more: finish it, or let go of it until its next retry is due. */
  const settle = async (h: Held): Promise<void> => {
    if (h.settling) return;
    h.settling = true;
    const { ev } = h;
    try {
      await h.saving.catch(() => undefined);
      if (h.lost) return;
      if (pendingOf(ev).length === 0) {
        // The id stays recorded after the outbox entry goes, so a late duplicate from BILL finds it.
        await state.set(NS.webhookEvents, keyOf(ev), { at: clock.now(), type: ev.type }, { ttlMs: EVENT_ID_TTL_MS });
        await state.delete(NS.outbox, outboxKey(ev.orgId, ev.eventId));
      }
    } finally {
      held.delete(keyOf(ev));
      await leases.release(leaseKey(ev));
    }
  };

  const deliver = async (h: Held, key: string, target: DeliveryState): Promise<void> => {
    const { ev } = h;
    const sub = await deps.subscriptions.get(key);
    if (!sub) {
      target.state = 'dropped';
      return;
    }
    const clog = h.log.child({ teamId: sub.teamId, channelId: sub.channelId });
    if ((await deps.resolveOrg(channelScope(sub))) !== ev.orgId) {
      clog.info("channel no longer bound to the event's organisation; not sent");
      target.state = 'dropped';
      return;
    }
    // Right before the send: still ours? (Also keeps the lease while the send waits on Teams' budget.)
    if (!(await stillHeld(h))) return;
    target.tries++;
    let outcome: SendOutcome;
    try {
      // A card that cannot be drawn is a failed try like a failed send: backed off, then a dead letter.
      h.message ??= deps.presenter.event(ev);
      outcome = await deps.sender.send(sub.reference, h.message);
    } catch (err) {
      outcome = { ok: false, status: 0, message: errorMessage(err) };
    }
    const now = clock.now();
    if (outcome.ok) {
      target.state = 'sent';
      clog.info({ tries: target.tries }, 'notification sent');
      return;
    }
    const removed = removedFromChannel(outcome);
    if (removed) {
      target.state = 'dropped';
      clog.warn({ status: outcome.status, code: outcome.code }, 'bot is no longer in the channel; its subscriptions are removed');
      await deps
        .onChannelGone(sub, removed)
        .catch((err: unknown) => clog.error({ err: errorMessage(err) }, "could not remove the channel's subscriptions"));
      return;
    }
    // The draw threw (the message is kept once drawn): no send was made, and Teams said nothing.
    const undrawn = h.message === undefined;
    const said = undrawn
      ? { err: outcome.message, tries: target.tries }
      : { status: outcome.status, code: outcome.code, tries: target.tries };
    const delay = RETRY_DELAYS_MS[target.tries - 1];
    if (RETRY_STATUSES.has(outcome.status) && delay !== undefined) {
      const wait = Math.max(outcome.retryAfterMs ?? 0, jitter(delay));
      target.nextAt = now + wait;
      clog.info(
        { ...said, retryInMs: wait },
        undrawn ? 'notification card could not be drawn; will try again' : 'notification send failed; will retry',
      );
      return;
    }
    await deadLetter(ev, sub, target, { ...outcome, cause: undrawn ? 'undrawable' : undefined });
    clog.warn(said, undrawn ? 'notification card could not be drawn; dead-lettered' : 'notification could not be delivered; dead-lettered');
  };

  /** Gives up a delivery: the target is dead and a dead letter (shown by `status`) says why. */
  const deadLetter = async (
    ev: OutboxEvent,
    sub: ChannelSubscription,
    target: DeliveryState,
    why: { status: number; code?: string; message: string; cause?: SetAside },
  ): Promise<void> => {
    target.state = 'dead';
    const letter: DeadLetter = {
      eventId: ev.eventId,
      type: ev.type,
      orgId: ev.orgId,
      tenantId: sub.tenantId,
      teamId: sub.teamId,
      channelId: sub.channelId,
      kind: sub.kind,
      tries: target.tries,
      status: why.status,
      code: why.code,
      reason: why.message.slice(0, 200),
      at: clock.now(),
      cause: why.cause,
    };
    await state.set(NS.deadLetters, `${keyOf(ev)}|${sub.tenantId}|${sub.teamId}|${sub.channelId}`, letter, { ttlMs: DEAD_LETTER_TTL_MS });
  };

  /** Queues every pending send of the event that is due and not queued yet; how many were queued. */
  const enqueueDue = (h: Held, now: number): number => {
    let n = 0;
    for (const [key, target] of Object.entries(h.ev.targets ?? {})) {
      if (target.state !== 'pending' || target.nextAt > now || h.queued.has(key)) continue;
      h.queued.add(key);
      n++;
      // One lane per channel: a subscription key is "<channel key>|<kind>".
      void inTurn(lanes, key.slice(0, key.lastIndexOf('|')), async () => {
        try {
          if (!passes.stopped && !h.lost) {
            await deliver(h, key, target);
            await save(h);
          }
        } catch (err) {
          h.log.error({ err: errorMessage(err) }, 'notification send failed unexpectedly; will try again');
        } finally {
          h.queued.delete(key);
          if (h.queued.size === 0)
            await settle(h).catch((err: unknown) => h.log.error({ err: errorMessage(err) }, 'notification could not be settled'));
        }
      });
    }
    return n;
  };

  /** Reads the outbox, prepares due events (in the order BILL's events arrived) and queues their sends in lanes. */
  const pass = async (): Promise<number> => {
    const now = clock.now();
    let queued = 0;
    for (const stored of await events()) {
      if (passes.stopped) break;
      const h = held.get(keyOf(stored));
      if (h) {
        if (!h.settling && !h.lost) queued += enqueueDue(h, now);
        continue;
      }
      const pending = pendingOf(stored);
      const due = !stored.targets || pending.length === 0 || pending.some((t) => t.nextAt <= now);
      if (!due || !(await leases.acquire(leaseKey(stored)))) continue;
      try {
        // Another instance may have finished or advanced it since the list was read.
        const ev = await state.get<OutboxEvent>(NS.outbox, outboxKey(stored.orgId, stored.eventId));
        if (!isEvent(ev)) {
          await leases.release(leaseKey(stored));
          continue;
        }
        const log = deps.log.child({ eventId: ev.eventId, eventType: ev.type, orgId: ev.orgId });
        const h: Held = { ev, log, queued: new Set(), saving: Promise.resolve() };
        await prepare(h);
        if (h.lost) continue;
        held.set(keyOf(ev), h);
        const n = enqueueDue(h, clock.now());
        queued += n;
        if (n === 0) await settle(h);
      } catch (err) {
        held.delete(keyOf(stored));
        await leases.release(leaseKey(stored));
        deps.log.error({ eventId: stored.eventId, err: errorMessage(err) }, 'notification could not be prepared; will try again');
      }
    }
    return queued;
  };

  /**
   * One pass at a time. Held leases are renewed first once a third of their life has gone (a failed renewal is not a
   * lost lease), not on every webhook's kick: each renewal is a state read and write per held event.
   */
  const passes = new Periodic(
    async () => {
      if (clock.now() - renewedAt >= leaseMs / 3) {
        renewedAt = clock.now();
        for (const h of held.values())
          if (!h.settling)
            await stillHeld(h).catch((err: unknown) => h.log.warn({ err: errorMessage(err) }, 'outbox lease could not be renewed'));
      }
      return pass();
    },
    { everyMs: POLL_MS, log: deps.log, what: 'notification worker' },
  );

  /** Looks at the outbox soon (after the current I/O), without waiting. */
  const kick = (): void => {
    if (passes.stopped || kicked) return;
    kicked = setImmediate(() => {
      kicked = undefined;
      passes.tick().catch((err: unknown) => deps.log.error({ err: errorMessage(err) }, 'notification worker failed'));
    });
  };

  return {
    kick,
    /** Polls the outbox (retries, events another instance left behind) and works off what is there now. */
    start(): void {
      passes.start();
      kick();
    },

    /** Works through every delivery due now and waits until they are sent, retried later, or given up (tests, shutdown). */
    async drain(): Promise<void> {
      for (let round = 0; round < 1_000 && !passes.stopped; round++) {
        const queued = await passes.tick();
        await lanesIdle();
        if (queued === 0) break;
      }
    },

    async stop(): Promise<void> {
      if (kicked) clearImmediate(kicked);
      await passes.stop();
      // A kept (ref'd) timer, cleared after: deliveries waiting only on unref'd timers must not let the process exit mid-close.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([lanesIdle(), new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS)))]);
      clearTimeout(timer);
    },

    /** The outbox's events (those `which` keeps) and their deliveries still to be made. */
    async depth(which: (ev: OutboxEvent) => boolean) {
      const all = (await events()).filter(which);
      const pending = all.flatMap(pendingOf);
      return {
        events: all.length,
        pending: pending.length,
        nextAt: pending.length > 0 ? Math.min(...pending.map((t) => t.nextAt)) : undefined,
      };
    },
  };
}
