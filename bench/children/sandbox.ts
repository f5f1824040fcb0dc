// Bench child: the BILL sandbox in its own process, its gate instrumented so the driver can see every upstream slot
// (when each call took one of the org's 3 in-flight slots and when it gave it back).
import { startSandbox, type GateLimits } from '../../src/sandbox/index.js';
import { createInvoice, createVendor, payBill, updateInvoice } from '../../src/sandbox/mutations.js';
import { clockFromEnv, numberArg, ready, residentSet, serve } from './ipc.js';

interface SlotRecord {
  orgId: string;
  /** ms since the epoch, sub-millisecond precision. */
  start: number;
  end: number;
}

const env = process.env;
const num = (name: string, fallback: number) => (env[name] === undefined || env[name] === '' ? fallback : Number(env[name]));
const limits: Partial<GateLimits> = {};
if (env.BENCH_SANDBOX_HOURLY) limits.hourlyBudget = num('BENCH_SANDBOX_HOURLY', 20_000);
if (env.BENCH_SANDBOX_LOGINS) limits.loginsPerHour = num('BENCH_SANDBOX_LOGINS', 200);

const sandbox = await startSandbox({
  clock: clockFromEnv(env),
  latencyMs: num('BENCH_SANDBOX_LATENCY_MS', 0),
  invoices: num('BENCH_SANDBOX_INVOICES', 0),
  bills: num('BENCH_SANDBOX_BILLS', 0),
  seed: env.BENCH_SANDBOX_SEED || 'billbridge-bench',
  limits,
});

// Every call's slot at BILL's concurrency gate (taken after sign-in and budget checks, released after the answer).
const slots: SlotRecord[] = [];
const now = () => performance.timeOrigin + performance.now();
const enter = sandbox.gate.enter.bind(sandbox.gate);
sandbox.gate.enter = (devKey: string, orgId: string) => {
  const release = enter(devKey, orgId);
  const start = now();
  let done = false;
  return () => {
    if (!done) {
      done = true;
      slots.push({ orgId, start, end: now() });
    }
    release();
  };
};

const org = sandbox.org;

/** The n-th of `list` (wrapping), with a clear error when the sandbox org has none left to pick. */
function pick<T>(list: readonly T[], n: number, what: string): T {
  const item = list[n % list.length];
  if (item === undefined) throw new Error(`the sandbox org has no ${what} left to change`);
  return item;
}

/**
 * One change a finance team makes in BILL during the hour (BILL raises its webhooks): the n-th of a fixed rotation —
 * a bill paid, a customer payment recorded on an invoice, a new invoice, a bill paid, a payment recorded, and every
 * eighth a new vendor. Records are picked by n, so two runs make the same changes.
 */
function change(n: number): { type: string; id: string; number?: string } {
  const kind = n % 8 === 7 ? 'vendor' : pick(['bill', 'invoicePayment', 'invoice'] as const, n, 'change kind');
  if (kind === 'vendor') {
    const v = createVendor(sandbox.model, org, { name: `Northwind Supply ${n}` });
    return { type: 'vendor.created', id: v.id };
  }
  if (kind === 'bill') {
    const open = org.bills.all().filter((b) => !b.archived && b.paymentStatus === 'UNPAID' && (b.dueAmount ?? b.amount) > 0);
    const bill = pick(open, n * 7919, 'unpaid bills');
    payBill(sandbox.model, org, bill.id);
    return { type: 'bill.paid', id: bill.id, number: bill.invoice?.invoiceNumber };
  }
  const open = org.invoices.all().filter((i) => !i.archived && i.dueAmount > 0);
  if (kind === 'invoicePayment') {
    const inv = pick(open, n * 7919, 'open invoices');
    updateInvoice(sandbox.model, org, inv.id, { payAmount: inv.dueAmount });
    return { type: 'invoice.paid', id: inv.id, number: inv.invoiceNumber };
  }
  const customer = pick(
    org.customers.all().filter((c) => !c.archived),
    n % 20,
    'customers',
  );
  const inv = createInvoice(sandbox.model, org, { customerId: customer.id, totalAmount: 1000 + ((n * 37) % 9000) });
  return { type: 'invoice.created', id: inv.id, number: inv.invoiceNumber };
}

serve(
  {
    stats: () => ({ ...sandbox.stats(), sessionsIssued: sandbox.stats().sessionsIssued.length, ...residentSet() }),
    reset: () => {
      sandbox.resetStats();
      sandbox.clearRequests();
      slots.length = 0;
      return null;
    },
    slots: () => slots,
    change: (n) => change(numberArg(n, 'change')),
    requests: () => sandbox.requests(),
    latency: (arg) => {
      const ms = numberArg(arg, 'latency');
      sandbox.setLatency(ms);
      return ms;
    },
    catalog: () => ({
      orgId: org.id,
      invoiceNumbers: org.invoices
        .all()
        .filter((i) => !i.archived)
        .map((i) => i.invoiceNumber),
      bills: org.bills
        .all()
        .filter((b) => !b.archived)
        .map((b) => ({ id: b.id, number: b.invoice?.invoiceNumber ?? '' })),
      vendors: org.vendors
        .all()
        .filter((v) => !v.archived)
        .map((v) => v.name),
      customers: org.customers
        .all()
        .filter((c) => !c.archived)
        .map((c) => c.name),
    }),
  },
  () => sandbox.stop(),
);

ready({
  url: sandbox.url,
  baseUrl: sandbox.baseUrl,
  eventsBaseUrl: sandbox.eventsBaseUrl,
  credentials: sandbox.credentials,
  pid: process.pid,
});
