// The embedded BILL v3 sandbox: a local HTTP server with BILL's shapes and limits and a seeded demo organisation.
// Clients use `${url}/connect` as the BILL base URL and `${url}/connect-events` for webhook management.
import type { Server } from 'node:http';
import { systemClock, type Clock } from '../infra/clock.js';
import { BILL_LIMITS, emptyStats, Gate, type GateLimits, type SandboxStats } from './gate.js';
import { SandboxModel, type SandboxOrg } from './model.js';
import { approvalRoutes } from './approvals.js';
import { aparRoutes } from './routes/apar.js';
import { networkRoutes, seedNetwork } from './network.js';
import { controlRoutes } from './routes/control.js';
import { eventRoutes } from './routes/events.js';
import { spendRoutes } from './routes/spend.js';
import { seedDemoOrg, type DemoCredentials, type SeedOptions } from './seed.js';
import { listeningUrl, SandboxEngine, type Fault, type SandboxRequest, type SandboxRoute } from './server.js';
import { WebhookDispatcher, type WebhookOptions } from './webhooks.js';

export type { DemoCredentials } from './seed.js';
export type { SandboxStats, GateLimits } from './gate.js';
export type { Fault, FaultKind, SandboxRoute, RouteContext, Answer, SandboxRequest } from './server.js';
export {
  SandboxModel,
  Collection,
  ID_PREFIX,
  type SandboxOrg,
  type SandboxUser,
  type SandboxSubscription,
  type EntityEvent,
} from './model.js';
export { signBody, EVENT_CATALOG } from './webhooks.js';

export interface SandboxOptions extends Omit<SeedOptions, 'credentials'> {
  /** Sessions, hourly budgets and "today" follow this clock (tests jump it). */
  clock?: Clock;
  host?: string;
  /** 0 = a free port. */
  port?: number;
  /** Added to every BILL call (not to /__sandbox/). */
  latencyMs?: number;
  credentials?: Partial<DemoCredentials>;
  limits?: Partial<GateLimits>;
  webhooks?: WebhookOptions;
  /** Extra endpoints (other features' BILL calls); matched after the built-in ones. */
  routes?: SandboxRoute[];
}

export interface RunningSandbox {
  /** http://127.0.0.1:PORT */
  url: string;
  /** BILL base URL for the client: ${url}/connect */
  baseUrl: string;
  /** Spend & Expense base (same as baseUrl). */
  spendBaseUrl: string;
  /** Webhook management base: ${url}/connect-events */
  eventsBaseUrl: string;
  credentials: DemoCredentials;
  model: SandboxModel;
  /** The demo organisation. */
  org: SandboxOrg;
  gate: Gate;
  webhooks: WebhookDispatcher;
  stats(): SandboxStats;
  /** Zeroes the counters (the list of issued sessionIds is kept for leak scans). */
  resetStats(): void;
  /** The last BILL calls received (route, filters, sort, max, cursor, status), oldest first; a copy. */
  requests(): SandboxRequest[];
  clearRequests(): void;
  addFault(fault: Fault): void;
  /** Milliseconds added to every BILL call from now on. */
  setLatency(ms: number): void;
  /** Expires every session, as if 35 idle minutes had passed. */
  expireSessions(): number;
  stop(): Promise<void>;
}

export async function startSandbox(opts: SandboxOptions = {}): Promise<RunningSandbox> {
  const clock = opts.clock ?? systemClock;
  const model = new SandboxModel(clock, opts.seed);
  const credentials = seedDemoOrg(model, { ...opts, credentials: opts.credentials });
  seedNetwork(model);
  const org = model.org(credentials.orgId);
  if (!org) throw new Error('the demo organisation was not seeded');
  const stats = emptyStats();
  const gate = new Gate(model, clock, { ...BILL_LIMITS, ...opts.limits }, stats);
  const webhooks = new WebhookDispatcher(model, clock, stats, opts.webhooks);
  const snapshot = (): SandboxStats => ({
    ...structuredClone(stats),
    activeSessions: gate.activeSessions(),
  });
  const resetStats = () => {
    const keep = stats.sessionsIssued;
    Object.assign(stats, emptyStats(), { sessionsIssued: keep, webhooks: { ...emptyStats().webhooks, pending: stats.webhooks.pending } });
  };
  const engine = new SandboxEngine({
    model,
    gate,
    clock,
    webhooks,
    stats,
    routes: [...aparRoutes, ...approvalRoutes, ...networkRoutes, ...spendRoutes, ...eventRoutes, ...controlRoutes, ...(opts.routes ?? [])],
    latencyMs: opts.latencyMs ?? 0,
    control: { stats: snapshot, resetStats, defaultOrg: () => org },
  });
  const server: Server = engine.createServer();
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const url = listeningUrl(server);
  let stopping: Promise<void> | undefined;
  return {
    url,
    baseUrl: `${url}/connect`,
    spendBaseUrl: `${url}/connect`,
    eventsBaseUrl: `${url}/connect-events`,
    credentials,
    model,
    org,
    gate,
    webhooks,
    stats: snapshot,
    resetStats,
    requests: () => engine.requestLog.map((r) => ({ ...r })),
    clearRequests: () => {
      engine.requestLog.length = 0;
    },
    addFault: (f) => engine.control.addFault(f),
    setLatency: (ms) => engine.control.setLatency(ms),
    expireSessions: () => gate.expireAll(),
    stop() {
      stopping ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        await webhooks.close();
        server.closeAllConnections();
        await closed;
      })();
      return stopping;
    },
  };
}
