// Spend & Expense endpoints under /connect/v3/spend: apiToken auth, nextPage/prevPage cursors (a `page` parameter is
// silently ignored, as on the real API), transactions max 50, receipts only with includeReceipts=true.
import type { SpendTransaction } from '../types.js';
import { SandboxError } from '../gate.js';
import type { Collection } from '../model.js';
import { comparator, compileFilters, offsetPage, parseFilters, parseMax, parseSort, type ListSpec } from '../query.js';
import { param, type RouteContext, type SandboxRoute } from '../server.js';
import { SPEND_BUDGETS, SPEND_REIMBURSEMENTS, SPEND_TRANSACTIONS } from '../spec.js';

function spendList<T extends { id: string }>(
  ctx: RouteContext,
  collection: Collection<T>,
  spec: ListSpec,
  view: (item: T) => unknown = (x) => x,
) {
  const max = parseMax(ctx.query.get('max') ?? undefined, spec);
  const sort = parseSort(ctx.query.get('sort') ?? undefined, spec);
  const raw = ctx.query.get('filters') ?? '';
  const terms = raw ? parseFilters(raw) : [];
  const keep = compileFilters(terms, spec);
  const compare = comparator(sort, spec);
  const sorted = collection.sorted(sort.map((s) => `${s.field}:${s.order}`).join(','), compare);
  const rows = terms.length ? sorted.filter(keep) : sorted;
  const page = offsetPage(rows, {
    max,
    nextPage: ctx.query.get('nextPage') || undefined,
    prevPage: ctx.query.get('prevPage') || undefined,
  });
  return { nextPage: page.nextPage, prevPage: page.prevPage, results: page.results.map(view) };
}

function spendGet<T extends { id: string; uuid?: string }>(ctx: RouteContext, collection: Collection<T>): T {
  const id = param(ctx, 'id');
  const item = collection.get(id) ?? collection.find((x) => x.uuid === id);
  if (!item)
    throw new SandboxError(404, [
      { timestamp: new Date(ctx.clock.now()).toISOString(), severity: 'ERROR', category: 'REQUEST', message: 'Not found' },
    ]);
  return item;
}

const txView = (ctx: RouteContext) => (t: SpendTransaction) => {
  if (ctx.query.get('includeReceipts') === 'true') return t;
  const { receipts: _omit, ...rest } = t;
  return rest;
};

export const spendRoutes: SandboxRoute[] = [
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/spend/transactions',
    auth: 'spend',
    handle: (ctx) => ({ body: spendList(ctx, ctx.org.spend.transactions, SPEND_TRANSACTIONS, txView(ctx)) }),
  },
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/spend/transactions/:id',
    auth: 'spend',
    handle: (ctx) => ({ body: spendGet(ctx, ctx.org.spend.transactions) }),
  },
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/spend/reimbursements',
    auth: 'spend',
    handle: (ctx) => ({ body: spendList(ctx, ctx.org.spend.reimbursements, SPEND_REIMBURSEMENTS) }),
  },
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/spend/reimbursements/:id',
    auth: 'spend',
    handle: (ctx) => ({ body: spendGet(ctx, ctx.org.spend.reimbursements) }),
  },
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/spend/budgets',
    auth: 'spend',
    handle: (ctx) => ({ body: spendList(ctx, ctx.org.spend.budgets, SPEND_BUDGETS) }),
  },
  {
    area: 'connect',
    method: 'GET',
    path: '/v3/spend/budgets/:id',
    auth: 'spend',
    handle: (ctx) => ({ body: spendGet(ctx, ctx.org.spend.budgets) }),
  },
];
