// Webhook events -> subscriptions -> durable outbox -> proactive sends, and scheduled digests: built once in app.ts.
import { errorMessage } from '../errors.js';
import type { Priority } from '../infra/limits/types.js';
import { answerKey } from '../mirror/answers.js';
import type { EntityKind } from '../mirror/records.js';
import { NS } from '../infra/state/types.js';
import { digestComposer, digestScheduler } from './digests.js';
import { WebhookKeys } from './keys.js';
import { confirmRecord, paymentBillIds, projectEntity, readRecord, vendorOf } from './project.js';
import { PushFeed } from './pushFeed.js';
import { WebhookReceiver } from './receiver.js';
import { webhookSetup } from './setup.js';
import { ChannelSubscriptions } from './subscriptions.js';
import type { ChannelTarget, Enrichment, NotifyDeps, OutboxEvent } from './types.js';
import { deliveryWorker, type DeadLetter } from './worker.js';

export type Notifications = ReturnType<typeof createNotifications>;

export function createNotifications(deps: NotifyDeps) {
  const { state, clock, log, bill, mirror, settings, envKeys } = deps;
  const keys = new WebhookKeys({
    ...deps,
    secretsKey: settings.secretsKey,
    refuseUnsealed: settings.nodeEnv === 'production',
  });
  const subscriptions = new ChannelSubscriptions(state, clock);

  /** The bot cannot post in a channel any more: its subscriptions and digest go, and the audit trail says so. */
  const channelGone = async (target: ChannelTarget, reason: string): Promise<void> => {
    const { tenantId, teamId, channelId } = target;
    const removed = await subscriptions.remove(target);
    const digest = (await subscriptions.remove(target, ['digest'])).length > 0;
    log.warn({ teamId, channelId, reason, removed, digest }, 'channel subscriptions removed: the bot can no longer post there');
    const detail = { reason, automatic: true, kinds: removed, digest };
    await deps.audit.admin({ action: 'unsubscribe', tenantId, teamId, channelId, result: 'ok', detail }).catch(() => undefined);
  };

  /**
   * Marks the records an event names stale, when it arrives and again when the worker takes it (the outbox outlives the
   * marks): a payload is never written as the record (a signed event could carry any amount and a date in 2099).
   */
  const markStale = async (ev: OutboxEvent): Promise<void> => {
    const bills = ev.entityType === 'payment' ? paymentBillIds(ev.entity) : [];
    await Promise.all([
      mirror.markStale(ev.orgId, ev.entityType, typeof ev.entity.id === 'string' ? ev.entity.id : undefined),
      ...bills.map((billId) => mirror.markStale(ev.orgId, 'bill', billId)),
    ]);
  };

  /** What the card needs beyond the payload: bill numbers of a payment, customer and vendor names, the currency. */
  const enrich = async (ev: OutboxEvent, priority: Priority = 'background'): Promise<Enrichment> => {
    const out: Enrichment = {};
    const org = ev.orgId;
    if (ev.entityType === 'payment') {
      const numbers: Record<string, string> = {};
      const client = bill.org(org, { priority });
      for (const id of paymentBillIds(ev.entity).slice(0, 5)) {
        try {
          const got = await mirror.answers.get(org, answerKey('bill', { id }), { ttlS: settings.cache.objectTtlS, kinds: ['bill'] }, () =>
            client.bills.get(id),
          );
          const number = got.value.invoice?.invoiceNumber;
          if (number) numbers[id] = number;
        } catch (err) {
          log.debug({ eventId: ev.eventId, err: errorMessage(err) }, 'bill of a payment could not be read');
        }
      }
      if (Object.keys(numbers).length > 0) out.billNumbers = numbers;
    }
    const named = async (kind: 'vendor' | 'customer', id: string | undefined) =>
      // No wait for an org's first build of vendors or customers: an id not held is read by id.
      id ? (await mirror.names(org, kind, [id], { priority, waitMs: 0 })).get(id) : undefined;
    if (ev.entityType === 'payment' || ev.entityType === 'bill') {
      const vendor = vendorOf(ev.entity);
      const info = await named('vendor', vendor.id);
      if (info) Object.assign(out, { vendorName: vendor.name ?? info.name, currency: info.currency });
    }
    if (ev.entityType === 'invoice') {
      const info = await named('customer', typeof ev.entity.customerId === 'string' ? ev.entity.customerId : undefined);
      if (info) Object.assign(out, { customerName: info.name, currency: info.currency });
    }
    if (ev.entityType === 'vendor' && typeof ev.entity.billCurrency === 'string') out.currency = ev.entity.billCurrency;
    return out;
  };

  const worker = deliveryWorker({
    ...deps,
    log: log.child({ part: 'notify' }),
    subscriptions,
    confirm: (ev) => confirmRecord(bill, ev),
    enrich,
    apply: markStale,
    onChannelGone: channelGone,
  });
  /** Which record kinds reach this deployment by webhook, per org (their lists may be kept longer). */
  const push = new PushFeed({
    ...deps,
    log: log.child({ part: 'webhooks' }),
    subscriptions: (orgId) => keys.list(orgId),
    checkMs: settings.cache.pushedTtlS * 1000,
  });
  const receiver = new WebhookReceiver({
    ...deps,
    log: log.child({ part: 'webhooks' }),
    keys,
    stale: (ev) => void markStale(ev).catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'mirror could not be marked stale')),
    kick: () => worker.kick(),
    heard: (orgId, subscriptionId) => push.heard(orgId, subscriptionId),
  });
  const composeDigest = digestComposer({ bill, mirror, listTtlS: settings.cache.listTtlS, timeZone: settings.timeZone, log });
  const scheduler = digestScheduler({
    ...deps,
    log: log.child({ part: 'digests' }),
    timeZone: settings.timeZone,
    subscriptions,
    compose: composeDigest,
    onChannelGone: channelGone,
  });
  const setup = webhookSetup({
    ...deps,
    keys,
    onChange: (orgId) => push.forget(orgId),
  });

  return {
    keys,
    subscriptions,
    composeDigest,
    scheduler,
    worker,
    receiver,
    setup,
    push,

    /** Starts the outbox worker (it sends what a previous run left) and the digest scheduler. */
    start(): void {
      worker.start();
      scheduler.start();
    },

    async stop(): Promise<void> {
      await Promise.all([worker.stop(), scheduler.stop()]);
    },

    /**
     * `target`: the channel status is asked in, if any. The outbox and dead letters counted are those of `orgId` only,
     * unless `everyOrg` (a billbridge admin): another organisation's notifications are not this team's to see.
     */
    async status(target: ChannelTarget | undefined, orgId: string | undefined, everyOrg: boolean) {
      const shown = (ev: { orgId: unknown }) => everyOrg || (orgId !== undefined && ev.orgId === orgId);
      const letters = (await state.entries<DeadLetter | null>(NS.deadLetters))
        .map(([, d]) => d)
        .filter((d): d is DeadLetter => !!d && typeof d.eventId === 'string' && shown(d));
      const here = target
        ? letters
            .filter((d) => d.tenantId === target.tenantId && d.teamId === target.teamId && d.channelId === target.channelId)
            .sort((a, b) => b.at - a.at)
            .slice(0, 3)
        : [];
      return {
        kinds: target ? (await subscriptions.forChannel(target)).map((s) => s.kind) : [],
        digest: target ? await subscriptions.digest(target) : undefined,
        outbox: await worker.depth(shown),
        deadLetters: { total: letters.length, here },
        // Stored webhook keys for the org, and whether a configured key (BILL_WEBHOOK_SECURITY_KEY[S]) belongs to it.
        webhook: {
          storedKeys: orgId ? (await keys.list(orgId)).length : 0,
          envKey: orgId !== undefined && envKeys[orgId] !== undefined,
        },
      };
    },

    /** A notification's record as BILL has it now (a card's Refresh), shaped like its event; undefined for kinds not read by id. */
    async current(orgId: string, entityType: EntityKind, id: string, type: string): Promise<OutboxEvent | undefined> {
      const record = await readRecord(bill.org(orgId, { priority: 'interactive' }), entityType, id);
      if (record === undefined) return undefined;
      await mirror.markStale(orgId, entityType, id);
      const entity = projectEntity(record as Record<string, unknown>);
      // The card describes the record's state now: "updated" (or "archived"), whatever the original event was.
      const family = type.split('.')[0] ?? entityType;
      const ev: OutboxEvent = {
        v: 1,
        eventId: `refresh-${id}`,
        type:
          type === 'payment.failed' || type === 'autopay.failed'
            ? 'payment.updated'
            : `${family}.${entity.archived === true ? 'archived' : 'updated'}`,
        orgId,
        entityType,
        entity,
        errors: [],
        receivedAt: clock.now(),
      };
      ev.enrichment = await enrich(ev, 'interactive').catch(() => ({}));
      return ev;
    },
  };
}
