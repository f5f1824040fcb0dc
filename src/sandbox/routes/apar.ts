// AP/AR endpoints under /connect/v3: login, logout, session, bills, invoices, vendors, customers, payments,
// receivable payments, pending approvals — with BILL's list conventions.
import { createHash } from 'node:crypto';
import { bdc } from '../gate.js';
import type { Collection } from '../model.js';
import { comparator, compileFilters, keysetPage, parseFilters, parseMax, parseSort, type ListSpec } from '../query.js';
import { param, sessionOf, type RouteContext, type SandboxRoute } from '../server.js';
import { BILLS, CUSTOMERS, INVOICES, PAYMENTS, RECEIVABLE_PAYMENTS, VENDORS } from '../spec.js';

/** One page of an AP/AR-style list (page= cursors, keyset order). */
export function listPage<T extends { id: string }>(
  ctx: RouteContext,
  collection: Collection<T>,
  spec: ListSpec,
  view: (item: T) => unknown = (x) => x,
) {
  const max = parseMax(ctx.query.get('max') ?? undefined, spec);
  const sort = parseSort(ctx.query.get('sort') ?? undefined, spec);
  const rawFilters = ctx.query.get('filters') ?? '';
  const terms = rawFilters ? parseFilters(rawFilters) : [];
  const keep = compileFilters(terms, spec);
  const compare = comparator(sort, spec);
  const sortKey = sort.map((s) => `${s.field}:${s.order}`).join(',');
  const sorted = collection.sorted(sortKey, compare);
  const rows = terms.length ? sorted.filter(keep) : sorted;
  const fingerprint = createHash('sha256').update(`${sortKey}|${rawFilters}`).digest('base64url').slice(0, 16);
  const page = keysetPage(rows, compare, (id) => collection.get(id), { max, page: ctx.query.get('page') || undefined, fingerprint });
  return { nextPage: page.nextPage, prevPage: page.prevPage, results: page.results.map(view) };
}

export function getOne<T>(ctx: RouteContext, collection: Collection<T & { id: string }>): T {
  const item = collection.get(param(ctx, 'id'));
  if (!item) throw bdc(ctx.clock, 404, 'BDC_1205', `Object with id ${param(ctx, 'id').slice(0, 40)} was not found.`);
  return item;
}

function crud<T extends { id: string }>(path: string, spec: ListSpec, pick: (ctx: RouteContext) => Collection<T>): SandboxRoute[] {
  return [
    { area: 'connect', method: 'GET', path, auth: 'session', handle: (ctx) => ({ body: listPage(ctx, pick(ctx), spec) }) },
    { area: 'connect', method: 'GET', path: `${path}/:id`, auth: 'session', handle: (ctx) => ({ body: getOne(ctx, pick(ctx)) }) },
  ];
}

export const aparRoutes: SandboxRoute[] = [
  {
    area: 'connect',
    method: 'POST',
    path: '/v3/login',
    auth: 'login',
    handle: (ctx) => {
      const s = ctx.gate.login(ctx.body);
      return { body: { organizationId: s.orgId, sessionId: s.id, trusted: false, userId: s.userId } };
    },
  },
  {
    area: 'connect',
    method: 'POST',
    path: '/v3/logout',
    auth: 'session',
    handle: (ctx) => {
      ctx.gate.logout(sessionOf(ctx).id);
      return {};
    },
  },
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/login/session',
    auth: 'session',
    handle: (ctx) => ({
      body: { organizationId: sessionOf(ctx).orgId, userId: sessionOf(ctx).userId, mfaStatus: 'DISABLED', mfaBypass: false },
    }),
  },
  ...crud('/v3/bills', BILLS, (ctx) => ctx.org.bills),
  ...crud('/v3/invoices', INVOICES, (ctx) => ctx.org.invoices),
  ...crud('/v3/vendors', VENDORS, (ctx) => ctx.org.vendors),
  ...crud('/v3/customers', CUSTOMERS, (ctx) => ctx.org.customers),
  ...crud('/v3/payments', PAYMENTS, (ctx) => ctx.org.payments),
  ...crud('/v3/receivable-payments', RECEIVABLE_PAYMENTS, (ctx) => ctx.org.receivablePayments),
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/bill-approvals/pending-user-approvals',
    auth: 'session',
    handle: (ctx) => ({ body: { bills: ctx.model.pendingApprovals(ctx.org, sessionOf(ctx).userId) } }),
  },
];
