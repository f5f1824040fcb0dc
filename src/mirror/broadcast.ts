// Cluster mode: what one instance learns is stale (a webhook, a card's Refresh) is told to every other instance over
// Redis pub/sub, so none keeps showing the old record. Fire and forget; after a gap in the subscription (Redis was
// away) the receiver treats everything it holds as stale, since marks sent meanwhile were lost.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../infra/log.js';
import type { RedisConnection } from '../infra/state/redisClient.js';
import { ENTITY_KINDS, type EntityKind } from './records.js';

const CHANNEL = 'mirror:stale';

/** One stale mark: a record (kind + id), a whole kind (kind), an org (neither), or one kept answer (key). */
export interface StaleMark {
  orgId: string;
  kind?: EntityKind;
  id?: string;
  key?: string;
}

/** Hands other instances' marks to onMark (a gap in the subscription to onGap); returns how this instance tells them. */
export function staleBroadcast(redis: RedisConnection, log: Logger, onMark: (mark: StaleMark) => void, onGap: () => void) {
  const instance = randomUUID();
  redis.subscribe(CHANNEL, (message) => {
    let m: Partial<StaleMark & { from: string }> | null;
    try {
      m = JSON.parse(message) as Partial<StaleMark & { from: string }> | null;
    } catch {
      return;
    }
    if (!m || m.from === instance || typeof m.orgId !== 'string' || m.orgId === '') return;
    if (m.kind !== undefined && !ENTITY_KINDS.includes(m.kind)) return;
    if ((m.id !== undefined && typeof m.id !== 'string') || (m.key !== undefined && typeof m.key !== 'string')) return;
    onMark({ orgId: m.orgId, kind: m.kind, id: m.id, key: m.key });
  });
  redis.onResubscribe(onGap);
  return (mark: StaleMark): void => {
    void redis.publish(CHANNEL, JSON.stringify({ from: instance, ...mark })).then((sent) => {
      if (!sent)
        log.warn(
          { orgId: mark.orgId, kind: mark.kind },
          'stale mark not broadcast (Redis unavailable): other instances show their copy until their next refresh',
        );
    });
  };
}
