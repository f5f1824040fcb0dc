// What BILL enforces before it answers: sign-in, 35-minute idle sessions, 3 in flight per dev key and org,
// the hourly request budget, 200 logins an hour, and 60 Spend & Expense calls a minute per token.
import { randomBytes } from 'node:crypto';
import type { Clock } from '../infra/clock.js';
import type { SandboxModel } from './model.js';

/** One entry of BILL's error array. */
export interface ErrorEntry {
  timestamp: string;
  code?: string;
  severity: 'ERROR' | 'WARNING' | 'INFORMATION';
  category?: 'REQUEST' | 'APPLICATION' | 'SERVER' | 'DOWNSTREAM';
  message: string;
}

/** A refusal the server writes as BILL's JSON error array. */
export class SandboxError extends Error {
  constructor(
    readonly status: number,
    readonly entries: ErrorEntry[],
    readonly headers: Record<string, string> = {},
  ) {
    super(entries[0]?.message ?? `HTTP ${status}`);
  }
}

export function bdc(
  clock: Clock,
  status: number,
  code: string | undefined,
  message: string,
  category: ErrorEntry['category'] = 'REQUEST',
): SandboxError {
  const entry: ErrorEntry = { timestamp: new Date(clock.now()).toISOString(), severity: 'ERROR', message };
  // Validation errors carry no code, as seen on the real API.
  if (code) {
    entry.code = code;
    entry.category = category;
  }
  return new SandboxError(status, [entry]);
}

export interface GateLimits {
  /** Concurrent requests per dev key and org (BILL: 3). */
  concurrency: number;
  /** Requests per dev key per clock hour (BILL: 20,000). */
  hourlyBudget: number;
  /** Logins per dev key per hour (BILL: 200). */
  loginsPerHour: number;
  /** Idle time after which a session is gone (BILL: 35 minutes). */
  sessionIdleMs: number;
  /** Spend & Expense calls per token per minute (BILL: 60). */
  spendPerMinute: number;
}

export const BILL_LIMITS: GateLimits = {
  concurrency: 3,
  hourlyBudget: 20_000,
  loginsPerHour: 200,
  sessionIdleMs: 35 * 60_000,
  spendPerMinute: 60,
};

export interface SandboxSession {
  id: string;
  orgId: string;
  userId: string;
  devKey: string;
  createdAt: number;
  lastUsedAt: number;
  /** 'password' sessions idle out after 35 minutes, 'syncToken' sessions after 48 hours. */
  kind: 'password' | 'syncToken';
}

/** Idle lifetime of a sync-token session (developer.bill.com /docs/token-based-sign-in). */
const SYNC_TOKEN_IDLE_MS = 48 * 3_600_000;

export interface SandboxStats {
  /** Successful logins. */
  logins: number;
  loginFailures: number;
  logouts: number;
  requests: number;
  /** "GET /v3/bills/{id}" -> count. */
  requestsByPath: Record<string, number>;
  /** Highest number of requests in flight at once, per org. */
  maxConcurrentByOrg: Record<string, number>;
  limitErrors: { concurrency: number; hourly: number; logins: number; spend: number };
  errorsByCode: Record<string, number>;
  /** Every sessionId the sandbox handed out (tests scan logs for them). */
  sessionsIssued: string[];
  activeSessions: number;
  webhooks: { delivered: number; failed: number; pending: number };
}

export function emptyStats(): SandboxStats {
  return {
    logins: 0,
    loginFailures: 0,
    logouts: 0,
    requests: 0,
    requestsByPath: {},
    maxConcurrentByOrg: {},
    limitErrors: { concurrency: 0, hourly: 0, logins: 0, spend: 0 },
    errorsByCode: {},
    sessionsIssued: [],
    activeSessions: 0,
    webhooks: { delivered: 0, failed: 0, pending: 0 },
  };
}

export class Gate {
  readonly sessions = new Map<string, SandboxSession>();
  private readonly inflight = new Map<string, number>();
  private readonly hourly = new Map<string, { hour: number; count: number }>();
  private readonly loginTimes = new Map<string, number[]>();
  private readonly spendWindows = new Map<string, { minute: number; count: number }>();

  constructor(
    private readonly model: SandboxModel,
    private readonly clock: Clock,
    readonly limits: GateLimits,
    readonly stats: SandboxStats,
  ) {}

  private err(status: number, code: string | undefined, message: string, category: ErrorEntry['category'] = 'REQUEST'): SandboxError {
    return bdc(this.clock, status, code, message, category);
  }

  /** The dev key must exist and be active (BDC_1102 unknown, BDC_1103 inactive). */
  checkDevKey(devKey: string | undefined): asserts devKey is string {
    const rec = devKey ? this.model.devKeys.get(devKey) : undefined;
    if (!rec) throw this.err(401, 'BDC_1102', 'Invalid developer key.');
    if (!rec.active) throw this.err(401, 'BDC_1103', 'Developer key is inactive.');
  }

  /** Counts one request against the dev key's clock-hour budget (BDC_1144 when spent). */
  countHourly(devKey: string): void {
    const hour = Math.floor(this.clock.now() / 3_600_000);
    const w = this.hourly.get(devKey);
    const win = w?.hour === hour ? w : { hour, count: 0 };
    if (win.count >= this.limits.hourlyBudget) {
      this.stats.limitErrors.hourly++;
      throw this.err(400, 'BDC_1144', `Max number of allowed requests per hour reached: ${this.limits.hourlyBudget}.`);
    }
    win.count++;
    this.hourly.set(devKey, win);
  }

  /** Takes an in-flight slot for the dev key and org (BDC_1322 beyond the limit); returns its release. */
  enter(devKey: string, orgId: string): () => void {
    const key = `${devKey}\n${orgId}`;
    const n = this.inflight.get(key) ?? 0;
    if (n >= this.limits.concurrency) {
      this.stats.limitErrors.concurrency++;
      throw this.err(400, 'BDC_1322', 'Max number of concurrent requests per organization reached.');
    }
    this.inflight.set(key, n + 1);
    const seen = this.stats.maxConcurrentByOrg[orgId] ?? 0;
    if (n + 1 > seen) this.stats.maxConcurrentByOrg[orgId] = n + 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inflight.get(key) ?? 1) - 1;
      if (left <= 0) this.inflight.delete(key);
      else this.inflight.set(key, left);
    };
  }

  /** A login body needs username, password, organizationId and devKey (a validation error without a code). */
  checkLoginFields(body: unknown): void {
    const b = (body ?? {}) as Record<string, unknown>;
    const missing = ['username', 'password', 'organizationId', 'devKey'].filter((k) => typeof b[k] !== 'string' || b[k] === '');
    if (missing.length) throw this.err(400, undefined, `Missing required field(s): ${missing.join(', ')}`);
  }

  /** POST /v3/login: username + password of a user of the org, with a known dev key. */
  login(body: unknown): SandboxSession {
    this.checkLoginFields(body);
    const b = body as Record<string, unknown>;
    const devKey = b.devKey as string;
    this.checkDevKey(devKey);
    const now = this.clock.now();
    const times = (this.loginTimes.get(devKey) ?? []).filter((t) => t > now - 3_600_000);
    this.loginTimes.set(devKey, times);
    if (times.length >= this.limits.loginsPerHour) {
      this.stats.limitErrors.logins++;
      throw this.err(400, 'BDC_1144', `Max number of allowed logins per hour reached: ${this.limits.loginsPerHour}.`);
    }
    times.push(now);
    const org = this.model.org(b.organizationId as string);
    const username = (b.username as string).toLowerCase();
    let kind: SandboxSession['kind'] = 'password';
    let user = org?.users.find((u) => u.email.toLowerCase() === username && u.password === b.password);
    if (!user) {
      user = org?.users.find((u) => (u.syncTokens ?? []).some((t) => t.name === b.username && t.value === b.password));
      kind = 'syncToken';
    }
    if (!org || !user) {
      this.stats.loginFailures++;
      throw this.err(400, 'BDC_1101', 'Incorrect username or password, or wrong environment.');
    }
    const session: SandboxSession = {
      id: randomBytes(24).toString('base64url'),
      orgId: org.id,
      userId: user.id,
      devKey,
      createdAt: now,
      lastUsedAt: now,
      kind,
    };
    this.sessions.set(session.id, session);
    this.stats.logins++;
    this.stats.sessionsIssued.push(session.id);
    return session;
  }

  /** Finds the live session for the headers and restarts its idle clock (BDC_1109 when missing, expired or bound to another key). */
  authenticate(devKey: string, sessionId: string | undefined): SandboxSession {
    const s = sessionId ? this.sessions.get(sessionId) : undefined;
    const now = this.clock.now();
    if (s && now - s.lastUsedAt > this.idleLimit(s)) this.sessions.delete(s.id);
    if (!s || !this.sessions.has(s.id) || s.devKey !== devKey) {
      throw this.err(401, 'BDC_1109', 'Session is invalid. Please log in.');
    }
    s.lastUsedAt = now;
    return s;
  }

  private idleLimit(s: SandboxSession): number {
    return s.kind === 'syncToken' ? SYNC_TOKEN_IDLE_MS : this.limits.sessionIdleMs;
  }

  logout(sessionId: string): void {
    if (this.sessions.delete(sessionId)) this.stats.logouts++;
  }

  expireAll(): number {
    const n = this.sessions.size;
    this.sessions.clear();
    return n;
  }

  /** Spend & Expense: 60 calls per token per clock minute; returns seconds to wait when over. */
  spendOverLimit(token: string): number | undefined {
    const now = this.clock.now();
    const minute = Math.floor(now / 60_000);
    const w = this.spendWindows.get(token);
    const win = w?.minute === minute ? w : { minute, count: 0 };
    if (win.count >= this.limits.spendPerMinute) {
      this.stats.limitErrors.spend++;
      return Math.max(1, Math.ceil(((minute + 1) * 60_000 - now) / 1000));
    }
    win.count++;
    this.spendWindows.set(token, win);
    return undefined;
  }

  activeSessions(): number {
    const now = this.clock.now();
    let n = 0;
    for (const s of this.sessions.values()) if (now - s.lastUsedAt <= this.idleLimit(s)) n++;
    return n;
  }
}
