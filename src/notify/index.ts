// Webhook events -> subscriptions -> durable outbox -> proactive sends, and scheduled digests: built once in app.ts.
import type { Clock } from '../infra/clock.js';
import type { Config } from '../config.js';
import type { Logger, SecretRegistry } from '../infra/log.js';
import { errorMessage } from '../errors.js';
import type { Priority } from '../infra/limits/types.js';
import type { BillGateway } from '../bill/gateway.js';
import type { Mirror } from '../mirror/mirror.js';
import { answerKey } from '../mirror/answers.js';
import type { EntityKind } from '../mirror/records.js';
import type { AuditTrail } from '../infra/audit.js';
import type { BindingScope } from '../bindings/bindings.js';
import { NS, type StateStore } from '../infra/state/types.js';
import { DigestComposer, DigestScheduler, DigestSettings } from './digests.js';
import { WebhookKeys } from './keys.js';
import { eventTypeInfo } from './kinds.js';
import { confirmRecord, paymentBillIds, projectEntity, readRecord, vendorOf } from './project.js';
import { PushFeed } from './pushFeed.js';
import { WebhookReceiver } from './receiver.js';
import { WebhookSetup } from './setup.js';
import { ChannelSubscriptions } from './subscriptions.js';
import type { ChannelSender, ChannelTarget, Enrichment, NotificationPresenter, OutboxEvent } from './types.js';
import { DeliveryWorker, type DeadLetter } from './worker.js';

export interface NotifyDeps {
  config: Config;
  state: StateStore;
  clock: Clock;
  log: Logger;
  secrets: SecretRegistry;
  bill: BillGateway;
  /** The per-org mirror of BILL records: webhooks tell it what is stale; cards' names come from it. */
  mirror: Mirror;
  /** The org a conversation is bound to right now (OrgBindings.resolve). */
  resolveOrg: (scope: BindingScope) => Promise<string | undefined>;
  /** The organisations this deployment serves (events of others are ignored). */
  servesOrg: (orgId: string) => boolean;
  /** The organisation BILL_WEBHOOK_SECURITY_KEY belongs to: BILL_ORG_ID, or the embedded sandbox's demo org. */
  defaultOrgId: string | undefined;
  audit: AuditTrail;
  sender: ChannelSender;
  presenter: NotificationPresenter;
}

export class Notifications {
  readonly keys: WebhookKeys;
  readonly subscriptions: ChannelSubscriptions;
  readonly digestSettings: DigestSettings;
  readonly composer: DigestComposer;
  readonly scheduler: DigestScheduler;
  readonly worker: DeliveryWorker;
  readonly receiver: WebhookReceiver;
  readonly setup: WebhookSetup;
  /** Which record kinds reach this deployment by webhook, per org (their lists may be kept longer). */
  readonly push: PushFeed;
  /** Configured webhook keys by the organisation each belongs to. */
  private readonly envKeys: Record<string, string>;

  constructor(private readonly deps: NotifyDeps) {
    const { state, clock, log, config } = deps;
    this.envKeys = { ...config.bill.webhookSecurityKeys };
    if (config.bill.webhookSecurityKey && deps.defaultOrgId) this.envKeys[deps.defaultOrgId] = config.bill.webhookSecurityKey;
    this.keys = new WebhookKeys({
      state,
      clock,
      log,
      secrets: deps.secrets,
      secretsKey: config.secretsKey,
      refuseUnsealed: config.nodeEnv === 'production',
    });
    this.subscriptions = new ChannelSubscriptions(state, clock);
    this.digestSettings = new DigestSettings(state, clock);
    this.worker = new DeliveryWorker({
      state,
      clock,
      log: log.child({ part: 'notify' }),
      subscriptions: this.subscriptions,
      resolveOrg: deps.resolveOrg,
      sender: deps.sender,
      presenter: deps.presenter,
      confirm: (ev) => confirmRecord(deps.bill, ev),
      enrich: (ev) => this.enrich(ev),
      apply: (ev) => this.markStale(ev),
      onChannelGone: (target, reason) => this.channelGone(target, reason),
    });
    this.push = new PushFeed({
      bill: deps.bill,
      clock,
      log: log.child({ part: 'webhooks' }),
      subscriptions: (orgId) => this.keys.list(orgId),
      checkMs: config.cache.pushedTtlS * 1000,
    });
    this.receiver = new WebhookReceiver({
      state,
      clock,
      log: log.child({ part: 'webhooks' }),
      keys: this.keys,
      envKeys: this.envKeys,
      servesOrg: deps.servesOrg,
      stale: (ev) =>
        void this.markStale(ev).catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'mirror could not be marked stale')),
      kick: () => this.worker.kick(),
      heard: (orgId, subscriptionId) => this.push.heard(orgId, subscriptionId),
    });
    this.composer = new DigestComposer({
      bill: deps.bill,
      mirror: deps.mirror,
      listTtlS: config.cache.listTtlS,
      timeZone: config.timeZone,
      log,
    });
    this.scheduler = new DigestScheduler({
      state,
      clock,
      log: log.child({ part: 'digests' }),
      timeZone: config.timeZone,
      settings: this.digestSettings,
      composer: this.composer,
      resolveOrg: deps.resolveOrg,
      sender: deps.sender,
      presenter: deps.presenter,
      onChannelGone: (target, reason) => this.channelGone(target, reason),
    });
    this.setup = new WebhookSetup({
      bill: deps.bill,
      keys: this.keys,
      log,
      allowLocalHttp: deps.bill.backend === 'sandbox',
      onChange: (orgId) => this.push.forget(orgId),
    });
  }

  /** Starts the outbox worker (it sends what a previous run left) and the digest scheduler. */
  async start(): Promise<void> {
    await this.keys
      .registerAll()
      .catch((err: unknown) => this.deps.log.error({ err: errorMessage(err) }, 'webhook keys could not be read'));
    this.worker.start();
    this.scheduler.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.worker.stop(), this.scheduler.stop()]);
  }

  /** The bot cannot post in a channel any more: its subscriptions and digest go, and the audit trail says so. */
  async channelGone(target: ChannelTarget, reason: string): Promise<void> {
    const removed = await this.subscriptions.remove(target);
    const digest = await this.digestSettings.remove(target);
    this.deps.log.warn(
      { teamId: target.teamId, channelId: target.channelId, reason, removed, digest },
      'channel subscriptions removed: the bot can no longer post there',
    );
    await this.deps.audit
      .admin({
        action: 'unsubscribe',
        tenantId: target.tenantId,
        teamId: target.teamId,
        channelId: target.channelId,
        result: 'ok',
        detail: { reason, automatic: true, kinds: removed, digest },
      })
      .catch(() => undefined);
  }

  /** What `status` shows about notifications for one channel. */
  async status(target: ChannelTarget, orgId: string | undefined) {
    const letters = (await this.deps.state.entries<DeadLetter | null>(NS.deadLetters))
      .map(([, d]) => d)
      .filter((d): d is DeadLetter => !!d && typeof d.eventId === 'string');
    const here = letters
      .filter((d) => d.tenantId === target.tenantId && d.teamId === target.teamId && d.channelId === target.channelId)
      .sort((a, b) => b.at - a.at)
      .slice(0, 3);
    return {
      kinds: (await this.subscriptions.forChannel(target)).map((s) => s.kind),
      digest: await this.digestSettings.get(target),
      outbox: await this.worker.depth(),
      deadLetters: { total: letters.length, here },
      // Stored webhook keys for the org, and whether a configured key (BILL_WEBHOOK_SECURITY_KEY[S]) belongs to it.
      webhook: {
        storedKeys: orgId ? (await this.keys.list(orgId)).length : 0,
        envKey: orgId !== undefined && this.envKeys[orgId] !== undefined,
      },
    };
  }

  /**
   * The record of a notification as BILL has it now (a card's Refresh), shaped like the event it came from so the
   * same card can be drawn. Undefined for kinds that cannot be re-read by id.
   */
  async current(orgId: string, entityType: EntityKind, id: string, type: string): Promise<OutboxEvent | undefined> {
    const record = await readRecord(this.deps.bill, orgId, entityType, id, 'interactive');
    if (record === undefined) return undefined;
    await this.deps.mirror.markStale(orgId, entityType, id);
    const entity = projectEntity(record as Record<string, unknown>);
    // The card describes the record's state now: "updated" (or "archived"), whatever the original event was.
    const family = type.split('.')[0] ?? entityType;
    const now = this.deps.clock.now();
    const ev: OutboxEvent = {
      v: 1,
      eventId: `refresh-${id}`,
      type:
        type === 'payment.failed' || type === 'autopay.failed'
          ? 'payment.updated'
          : `${family}.${entity.archived === true ? 'archived' : 'updated'}`,
      version: '1',
      orgId,
      subscriptionId: '',
      kind: eventTypeInfo(type)?.kind ?? 'bills',
      entityType,
      entityKey: entityType,
      entity,
      errors: [],
      receivedAt: now,
    };
    ev.enrichment = await this.enrich(ev, 'interactive').catch(() => ({}));
    return ev;
  }

  /**
   * Marks the records an event names stale in the mirror, when it arrives and again when the worker takes it (the
   * outbox outlives the marks): a payload is a hint, never written as the record (a signed event could carry any
   * amount and a date in 2099); the next answer showing the record reads it from BILL first.
   */
  private async markStale(ev: OutboxEvent): Promise<void> {
    const bills = ev.entityType === 'payment' ? paymentBillIds(ev.entity) : [];
    await Promise.all([
      this.deps.mirror.markStale(ev.orgId, ev.entityType, typeof ev.entity.id === 'string' ? ev.entity.id : undefined),
      ...bills.map((billId) => this.deps.mirror.markStale(ev.orgId, 'bill', billId)),
    ]);
  }

  /** What the card needs beyond the payload: bill numbers of a payment, customer and vendor names, the currency. */
  private async enrich(ev: OutboxEvent, priority: Priority = 'background'): Promise<Enrichment> {
    const out: Enrichment = {};
    const org = ev.orgId;
    const mirror = this.deps.mirror;
    if (ev.entityType === 'payment') {
      const ids = paymentBillIds(ev.entity).slice(0, 5);
      const numbers: Record<string, string> = {};
      const client = this.deps.bill.org(org, { priority });
      for (const id of ids) {
        try {
          const got = await mirror.answers.get(
            org,
            answerKey('bill', { id }),
            { ttlS: this.deps.config.cache.objectTtlS, kinds: ['bill'] },
            () => client.bills.get(id),
          );
          const number = got.value.invoice?.invoiceNumber;
          if (number) numbers[id] = number;
        } catch (err) {
          this.deps.log.debug({ eventId: ev.eventId, err: errorMessage(err) }, 'bill of a payment could not be read');
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
  }
}
