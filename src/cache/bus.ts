// Cluster mode: the query cache stays per instance, and every invalidation is broadcast to the fleet over Redis pub/sub.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log.js';
import type { RedisConnection } from '../state/redisClient.js';
import { ENTITY_KINDS, QueryCache, type CacheDeps, type CacheGetOptions, type CacheKind, type Cached, type EntityKind } from './index.js';

const CHANNEL = 'cache:invalidations';

/** One invalidation as it travels between instances. */
interface Invalidation {
  from: string;
  orgId: string;
  /** Absent: the whole organisation (or one answer, with `answer`). */
  entity?: EntityKind;
  id?: string;
  /** One cached answer dropped (a card's Refresh button). */
  answer?: { kind: CacheKind; key: string };
}

/** Carries invalidations between the instances of a fleet (Redis pub/sub); fire and forget. */
export interface CacheInvalidationBus {
  publish(inv: Omit<Invalidation, 'from'>): void;
  onRemote(fn: (inv: Omit<Invalidation, 'from'>) => void): void;
  /** Called when remote invalidations may have been missed (the subscription was away). */
  onGap(fn: () => void): void;
}

export class RedisCacheInvalidationBus implements CacheInvalidationBus {
  private readonly instance = randomUUID();
  private readonly remote = new Set<(inv: Omit<Invalidation, 'from'>) => void>();

  constructor(
    private readonly redis: RedisConnection,
    private readonly log: Logger,
  ) {
    redis.subscribe(CHANNEL, (message) => this.receive(message));
  }

  publish(inv: Omit<Invalidation, 'from'>): void {
    const message: Invalidation = { from: this.instance, ...inv };
    void this.redis.publish(CHANNEL, JSON.stringify(message)).then((sent) => {
      if (!sent) this.log.warn({ orgId: inv.orgId, entity: inv.entity }, 'cache invalidation not broadcast (Redis unavailable): other instances keep their copy until it expires');
    });
  }

  onRemote(fn: (inv: Omit<Invalidation, 'from'>) => void): void {
    this.remote.add(fn);
  }

  onGap(fn: () => void): void {
    this.redis.onResubscribe(fn);
  }

  private receive(message: string): void {
    let m: Partial<Invalidation>;
    try {
      m = JSON.parse(message) as Partial<Invalidation>;
    } catch {
      return;
    }
    if (m.from === this.instance || typeof m.orgId !== 'string' || m.orgId === '') return;
    if (m.entity !== undefined && !ENTITY_KINDS.includes(m.entity)) return;
    if (m.id !== undefined && typeof m.id !== 'string') return;
    const a = m.answer;
    if (a !== undefined && (typeof a !== 'object' || a === null || !['list', 'object', 'names'].includes(a.kind) || typeof a.key !== 'string')) return;
    const inv = { orgId: m.orgId, entity: m.entity, id: m.id, answer: a };
    for (const fn of this.remote) fn(inv);
  }
}

/**
 * The per-instance QueryCache whose invalidate()/invalidateOrg() also reach every other instance: a webhook that
 * lands on one instance drops the stale answer everywhere. Remote invalidations are applied locally only.
 * After a gap in the subscription (Redis was away) every organisation this instance cached is dropped, since
 * invalidations sent meanwhile were lost.
 */
export class BroadcastQueryCache extends QueryCache {
  private readonly orgs = new Set<string>();

  constructor(
    deps: CacheDeps,
    private readonly bus: CacheInvalidationBus,
  ) {
    super(deps);
    bus.onRemote((inv) => {
      if (inv.answer) super.delete(inv.orgId, inv.answer.kind, inv.answer.key);
      else if (inv.entity === undefined) super.invalidateOrg(inv.orgId);
      else super.invalidate(inv.orgId, inv.entity, inv.id);
    });
    bus.onGap(() => {
      for (const org of this.orgs) super.invalidateOrg(org);
    });
  }

  override get<T>(orgId: string, kind: CacheKind, key: string, load: () => Promise<T>, opts?: CacheGetOptions): Promise<Cached<T>> {
    this.orgs.add(orgId);
    return super.get(orgId, kind, key, load, opts);
  }

  override invalidate(orgId: string, entity: EntityKind, id?: string): number {
    const n = super.invalidate(orgId, entity, id);
    this.bus.publish({ orgId, entity, id });
    return n;
  }

  override delete(orgId: string, kind: CacheKind, key: string): boolean {
    const held = super.delete(orgId, kind, key);
    this.bus.publish({ orgId, answer: { kind, key } });
    return held;
  }

  override invalidateOrg(orgId: string): number {
    const n = super.invalidateOrg(orgId);
    this.bus.publish({ orgId });
    return n;
  }
}
