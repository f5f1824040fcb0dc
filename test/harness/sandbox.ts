// Starts the embedded BILL sandbox on a free port for a test, and builds BILL clients pointed at it.
import { request } from 'undici';
import { expect } from 'vitest';
import { BillApiError } from '../../src/errors.js';
import type { Clock } from '../../src/infra/clock.js';
import { systemClock } from '../../src/infra/clock.js';
import { loadConfig } from '../../src/config.js';
import { BillGateway, type BillGatewayOptions } from '../../src/bill/gateway.js';
import { createLogger, SecretRegistry, type Logger } from '../../src/infra/log.js';
import { SharedLimiter } from '../../src/infra/limits/limiter.js';
import type { AdmittedCall, BudgetSnapshot, Limiter, RunOptions, Throttle, Upstream } from '../../src/infra/limits/types.js';
import {
  startSandbox,
  type DemoCredentials,
  type Fault,
  type RunningSandbox,
  type SandboxOptions,
  type SandboxStats,
} from '../../src/sandbox/index.js';
import { LogCapture } from './logs.js';
import type { JsonRecord } from './net.js';

export interface TestSandbox {
  sandbox: RunningSandbox;
  /** http://127.0.0.1:PORT */
  url: string;
  /** BILL base URL: ${url}/connect */
  baseUrl: string;
  credentials: DemoCredentials;
  /** GET /__sandbox/stats over HTTP. */
  stats(): Promise<SandboxStats>;
  /** Calls a /__sandbox/ endpoint, e.g. control('POST', '/sessions/expire'). */
  control(method: string, path: string, body?: unknown): Promise<{ status: number; json: JsonRecord | undefined }>;
  fault(f: Fault): Promise<void>;
  stop(): Promise<void>;
}

/** Calls a /__sandbox/ endpoint of the sandbox at `url` (its control routes: pay a bill, flush webhooks, faults…). */
export async function sandboxControl(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: JsonRecord | undefined }> {
  const res = await request(`${url}/__sandbox${path}`, {
    method: method as 'GET',
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? (JSON.parse(text) as JsonRecord) : undefined };
}

/** sandboxControl that fails (naming the call and the answer) unless the sandbox answered 2xx; resolves with the body. */
export async function sandboxControlOk(url: string, method: string, path: string, body?: unknown): Promise<JsonRecord | undefined> {
  const res = await sandboxControl(url, method, path, body);
  if (res.status >= 300) throw new Error(`sandbox ${method} ${path}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

export async function startTestSandbox(opts: SandboxOptions = {}): Promise<TestSandbox> {
  const sandbox = await startSandbox({ host: '127.0.0.1', port: 0, ...opts });
  const control = (method: string, path: string, body?: unknown) => sandboxControl(sandbox.url, method, path, body);
  return {
    sandbox,
    url: sandbox.url,
    baseUrl: sandbox.baseUrl,
    credentials: sandbox.credentials,
    stats: async () => (await control('GET', '/stats')).json as unknown as SandboxStats,
    control,
    fault: async (f) => {
      const res = await control('POST', '/faults', f);
      if (res.status !== 200) throw new Error(`fault refused: ${JSON.stringify(res.json)}`);
    },
    stop: () => sandbox.stop(),
  };
}

/** A limiter that admits everything and records what the client reported (throttles) — no local limiting at all. */
export class RecordingLimiter implements Limiter {
  readonly runs: Upstream[] = [];
  readonly throttles: Array<{ upstream: Upstream; throttle: Throttle }> = [];
  run<T>(upstream: Upstream, _opts: RunOptions, fn: (call: AdmittedCall) => Promise<T>): Promise<T> {
    this.runs.push(upstream);
    return fn({});
  }
  throttled(upstream: Upstream, throttle: Throttle): void {
    this.throttles.push({ upstream, throttle });
  }
  snapshot(): BudgetSnapshot[] {
    return [];
  }
  blockedUntil(): number | undefined {
    return undefined;
  }
  async close(): Promise<void> {
    // nothing to release: it holds no timers or connections
  }
}

export interface TestClient {
  gateway: BillGateway;
  logs: LogCapture;
  log: Logger;
  secrets: SecretRegistry;
  limiter: Limiter;
  close(): Promise<void>;
}

/**
 * A BILL gateway for the sandbox's demo org. Default limiter: the app's real shared limiter (3 in flight per org,
 * 20,000/h, 200 logins/h), so the client is tested as it runs; pass `limiter` to replace it.
 */
export function billClient(
  sb: TestSandbox,
  opts: { clock?: Clock; limiter?: Limiter; limiterEnv?: Record<string, string>; overrides?: Partial<BillGatewayOptions> } = {},
): TestClient {
  const clock = opts.clock ?? systemClock;
  const logs = new LogCapture();
  const secrets = new SecretRegistry();
  const log = createLogger({ level: 'debug', secrets, destination: logs });
  const limiter =
    opts.limiter ?? new SharedLimiter({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', ...opts.limiterEnv }), clock, log });
  const gateway = new BillGateway({
    backend: 'sandbox',
    bill: {
      baseUrl: sb.sandbox.baseUrl,
      spendBaseUrl: sb.sandbox.spendBaseUrl,
      eventsBaseUrl: sb.sandbox.eventsBaseUrl,
      allowedOrgIds: [],
      requestTimeoutMs: 5_000,
    },
    user: { devKey: sb.credentials.devKey, username: sb.credentials.username, password: sb.credentials.password },
    spendApiTokens: { [sb.credentials.orgId]: sb.credentials.spendApiToken },
    limiter,
    clock,
    log,
    secrets,
    retry: { baseDelayMs: 20, maxDelayMs: 200 },
    ...opts.overrides,
  });
  return {
    gateway,
    logs,
    log,
    secrets,
    limiter,
    async close() {
      await gateway.close();
      await limiter.close();
    },
  };
}

/** Every secret a log must never contain: the demo credentials and every sessionId the sandbox issued. */
export async function secretsOf(sb: TestSandbox): Promise<string[]> {
  const stats = await sb.stats();
  return [sb.credentials.password, sb.credentials.devKey, sb.credentials.spendApiToken, ...stats.sessionsIssued];
}

/** The secrets found in the captured log text (empty when clean). */
export function leaks(text: string, secrets: string[]): string[] {
  return secrets.filter(
    (s) => s && (text.includes(s) || text.includes(encodeURIComponent(s)) || text.includes(JSON.stringify(s).slice(1, -1))),
  );
}

/** The BillApiError a call to BILL was refused with (the test fails when it answered or failed otherwise). */
export async function billFailure(p: Promise<unknown>): Promise<BillApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BillApiError);
  return err as BillApiError;
}
