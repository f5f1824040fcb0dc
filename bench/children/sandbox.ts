// Bench child: the BILL sandbox in its own process, its gate instrumented so the driver can see every upstream slot
// (when each call took one of the org's 3 in-flight slots and when it gave it back).
import { startSandbox, type GateLimits } from '../../src/sandbox/index.js';
import { clockFromEnv, ready, residentSet, serve } from './ipc.js';

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
    requests: () => sandbox.requests(),
    latency: (ms: number) => {
      sandbox.setLatency(ms);
      return ms;
    },
    catalog: () => ({
      orgId: org.id,
      invoiceNumbers: org.invoices.all().filter((i) => !i.archived).map((i) => i.invoiceNumber),
      bills: org.bills.all().filter((b) => !b.archived).map((b) => ({ id: b.id, number: b.invoice?.invoiceNumber ?? '' })),
      vendors: org.vendors.all().filter((v) => !v.archived).map((v) => v.name),
      customers: org.customers.all().filter((c) => !c.archived).map((c) => c.name),
    }),
  },
  () => sandbox.stop(),
);

ready({ url: sandbox.url, baseUrl: sandbox.baseUrl, eventsBaseUrl: sandbox.eventsBaseUrl, credentials: sandbox.credentials, pid: process.pid });
