// Accepts a BILL webhook notification: signature, parsing, de-duplication, durable outbox write, then 200.
//
// Order matters for "exactly once" and crash safety:
// 1. the signature is checked against the key of the event's subscription (or a BILL_WEBHOOK_SECURITY_KEY[S] key)
//    before anything is stored; every key is bound to its organisation (another's event signed with it is refused);
// 2. an event id already recorded for its organisation (kept 8 days) is answered 200 and dropped;
// 3. the event is written to the outbox with setIfAbsent (atomic: two instances cannot both queue it), then its id is
//    recorded (also when the outbox held it: BILL's retry after a crash between the two), then 200 — a crash before
//    the 200 makes BILL retry, one after it leaves the event in the outbox for the worker.
// The answer comes within ANSWER_WITHIN_MS whatever the state store does (503 otherwise: BILL retries).
import type { EntityKind } from '../mirror/records.js';
import { within } from '../mirror/mirror.js';
import { errorMessage } from '../errors.js';
import { parseNotification, peekSubscriptionId, signatureDigest, signatureMatches, type BillNotification } from '../bill/webhooks.js';
import { NS } from '../infra/state/types.js';
import { eventTypeInfo } from './kinds.js';
import type { WebhookKeys } from './keys.js';
import { projectEntity } from './project.js';
import type { NotifyDeps, OutboxEvent } from './types.js';

/** BILL asks for de-duplication by event id; its retries span hours, events are kept longer than a week here. */
export const EVENT_ID_TTL_MS = 8 * 24 * 3_600_000;
/** Answer BILL well within its timeout; the 2 s budget includes the network. */
const ANSWER_WITHIN_MS = 1_500;

/**
 * An event's identity in store keys: BILL's event ids are per organisation, so the key names the organisation too
 * (encoded, so no pair can spell another's). Another organisation's event with the same id is not a duplicate.
 */
export const eventKey = (orgId: string, eventId: string): string => `${encodeURIComponent(orgId)}|${eventId}`;
export const outboxKey = (orgId: string, eventId: string): string => `ev|${eventKey(orgId, eventId)}`;

export type ReceiverDeps = Pick<NotifyDeps, 'state' | 'clock' | 'log' | 'envKeys' | 'servesOrg'> & {
  keys: WebhookKeys;
  /** An event was queued: the records it names are marked stale in the mirror (webhooks are hints, BILL's advice). */
  stale(event: OutboxEvent): void;
  kick(): void;
  heard?(orgId: string, subscriptionId: string): void;
  answerWithinMs?: number;
};

export class WebhookReceiver {
  constructor(private readonly deps: ReceiverDeps) {}

  async accept(
    raw: Buffer,
    signatureHeader: string | string[] | undefined,
  ): Promise<{ status: number; body: { status: string; eventId?: string; error?: string } }> {
    const digest = signatureDigest(signatureHeader);
    if (!digest) {
      this.deps.log.info(
        { reason: signatureHeader === undefined ? 'no signature' : 'malformed signature', bytes: raw.length },
        'webhook refused',
      );
      return { status: 401, body: { status: 'refused', error: 'Missing or malformed x-bill-sha-signature' } };
    }
    const parsed = parseNotification(raw);
    const verified = await this.verify(raw, digest, parsed);
    if (!verified.ok) {
      this.deps.log.info({ reason: verified.reason, bytes: raw.length }, 'webhook refused');
      return { status: 401, body: { status: 'refused', error: 'Signature does not match' } };
    }
    if (!parsed.ok) {
      this.deps.log.warn({ problem: parsed.problem, bytes: raw.length }, 'signed webhook could not be read');
      return { status: 400, body: { status: 'invalid', error: parsed.problem } };
    }
    const n = parsed.notification;
    if (verified.orgId !== n.metadata.organizationId) {
      this.deps.log.warn(
        { subscriptionId: n.metadata.subscriptionId, eventOrg: n.metadata.organizationId, keyOrg: verified.orgId },
        'webhook refused: signed with the key of another organisation',
      );
      return { status: 401, body: { status: 'refused', error: 'Signature does not match' } };
    }
    const log = this.deps.log.child({ eventId: n.metadata.eventId, eventType: n.metadata.eventType, orgId: n.metadata.organizationId });
    const info = eventTypeInfo(n.metadata.eventType, n.metadata.version);
    if (!info) {
      log.info({ version: n.metadata.version }, 'webhook event type not posted to channels; ignored');
      return { status: 200, body: { status: 'ignored', eventId: n.metadata.eventId } };
    }
    if (!this.deps.servesOrg(n.metadata.organizationId)) {
      log.warn('webhook event for an organisation this deployment does not serve; ignored');
      return { status: 200, body: { status: 'ignored', eventId: n.metadata.eventId } };
    }
    const ms = this.deps.answerWithinMs ?? ANSWER_WITHIN_MS;
    try {
      // Undefined when not stored in time: the store goes on by itself.
      const result = await within(this.store(n, info.entity), ms);
      if (result === undefined) {
        log.warn({ ms }, 'webhook not stored in time; answered 503 so BILL retries');
        return { status: 503, body: { status: 'retry', error: 'Try again' } };
      }
      if (result === 'duplicate') {
        log.info('duplicate webhook event ignored');
        return { status: 200, body: { status: 'duplicate', eventId: n.metadata.eventId } };
      }
      log.info({ kind: info.kind }, 'webhook event accepted');
      if (verified.stored) this.deps.heard?.(n.metadata.organizationId, n.metadata.subscriptionId);
      this.deps.kick();
      return { status: 200, body: { status: 'accepted', eventId: n.metadata.eventId } };
    } catch (err) {
      log.error({ err: errorMessage(err) }, 'webhook event could not be stored; answered 503 so BILL retries');
      return { status: 503, body: { status: 'retry', error: 'Try again' } };
    }
  }

  /**
   * The configured keys first, then those stored for the event's subscription: the matching key's organisation (the
   * caller refuses any other's event), and whether it was stored (billbridge's own subscription, counted by the push feed).
   */
  private async verify(
    raw: Buffer,
    digest: Buffer,
    parsed: ReturnType<typeof parseNotification>,
  ): Promise<{ ok: true; orgId: string; stored: boolean } | { ok: false; reason: string }> {
    for (const [orgId, key] of Object.entries(this.deps.envKeys))
      if (key && signatureMatches(raw, digest, key)) return { ok: true, orgId, stored: false };
    const subscriptionId = parsed.ok ? parsed.notification.metadata.subscriptionId : peekSubscriptionId(raw);
    if (!subscriptionId) return { ok: false, reason: 'no key for an unreadable body' };
    const keys = await this.deps.keys.keysFor(subscriptionId);
    if (keys.length === 0)
      return { ok: false, reason: Object.keys(this.deps.envKeys).length > 0 ? 'signature mismatch' : 'unknown subscription' };
    for (const k of keys) if (signatureMatches(raw, digest, k.key)) return { ok: true, orgId: k.orgId, stored: true };
    return { ok: false, reason: 'signature mismatch' };
  }

  private async store(n: BillNotification, entityType: EntityKind): Promise<'stored' | 'duplicate'> {
    const { state, clock } = this.deps;
    const id = n.metadata.eventId;
    const key = eventKey(n.metadata.organizationId, id);
    if (await state.get(NS.webhookEvents, key)) return 'duplicate';
    const event: OutboxEvent = {
      v: 1,
      eventId: id,
      type: n.metadata.eventType,
      orgId: n.metadata.organizationId,
      entityType,
      entity: projectEntity(n.entity),
      errors: n.errors,
      receivedAt: clock.now(),
    };
    const queued = await state.setIfAbsent(NS.outbox, outboxKey(event.orgId, id), event);
    // Written on a duplicate too: a process that died between the outbox write and this mark left the event queued
    // but unmarked, and BILL's retry is the one chance to mark it before the worker delivers and drops the entry.
    await state.set(NS.webhookEvents, key, { at: clock.now(), type: event.type }, { ttlMs: EVENT_ID_TTL_MS });
    if (!queued) return 'duplicate';
    this.deps.stale(event);
    return 'stored';
  }
}
