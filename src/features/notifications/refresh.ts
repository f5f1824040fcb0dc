// The Refresh button of a notification card: the same card drawn from BILL's current record.
import { answerKey } from '../../mirror/answers.js';
import type { EntityKind } from '../../mirror/records.js';
import { NotBound } from '../../errors.js';
import type { CardActionHandler } from '../dispatch.js';
import { notificationCard, type PresenterOptions } from './cards.js';
import type { Mirror } from '../../mirror/mirror.js';
import type { Notifications } from '../../notify/index.js';
import type { OrgBindings } from '../../bindings/bindings.js';

export interface RefreshDeps {
  notify: Pick<Notifications, 'current'>;
  mirror: Pick<Mirror, 'answers'>;
  orgs: Pick<OrgBindings, 'resolve'>;
  /** objectTtlS: CACHE_TTL_OBJECT_S, how long the record read is kept. */
  settings: PresenterOptions & { objectTtlS: number };
}

const REFRESHABLE: readonly EntityKind[] = ['bill', 'invoice', 'payment', 'vendor'];

/** The record read is kept for CACHE_OBJECT_TTL_S, and dropped by a webhook about it. */
export const refreshNotification =
  (deps: RefreshDeps): CardActionHandler =>
  async ({ data, scope }) => {
    const entity = data.entity as EntityKind;
    const id = typeof data.id === 'string' ? data.id : '';
    const type = typeof data.type === 'string' ? data.type.slice(0, 60) : `${entity}.updated`;
    if (!REFRESHABLE.includes(entity) || id === '') throw new Error('not a refreshable notification');
    const orgId = await deps.orgs.resolve(scope);
    if (!orgId) throw new NotBound();
    const key = answerKey('notification.refresh', { entity, id, type });
    // current() marks the record stale (so lists showing it are read again), which drops the answers built from it: the
    // read it made is kept once that is done, so clicking again costs no BILL call.
    const kept = { ttlS: deps.settings.objectTtlS, kinds: [entity] };
    const got = await deps.mirror.answers.get(orgId, key, kept, () => deps.notify.current(orgId, entity, id, type));
    const ev = got.value;
    if (!ev) throw new Error('not a refreshable notification');
    if (!got.hit) await deps.mirror.answers.get(orgId, key, kept, () => Promise.resolve(ev));
    return notificationCard(ev, deps.settings, { refreshedAt: got.fetchedAt });
  };
