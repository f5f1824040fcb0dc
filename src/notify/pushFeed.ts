// Which of an org's records reach this deployment by webhook ("push-fed"): their kept answers and mirror are reused for
// CACHE_TTL_PUSHED_S instead of CACHE_TTL_LIST_S, since every change arrives as an event that marks it stale; the
// longer interval is the safety net for a lost event. Push-fed only while BILL announces the entity's every change
// (kinds.ts PUSH_FED), a subscription billbridge created (its key is stored) covers its event types, and within the
// last check interval BILL said that subscription is enabled or an event signed by it was accepted (BILL disables one
// whose retries ran out). Nothing is push-fed before the first check answers; checks run in the background.
import type { EntityKind } from '../mirror/records.js';
import { errorMessage } from '../errors.js';
import { eventTypeInfo, PUSH_FED } from './kinds.js';
import type { WebhookKeyInfo } from './keys.js';
import type { NotifyDeps } from './types.js';

/** After a failed check, the next one waits this long. */
const RETRY_MS = 60_000;

const sameUrl = (a: unknown, b: string): boolean => typeof a === 'string' && a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

type PushFeedDeps = Pick<NotifyDeps, 'bill' | 'clock' | 'log'> & {
  /** The subscriptions billbridge created for an org (WebhookKeys.list). */
  subscriptions(orgId: string): Promise<WebhookKeyInfo[]>;
  /** How long a check (or an accepted event) vouches for a subscription; also the pushed TTL. 0: never push-fed. */
  checkMs: number;
};

interface OrgFeed {
  /** Entities covered by an enabled subscription, as of `checkedAt`. */
  entities: Set<EntityKind>;
  /** subscriptionId -> the entities its events cover. */
  covers: Map<string, Set<EntityKind>>;
  checkedAt: number;
  /** When an accepted event last vouched for the subscription, by id. */
  heardAt: Map<string, number>;
  /** When the last check failed (0: it did not). */
  failedAt: number;
}

export class PushFeed {
  private readonly orgs = new Map<string, OrgFeed>();
  private readonly checks = new Map<string, Promise<void>>();

  constructor(private readonly deps: PushFeedDeps) {}

  /** True when changes to this entity of the org arrive by webhook now (see above); starts a check when one is due. */
  fed(orgId: string, entity: EntityKind): boolean {
    if (this.deps.checkMs <= 0) return false;
    const now = this.deps.clock.now();
    const feed = this.orgs.get(orgId);
    // After a failure, again in RETRY_MS; else a little before the last check stops vouching, so a busy org never
    // drops to polling.
    const due = !feed || (feed.failedAt > 0 ? now - feed.failedAt >= RETRY_MS : now - feed.checkedAt >= this.deps.checkMs * 0.8);
    if (due) void this.refresh(orgId);
    if (!feed) return false;
    if (now - feed.checkedAt < this.deps.checkMs && feed.entities.has(entity)) return true;
    // No fresh check: a recent event from a subscription that covers the entity vouches for it.
    for (const [id, at] of feed.heardAt) if (now - at < this.deps.checkMs && feed.covers.get(id)?.has(entity)) return true;
    return false;
  }

  /** An event signed by this subscription was accepted: the subscription is delivering. */
  heard(orgId: string, subscriptionId: string): void {
    const feed = this.orgs.get(orgId);
    if (feed && subscriptionId && feed.covers.has(subscriptionId)) feed.heardAt.set(subscriptionId, this.deps.clock.now());
  }

  /** The subscriptions changed (created, removed, re-keyed): the next question checks again. */
  forget(orgId: string): void {
    this.orgs.delete(orgId);
  }

  /** Checks now and waits for the answer (start-up, tests); `fed` starts the same check, when due, in the background. */
  refresh(orgId: string): Promise<void> {
    // runCheck never rejects: a failed check is recorded as such.
    const flight = this.checks.get(orgId) ?? this.runCheck(orgId).finally(() => this.checks.delete(orgId));
    this.checks.set(orgId, flight);
    return flight;
  }

  private async runCheck(orgId: string): Promise<void> {
    const prior = this.orgs.get(orgId);
    const feed: OrgFeed = {
      entities: new Set(),
      covers: new Map(),
      checkedAt: prior?.checkedAt ?? 0,
      heardAt: prior?.heardAt ?? new Map<string, number>(),
      failedAt: 0,
    };
    try {
      const mine = await this.deps.subscriptions(orgId);
      const org = this.deps.bill.org(orgId, { priority: 'background' });
      for (const sub of mine) {
        const covers = new Set<EntityKind>();
        for (const type of sub.events) {
          const info = eventTypeInfo(type);
          if (info && PUSH_FED.some((p) => p.entity === info.entity)) covers.add(info.entity);
        }
        if (covers.size === 0) continue;
        feed.covers.set(sub.subscriptionId, covers);
        // BILL's answer, read defensively.
        const now: { status?: { enabled?: unknown }; notificationUrl: string } = await org.subscriptions.get(sub.subscriptionId);
        if (now.status?.enabled === true && sameUrl(now.notificationUrl, sub.notificationUrl)) for (const e of covers) feed.entities.add(e);
      }
      feed.checkedAt = this.deps.clock.now();
      if (prior && [...prior.entities].join() !== [...feed.entities].join()) {
        this.deps.log.info({ orgId, pushFed: [...feed.entities] }, 'webhook-fed record kinds changed');
      }
    } catch (err) {
      // Not known to be delivering: lists are polled as usual until a check succeeds.
      feed.entities.clear();
      feed.failedAt = this.deps.clock.now();
      this.deps.log.warn(
        { orgId, err: errorMessage(err) },
        'webhook subscriptions could not be checked; lists are refreshed at CACHE_TTL_LIST_S',
      );
    }
    for (const id of [...feed.heardAt.keys()]) if (!feed.covers.has(id)) feed.heardAt.delete(id);
    this.orgs.set(orgId, feed);
  }
}
