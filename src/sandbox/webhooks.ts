// Delivers signed BILL webhook notifications for the sandbox's changes.
// Facts (developer.bill.com /docs/bill-webhook-notification-payloads, /docs/test-with-webhook-security,
// /docs/bill-webhook-api-notification-rules): payload {metadata:{eventId, subscriptionId, organizationId, eventType,
// version}, <entity>:{...}}; header x-bill-sha-signature = base64 HMAC-SHA256 of the raw body keyed with the
// subscription's securityKey; 200 acknowledges; failures are retried with backoff, then the subscription is disabled.
import { createHmac, randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Agent } from 'undici';
import type { Clock } from '../infra/clock.js';
import type { SandboxStats } from './gate.js';
import type { EntityEvent, SandboxModel, SandboxNotification, SandboxOrg, SandboxSubscription } from './model.js';

/** Event types and versions BILL documents (GET /v3/events/catalog). */
export const EVENT_CATALOG: Array<{ type: string; versions: string[] }> = [
  'vendor.created',
  'vendor.updated',
  'vendor.archived',
  'vendor.restored',
  'autopay.failed',
  'bill.created',
  'bill.updated',
  'bill.archived',
  'bill.restored',
  'payment.updated',
  'payment.failed',
  'bank-account.created',
  'bank-account.updated',
  'card-account.created',
  'card-account.updated',
  'invoice.created',
  'invoice.updated',
  'invoice.archived',
  'invoice.restored',
  'risk-verification.updated',
  'spend.transaction.updated',
  'spend.reimbursement.created',
  'spend.reimbursement.updated',
  'spend.reimbursement.deleted',
  'spend.three-ds-challenge.created',
].map((type) => ({ type, versions: ['1'] }));

export function signBody(body: string | Buffer, securityKey: string): string {
  return createHmac('sha256', securityKey).update(body).digest('base64');
}

export interface WebhookOptions {
  /** Waits between attempts; after the last failure the subscription is disabled. */
  retryDelaysMs?: number[];
  timeoutMs?: number;
  /** Send the payload JSON-escaped as a JSON string (BILL's docs warn it can arrive that way). */
  stringPayload?: boolean;
}

export class WebhookDispatcher {
  private readonly agent: Agent;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly retryDelaysMs: number[];
  private closed = false;
  private readonly stopping = new AbortController();

  constructor(
    private readonly model: SandboxModel,
    private readonly clock: Clock,
    private readonly stats: SandboxStats,
    private readonly opts: WebhookOptions = {},
  ) {
    this.retryDelaysMs = opts.retryDelaysMs ?? [250, 1_000, 4_000];
    const timeout = opts.timeoutMs ?? 5_000;
    this.agent = new Agent({ connectTimeout: timeout, headersTimeout: timeout, bodyTimeout: timeout, keepAliveTimeout: 5_000 });
    model.onEvent((e) => this.publish(e));
  }

  /** Queues the event for every enabled subscription of its org that asked for its type. */
  publish(event: EntityEvent): void {
    const org = this.model.org(event.orgId);
    if (!org || this.closed) return;
    for (const sub of org.subscriptions.all()) {
      if (!sub.status.enabled || !sub.events.some((e) => e.type === event.type && e.version === event.version)) continue;
      this.track(this.deliver(org, sub, event, true));
    }
  }

  /** Sends one notification (with retries when `retry`); resolves with what was recorded. */
  async deliver(
    org: SandboxOrg,
    sub: SandboxSubscription,
    event: Omit<EntityEvent, 'orgId'>,
    retry: boolean,
  ): Promise<SandboxNotification> {
    const eventId = randomUUID();
    const payload = JSON.stringify({
      metadata: { eventId, subscriptionId: sub.id, organizationId: org.id, eventType: event.type, version: event.version },
      [event.entityKey]: event.entity,
    });
    const body = this.opts.stringPayload ? JSON.stringify(payload) : payload;
    const note: SandboxNotification = {
      id: eventId,
      type: event.type,
      version: event.version,
      subscriptionId: sub.id,
      payload: body,
      createdTime: new Date(this.clock.now()).toISOString(),
      statusCode: 0,
    };
    org.notifications.put(note);
    const delays = retry ? this.retryDelaysMs : [];
    for (let attempt = 0; ; attempt++) {
      note.statusCode = await this.post(sub, body);
      if (note.statusCode >= 200 && note.statusCode < 300) {
        sub.failures = 0;
        this.stats.webhooks.delivered++;
        return note;
      }
      if (attempt >= delays.length || this.closed) break;
      await delay(delays[attempt], undefined, { signal: this.stopping.signal }).catch(() => undefined);
    }
    this.stats.webhooks.failed++;
    if (retry) {
      sub.failures++;
      // Retries exhausted: BILL turns the subscription off until someone enables it again.
      sub.status = { enabled: false };
      sub.updatedTime = new Date(this.clock.now()).toISOString();
    }
    return note;
  }

  /** Re-sends a recorded notification with the subscription's current key. */
  async resend(org: SandboxOrg, sub: SandboxSubscription, note: SandboxNotification): Promise<SandboxNotification> {
    note.statusCode = await this.post(sub, note.payload);
    return note;
  }

  private async post(sub: SandboxSubscription, body: string): Promise<number> {
    try {
      const res = await this.agent.request({
        origin: new URL(sub.notificationUrl).origin,
        path: new URL(sub.notificationUrl).pathname + new URL(sub.notificationUrl).search,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-bill-sha-signature': signBody(body, sub.securityKey),
          'user-agent': 'BILL-Webhooks-Sandbox/1.0',
        },
        body,
      });
      await res.body.dump();
      return res.statusCode;
    } catch {
      return 0;
    }
  }

  private track(p: Promise<unknown>): void {
    this.stats.webhooks.pending++;
    const done = p
      .catch(() => undefined)
      .finally(() => {
        this.stats.webhooks.pending--;
        this.pending.delete(done);
      });
    this.pending.add(done);
  }

  /** Resolves once every queued delivery has finished (tests). */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending]);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopping.abort();
    await this.idle();
    await this.agent.close();
  }
}
