// /__sandbox/ control endpoints: counters, data changes that raise webhook events, session expiry, limits, faults.
// Not part of BILL. Local only (the sandbox listens on 127.0.0.1); `?org=<id>` picks an org, default the demo org.
import { bdc } from '../gate.js';
import { createInvoice, createVendor, payBill, updateInvoice } from '../mutations.js';
import { param, type Fault, type FaultKind, type SandboxRoute } from '../server.js';

const FAULTS: FaultKind[] = ['serverError', 'nonJson', 'emptyError', 'noCodeError', 'reset', 'emptyPage'];

const obj = (b: unknown) => (b && typeof b === 'object' ? (b as Record<string, unknown>) : {});

export const controlRoutes: SandboxRoute[] = [
  { area: 'control', method: 'GET', path: '/stats', auth: 'none', handle: (ctx) => ({ body: ctx.sandbox.stats() }) },
  {
    area: 'control',
    method: 'POST',
    path: '/stats/reset',
    auth: 'none',
    handle: (ctx) => {
      ctx.sandbox.resetStats();
      return { body: ctx.sandbox.stats() };
    },
  },
  {
    area: 'control',
    method: 'POST',
    path: '/bills/:id/pay',
    auth: 'none',
    handle: (ctx) => ({ body: payBill(ctx.model, ctx.org, param(ctx, 'id'), obj(ctx.body)) }),
  },
  {
    area: 'control',
    method: 'POST',
    path: '/invoices',
    auth: 'none',
    handle: (ctx) => ({ status: 201, body: createInvoice(ctx.model, ctx.org, obj(ctx.body)) }),
  },
  {
    area: 'control',
    method: 'PATCH',
    path: '/invoices/:id',
    auth: 'none',
    handle: (ctx) => ({ body: updateInvoice(ctx.model, ctx.org, param(ctx, 'id'), obj(ctx.body)) }),
  },
  {
    area: 'control',
    method: 'POST',
    path: '/vendors',
    auth: 'none',
    handle: (ctx) => ({ status: 201, body: createVendor(ctx.model, ctx.org, obj(ctx.body) as { name: string }) }),
  },
  {
    area: 'control',
    method: 'POST',
    path: '/sessions/expire',
    auth: 'none',
    handle: (ctx) => ({ body: { expired: ctx.gate.expireAll() } }),
  },
  {
    area: 'control',
    method: 'POST',
    path: '/hourly-budget',
    auth: 'none',
    handle: (ctx) => {
      const limit = obj(ctx.body).limit;
      if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 0)
        throw bdc(ctx.clock, 400, undefined, 'limit must be a whole number >= 0');
      ctx.gate.limits.hourlyBudget = limit;
      return { body: { limit } };
    },
  },
  {
    area: 'control',
    method: 'POST',
    path: '/latency',
    auth: 'none',
    handle: (ctx) => {
      const ms = obj(ctx.body).ms;
      if (typeof ms !== 'number' || !(ms >= 0) || ms > 60_000) throw bdc(ctx.clock, 400, undefined, 'ms must be 0..60000');
      ctx.sandbox.setLatency(ms);
      return { body: { ms } };
    },
  },
  {
    area: 'control',
    method: 'POST',
    path: '/faults',
    auth: 'none',
    handle: (ctx) => {
      const b = obj(ctx.body);
      if (!FAULTS.includes(b.kind as FaultKind)) throw bdc(ctx.clock, 400, undefined, `kind must be one of ${FAULTS.join(', ')}`);
      const fault: Fault = {
        kind: b.kind as FaultKind,
        method: typeof b.method === 'string' ? b.method.toUpperCase() : undefined,
        path: typeof b.path === 'string' ? b.path : undefined,
        count: typeof b.count === 'number' ? b.count : 1,
      };
      ctx.sandbox.addFault(fault);
      return { body: fault };
    },
  },
  {
    area: 'control',
    method: 'DELETE',
    path: '/faults',
    auth: 'none',
    handle: (ctx) => {
      ctx.sandbox.clearFaults();
      return {};
    },
  },
  {
    area: 'control',
    method: 'POST',
    path: '/webhooks/flush',
    auth: 'none',
    handle: async (ctx) => {
      await ctx.webhooks.idle();
      return { body: ctx.sandbox.stats().webhooks };
    },
  },
];
