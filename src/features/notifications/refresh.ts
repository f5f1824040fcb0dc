// Notifications on the bot side: the `status` section (this channel's subscriptions and digest, outbox depth, dead
// letters, webhook keys) and the Refresh button of a notification card (re-reads the record from BILL).
import { answerKey } from '../../mirror/answers.js';
import type { EntityKind } from '../../mirror/records.js';
import { NotBound } from '../../errors.js';
import { describeSchedule } from '../../notify/schedule.js';
import type { CardActionHandler } from '../dispatch.js';
import { escapeMarkdown, facts, text, type CardElement } from '../../cards/card.js';
import { clockTime, dateTime } from '../../cards/format.js';
import { notificationCard, type PresenterOptions } from './cards.js';
import type { StatusCardOptions, StatusSection } from '../admin/statusCards.js';
import { channelTargetOf } from './commands.js';
import type { CommandContext } from '../types.js';
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

export async function notificationsSection(
  ctx: CommandContext,
  n: Pick<Notifications, 'status'>,
  opts: StatusCardOptions,
): Promise<StatusSection> {
  const target = channelTargetOf(ctx.scope);
  const channel = target ?? { tenantId: '', teamId: '', channelId: '' };
  const s = await n.status(channel, ctx.orgId);
  const rows: Array<[string, string]> = [];
  if (target) {
    rows.push(['This channel', s.kinds.length > 0 ? s.kinds.join(', ') : 'no subscriptions']);
    rows.push(['Digest', s.digest ? `${describeSchedule(s.digest.schedule)} (${escapeMarkdown(opts.timeZone)})` : 'off']);
  }
  const next =
    s.outbox.pending > 0 && s.outbox.nextAt !== undefined ? `, next try ${clockTime(Math.max(s.outbox.nextAt, opts.now), opts)}` : '';
  rows.push(['Outbox', s.outbox.events === 0 ? 'empty' : `${s.outbox.events} events, ${s.outbox.pending} deliveries waiting${next}`]);
  rows.push([
    'Dead letters',
    s.deadLetters.total === 0
      ? 'none'
      : `${s.deadLetters.total} in the last 30 days${target ? `, ${s.deadLetters.here.length > 0 ? s.deadLetters.here.length : 'none'} here` : ''}`,
  ]);
  rows.push([
    'BILL webhooks',
    s.webhook.storedKeys > 0
      ? `${s.webhook.storedKeys} subscription${s.webhook.storedKeys === 1 ? '' : 's'} with a stored key${s.webhook.envKey ? ' + BILL_WEBHOOK_SECURITY_KEY' : ''}`
      : s.webhook.envKey
        ? 'BILL_WEBHOOK_SECURITY_KEY'
        : 'not set up (admins: webhooks setup)',
  ]);
  const items: CardElement[] = [facts(rows)];
  for (const d of s.deadLetters.here) {
    items.push(
      text(
        `Not delivered here: ${escapeMarkdown(d.type)} of ${dateTime(d.at, opts)} after ${d.tries} tries (${escapeMarkdown(`${d.status}${d.code ? ` ${d.code}` : ''}`)}).`,
        { size: 'Small' },
      ),
    );
  }
  const summary =
    s.deadLetters.total > 0 ? `${s.deadLetters.total} undelivered notification${s.deadLetters.total === 1 ? '' : 's'}` : undefined;
  return { title: 'Notifications', items, summary };
}

/**
 * Refresh on a notification card: the same card drawn from BILL's current record. The record read is kept for the
 * object lifetime (CACHE_OBJECT_TTL_S) and dropped by a webhook about it.
 */
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
    const got = await deps.mirror.answers.get(orgId, key, { ttlS: deps.settings.objectTtlS, kinds: [entity] }, () =>
      deps.notify.current(orgId, entity, id, type),
    );
    const ev = got.value;
    if (!ev) throw new Error('not a refreshable notification');
    if (!got.hit) await deps.mirror.answers.get(orgId, key, { ttlS: deps.settings.objectTtlS, kinds: [entity] }, () => Promise.resolve(ev));
    return notificationCard(ev, deps.settings, { refreshedAt: got.fetchedAt });
  };
