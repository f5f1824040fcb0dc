// Webhook management under /connect-events/v3 (Postman "Webhooks" folder; /docs/working-with-bill-webhooks):
// subscriptions CRUD, one-time securityKey, key rotation, test events, sent-event history and resend.
// Rules enforced: X-Idempotent-Key (UUID) on create and key rotation, a repeated key returns the first answer;
// notificationUrl must be HTTPS (the sandbox also allows http on 127.0.0.1/localhost); at most 10 per org; no duplicates.
import { randomBytes } from 'node:crypto';
import { bdc } from '../gate.js';
import { Collection, ID_PREFIX, type SandboxNotification, type SandboxSubscription } from '../model.js';
import { param, type RouteContext, type SandboxRoute } from '../server.js';
import { NOTIFICATIONS, SUBSCRIPTIONS } from '../spec.js';
import { EVENT_CATALOG } from '../webhooks.js';
import { getOne, listPage } from './apar.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_SUBSCRIPTIONS_PER_ORG = 10;

/** What answers show: never the stored key. */
function view(s: SandboxSubscription) {
  const { securityKey: _k, failures: _f, ...rest } = s;
  return rest;
}

function idempotent(ctx: RouteContext, make: () => unknown): unknown {
  const key = ctx.req.headers['x-idempotent-key'];
  const k = Array.isArray(key) ? key[0] : key;
  if (!k || !UUID.test(k)) throw bdc(ctx.clock, 400, undefined, 'Header X-Idempotent-Key must be a UUID');
  // A repeated key gets the first answer for 24 hours.
  const cache = ctx.org.idempotency;
  const now = ctx.clock.now();
  const cacheKey = `${ctx.method} ${ctx.path} ${k}`;
  const hit = cache.get(cacheKey);
  if (hit && now - hit.at < 86_400_000) return hit.body;
  const body = make();
  cache.set(cacheKey, { at: now, body });
  return body;
}

function checkUrl(ctx: RouteContext, raw: unknown): string {
  if (typeof raw !== 'string') throw bdc(ctx.clock, 400, undefined, 'notificationUrl is required');
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw bdc(ctx.clock, 400, undefined, 'notificationUrl must be an absolute URL');
  }
  const local = u.protocol === 'http:' && (u.hostname === '127.0.0.1' || u.hostname === 'localhost');
  if (u.protocol !== 'https:' && !local) throw bdc(ctx.clock, 400, undefined, 'notificationUrl must use HTTPS');
  return raw;
}

function checkEvents(ctx: RouteContext, raw: unknown): Array<{ type: string; version: string }> {
  if (!Array.isArray(raw) || raw.length === 0) throw bdc(ctx.clock, 400, undefined, 'events must be a non-empty array');
  return raw.map((e) => {
    const entry = e as { type?: unknown; version?: unknown } | null | undefined;
    const type = entry?.type;
    const v = entry?.version ?? '1';
    const version = typeof v === 'string' || typeof v === 'number' ? String(v) : JSON.stringify(v);
    const known = EVENT_CATALOG.find((c) => c.type === type);
    if (!known?.versions.includes(version))
      throw bdc(ctx.clock, 400, undefined, `Unknown event type ${String(type).slice(0, 60)} version ${version.slice(0, 10)}`);
    return { type: type as string, version };
  });
}

const sameEvents = (a: Array<{ type: string; version: string }>, b: Array<{ type: string; version: string }>) =>
  a.length === b.length && a.every((x) => b.some((y) => y.type === x.type && y.version === x.version));

function checkDuplicate(ctx: RouteContext, self: string | undefined, events: Array<{ type: string; version: string }>, url: string): void {
  if (ctx.org.subscriptions.find((s) => s.id !== self && s.notificationUrl === url && sameEvents(s.events, events))) {
    throw bdc(ctx.clock, 400, undefined, 'A subscription with the same events and notificationUrl already exists');
  }
}

function subscription(ctx: RouteContext): SandboxSubscription {
  return getOne(ctx, ctx.org.subscriptions);
}

const newKey = () => randomBytes(32).toString('base64');

export const eventRoutes: SandboxRoute[] = [
  { area: 'events', method: 'GET', path: '/v3/events/catalog', auth: 'session', handle: () => ({ body: EVENT_CATALOG }) },
  {
    area: 'events',
    method: 'GET',
    path: '/v3/subscriptions',
    auth: 'session',
    handle: (ctx) => {
      const page = listPage(ctx, ctx.org.subscriptions, SUBSCRIPTIONS, view);
      // One-directional paging: no prevPage.
      return { body: { nextPage: page.nextPage, results: page.results } };
    },
  },
  {
    area: 'events',
    method: 'POST',
    path: '/v3/subscriptions',
    auth: 'session',
    handle: (ctx) => ({
      body: idempotent(ctx, () => {
        const b = (ctx.body ?? {}) as Record<string, unknown>;
        if (typeof b.name !== 'string' || !b.name.trim()) throw bdc(ctx.clock, 400, undefined, 'name is required');
        const events = checkEvents(ctx, b.events);
        const url = checkUrl(ctx, b.notificationUrl);
        if (ctx.org.subscriptions.size >= MAX_SUBSCRIPTIONS_PER_ORG)
          throw bdc(ctx.clock, 400, undefined, `At most ${MAX_SUBSCRIPTIONS_PER_ORG} subscriptions per organization`);
        checkDuplicate(ctx, undefined, events, url);
        const now = ctx.model.nowIso();
        const enabled = (b.status as { enabled?: unknown } | undefined)?.enabled;
        const sub: SandboxSubscription = {
          id: ctx.model.ids.next(ID_PREFIX.subscription),
          name: b.name,
          organizationId: ctx.org.id,
          status: { enabled: enabled === undefined ? true : enabled === true },
          events,
          notificationUrl: url,
          createdTime: now,
          updatedTime: now,
          securityKey: newKey(),
          failures: 0,
        };
        ctx.org.subscriptions.put(sub);
        return { ...view(sub), securityKey: sub.securityKey };
      }),
    }),
  },
  { area: 'events', method: 'GET', path: '/v3/subscriptions/:id', auth: 'session', handle: (ctx) => ({ body: view(subscription(ctx)) }) },
  ...(['PUT', 'PATCH'] as const).map((method): SandboxRoute => ({
    area: 'events',
    method,
    path: '/v3/subscriptions/:id',
    auth: 'session',
    handle: (ctx) => {
      const sub = subscription(ctx);
      const b = (ctx.body ?? {}) as Record<string, unknown>;
      const full = method === 'PUT';
      if (full || b.name !== undefined) {
        if (typeof b.name !== 'string' || !b.name.trim()) throw bdc(ctx.clock, 400, undefined, 'name is required');
      }
      const events = full || b.events !== undefined ? checkEvents(ctx, b.events) : sub.events;
      const url = full || b.notificationUrl !== undefined ? checkUrl(ctx, b.notificationUrl) : sub.notificationUrl;
      checkDuplicate(ctx, sub.id, events, url);
      if (typeof b.name === 'string') sub.name = b.name;
      sub.events = events;
      sub.notificationUrl = url;
      const enabled = (b.status as { enabled?: unknown } | undefined)?.enabled;
      if (typeof enabled === 'boolean') {
        sub.status = { enabled };
        if (enabled) sub.failures = 0;
      }
      sub.updatedTime = ctx.model.nowIso();
      ctx.org.subscriptions.put(sub);
      return { body: view(sub) };
    },
  })),
  {
    area: 'events',
    method: 'DELETE',
    path: '/v3/subscriptions/:id',
    auth: 'session',
    handle: (ctx) => {
      ctx.org.subscriptions.delete(subscription(ctx).id);
      return {};
    },
  },
  {
    area: 'events',
    method: 'POST',
    path: '/v3/subscriptions/:id/security_key',
    auth: 'session',
    handle: (ctx) => ({
      body: idempotent(ctx, () => {
        const sub = subscription(ctx);
        sub.securityKey = newKey();
        sub.updatedTime = ctx.model.nowIso();
        return { securityKey: sub.securityKey };
      }),
    }),
  },
  {
    area: 'events',
    method: 'POST',
    path: '/v3/subscriptions/:id/test',
    auth: 'session',
    handle: async (ctx) => {
      const sub = subscription(ctx);
      const b = (ctx.body ?? {}) as Record<string, unknown>;
      const type = typeof b.eventType === 'string' ? b.eventType : sub.events[0]?.type;
      if (!type) throw bdc(ctx.clock, 400, undefined, 'eventType is required: the subscription has no events');
      const version = typeof b.version === 'string' ? b.version : '1';
      const entityKey = type.replace(/\..*$/s, '').replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
      const entity = (b[entityKey] as Record<string, unknown> | undefined) ?? { id: `test-${entityKey}-id` };
      const note = await ctx.webhooks.deliver(ctx.org, sub, { type, version, entityKey, entity }, false);
      return { body: note };
    },
  },
  {
    area: 'events',
    method: 'GET',
    path: '/v3/events/subscription/:id',
    auth: 'session',
    handle: (ctx) => {
      const sub = subscription(ctx);
      const from = ctx.query.get('createdTimeFrom');
      const to = ctx.query.get('createdTimeTo');
      const mine = ctx.org.notifications
        .all()
        .filter((n) => n.subscriptionId === sub.id && (!from || n.createdTime >= from) && (!to || n.createdTime <= to));
      // Reuse the list machinery on a filtered snapshot.
      const snapshot = new Collection<SandboxNotification>();
      for (const n of mine) snapshot.put(n);
      const page = listPage(
        { ...ctx, query: new URLSearchParams({ max: ctx.query.get('max') ?? '', page: ctx.query.get('page') ?? '' }) },
        snapshot,
        NOTIFICATIONS,
      );
      return { body: { nextPage: page.nextPage, results: page.results } };
    },
  },
  {
    area: 'events',
    method: 'POST',
    path: '/v3/events/subscription/:id/event/:eventId',
    auth: 'session',
    handle: async (ctx) => {
      const sub = subscription(ctx);
      const note = ctx.org.notifications.get(param(ctx, 'eventId'));
      if (note?.subscriptionId !== sub.id) throw bdc(ctx.clock, 404, 'BDC_1205', 'Event not found.');
      return { body: await ctx.webhooks.resend(ctx.org, sub, note) };
    },
  },
];
