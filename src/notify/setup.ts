// Creates, lists and deletes the BILL webhook subscription that feeds billbridge, for `npm run webhooks` and the admin
// command. BILL (shared/reference/bill-v3-api.md §5): a create needs an X-Idempotent-Key (answered alike for 24 h); the
// URL must be HTTPS; at most 10 subscriptions per org, no duplicates (same events and URL); the securityKey is in the
// create answer only, and POST /v3/subscriptions/{id}/security_key issues a new one.
import { randomUUID } from 'node:crypto';
import { withEditLock, type EditLease } from '../infra/state/editLock.js';
import type { StateStore } from '../infra/state/types.js';
import type { Subscription } from '../bill/types.js';
import { inTurn } from './jobs.js';
import { KINDS } from './kinds.js';
import { UNSEALED_REFUSED, type WebhookKeys } from './keys.js';
import type { NotifyDeps } from './types.js';
import { NamedError } from '../errors.js';

export const MAX_BILL_SUBSCRIPTIONS = 10;
export const WEBHOOK_PATH = '/api/bill/webhooks';

export class WebhookSetupError extends NamedError {
  constructor(
    readonly reason: 'badUrl' | 'limit' | 'notFound' | 'noEvents' | 'unsealed' | 'busy',
    message: string,
  ) {
    super(message);
  }
}

/**
 * A set-up holds its organisation's lease at most 2 minutes: up to five BILL calls of BILL_TIMEOUT_MS (20 s) from the
 * CLI, and its 14 s turn in Teams. Others wait 10 s, then are told to try again (a change made anyway would be the
 * duplicate the lease prevents).
 */
const SETUP_LEASE: EditLease = {
  leaseMs: 120_000,
  waitMs: 10_000,
  busy: () =>
    new WebhookSetupError('busy', 'Another webhooks setup or delete for this organisation is still running; try again in a minute'),
};

/** BILL's answer, read defensively, as billbridge shows it (never the key); keyStored: billbridge can verify its events. */
function view(
  s: Omit<Subscription, 'status' | 'events'> & { status?: { enabled?: unknown }; events?: Subscription['events'] },
  keyStored: boolean,
) {
  const { id, name, notificationUrl } = s;
  return { id, name, notificationUrl, enabled: s.status?.enabled === true, events: (s.events ?? []).map((e) => e.type), keyStored };
}

/** The notification URL if it may be used: https, or http to this machine (the embedded sandbox allows that). */
function checkNotificationUrl(raw: string, allowLocalHttp: boolean): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new WebhookSetupError('badUrl', 'The notification URL must be an absolute URL such as https://bot.example.com/api/bill/webhooks');
  }
  const local = url.protocol === 'http:' && (url.hostname === '127.0.0.1' || url.hostname === 'localhost');
  if (url.protocol !== 'https:' && !(allowLocalHttp && local)) throw new WebhookSetupError('badUrl', 'BILL only delivers to HTTPS URLs');
  if (url.username || url.password || url.hash)
    throw new WebhookSetupError('badUrl', 'The notification URL must not carry credentials or a fragment');
  if (!url.pathname.replace(/\/+$/, '').endsWith(WEBHOOK_PATH))
    throw new WebhookSetupError('badUrl', `The notification URL must end with ${WEBHOOK_PATH} (billbridge's webhook route)`);
  return url.toString().replace(/\/+$/, '');
}

/**
 * `onChange`: the org's subscriptions changed (created, updated, deleted). `allowLocalHttp`: BILL may deliver to
 * http://127.0.0.1 — the embedded sandbox's default, and the bench's, whose sandbox stands in for real BILL.
 */
export function webhookSetup(
  deps: Pick<NotifyDeps, 'bill' | 'log' | 'clock'> & {
    keys: WebhookKeys;
    /** Where the organisation's set-up lease is kept: the fleet's store in cluster mode, shared with the CLI. */
    state: Pick<StateStore, 'setIfAbsent' | 'delete'>;
    onChange?: (orgId: string) => void;
    allowLocalHttp?: boolean;
  },
) {
  const { bill, keys, log } = deps;
  const subscriptionsOf = (orgId: string) => bill.org(orgId, { priority: 'interactive' }).subscriptions;
  // One set-up or deletion per organisation at a time: two admins typing `webhooks setup` at once both found no
  // subscription and both created one (BILL refused the duplicate); the second now waits and finds the first's. In this
  // process they queue; across a fleet (or the CLI beside a bot) they take the organisation's lease in the store.
  const running = new Map<string, Promise<unknown>>();
  const oneAtATime = <T>(orgId: string, work: () => Promise<T>): Promise<T> =>
    inTurn(running, orgId, () =>
      withEditLock({ store: deps.state, clock: deps.clock }, { ns: 'webhook-setup', key: orgId }, work, SETUP_LEASE),
    );
  return {
    /**
     * Makes sure one BILL subscription sends every event billbridge posts to `url`, and that billbridge holds its key.
     * An existing subscription to the same URL is reused (its events updated, its key rotated when billbridge lost it).
     */
    setup: (orgId: string, rawUrl: string) =>
      oneAtATime(orgId, async () => {
        // The embedded sandbox delivers to http://127.0.0.1; real BILL does not.
        const url = checkNotificationUrl(rawUrl, deps.allowLocalHttp ?? bill.backend === 'sandbox');
        // Before BILL makes a key it would show only once.
        if (!keys.canStore) throw new WebhookSetupError('unsealed', UNSEALED_REFUSED);
        const subscriptions = subscriptionsOf(orgId);
        const offered = new Set((await subscriptions.catalog()).filter((c) => c.versions.includes('1')).map((c) => c.type));
        const events = Object.values(KINDS)
          .flatMap((k) => k.types)
          .filter((t) => offered.has(t));
        if (events.length === 0) throw new WebhookSetupError('noEvents', 'BILL offers none of the event types billbridge posts');
        const wanted = events.map((type) => ({ type, version: '1' }));
        const existing = (await subscriptions.list().all()).items;
        let subscription = existing.find((s) => s.notificationUrl.replace(/\/+$/, '') === url);
        let action: 'created' | 'updated' | 'rotated' | 'unchanged' = 'unchanged';
        let securityKey: string | undefined;
        if (!subscription) {
          if (existing.length >= MAX_BILL_SUBSCRIPTIONS) {
            throw new WebhookSetupError(
              'limit',
              `BILL allows ${MAX_BILL_SUBSCRIPTIONS} webhook subscriptions per organisation and this one has ${existing.length}; delete one first`,
            );
          }
          subscription = await subscriptions.create({ name: 'billbridge', events: wanted, notificationUrl: url }, randomUUID());
          securityKey = subscription.securityKey;
          if (!securityKey) throw new Error('BILL created the subscription without returning its security key');
          action = 'created';
        } else {
          const { events: now, status } = subscription;
          const sameEvents =
            now.length === wanted.length && wanted.every((w) => now.some((e) => e.type === w.type && e.version === w.version));
          if (!sameEvents || !status.enabled) {
            subscription = await subscriptions.update(subscription.id, { events: wanted, status: { enabled: true } });
            action = 'updated';
          }
          if (!(await keys.has(subscription.id))) {
            ({ securityKey } = await subscriptions.rotateKey(subscription.id, randomUUID()));
            action = 'rotated';
          }
        }
        const { id, name } = subscription;
        if (securityKey) await keys.save({ subscriptionId: id, orgId, name, notificationUrl: url, events, securityKey });
        log.info({ orgId, subscriptionId: id, action, events: events.length }, 'BILL webhook subscription set up');
        if (action !== 'unchanged') deps.onChange?.(orgId);
        return { action, subscription: view(subscription, true) };
      }),

    async list(orgId: string) {
      const items = (await subscriptionsOf(orgId).list().all()).items;
      return Promise.all(items.map(async (s) => view(s, await keys.has(s.id))));
    },

    remove: (orgId: string, subscriptionId: string) =>
      oneAtATime(orgId, async (): Promise<void> => {
        const subscriptions = subscriptionsOf(orgId);
        if (!(await subscriptions.list().all()).items.some((s) => s.id === subscriptionId)) {
          // Not (or no longer) in BILL: a key left behind is still dropped, but only one kept for this organisation (an
          // admin of another organisation must not be able to stop this one's events from being verified).
          const ours = (await keys.list(orgId)).some((k) => k.subscriptionId === subscriptionId);
          const had = ours && (await keys.remove(subscriptionId));
          deps.onChange?.(orgId);
          if (!had) throw new WebhookSetupError('notFound', `BILL has no webhook subscription ${subscriptionId} for this organisation`);
          return;
        }
        await subscriptions.remove(subscriptionId);
        await keys.remove(subscriptionId);
        deps.onChange?.(orgId);
        log.info({ orgId, subscriptionId }, 'BILL webhook subscription deleted');
      }),
  };
}
