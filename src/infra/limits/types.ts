// The contract of the one limiter every outbound call goes through (BILL, Spend & Expense, Graph, Bot Connector).

/** A person waiting in a channel goes before background work (index refresh, digests, notifications). */
export type Priority = 'interactive' | 'background';

/**
 * What a call talks to; budgets.ts maps it to every budget that applies. `email`: the call makes BILL send an email
 * (bill.email, 5/min); `person`: a person's own sign-in (bill.logins.people, the logins the bot does not keep for itself).
 */
export type Upstream =
  | { service: 'bill'; devKey: string; orgId: string; email?: boolean }
  | { service: 'bill.login'; devKey: string; orgId: string; person?: boolean }
  | { service: 'spend'; token: string }
  | { service: 'graph'; tenantId: string; teamId?: string }
  | { service: 'identity'; tenantId: string }
  | { service: 'connector'; conversationId: string };

export interface RunOptions {
  priority: Priority;
  /** LimitExceeded('busy') when the call cannot start within this; default commandWaitMs when interactive, else none. */
  maxWaitMs?: number;
}

/** What an upstream told us about its limits; fed back so every later call respects it. */
export type Throttle =
  /** BDC_1322: too many in flight for the org; shrink effective concurrency for a while. */
  | { kind: 'concurrency' }
  /** BDC_1144: the hourly budget is spent; freeze bill.requests until this instant (ms since epoch). */
  | { kind: 'hourly'; untilMs: number }
  /** 429 with Retry-After (Graph, Connector, Spend & Expense): pause the budget for this long. */
  | { kind: 'retryAfter'; ms: number };

export interface BudgetSnapshot {
  /** e.g. "bill.concurrency". */
  budget: string;
  /** e.g. the org id, a hashed key, a conversation id; "" for app-wide budgets, "*" for one row of many keys. */
  key: string;
  limit: number;
  used: number;
  remaining: number;
  queued: number;
  running: number;
  rejected: number;
  /** Last server-side throttle on this budget (ms since epoch). */
  lastThrottleAt?: number;
  lastThrottleKind?: Throttle['kind'];
  /** While frozen or paused: until when. */
  blockedUntil?: number;
  /** Rate budgets: the window the figures above describe (the one closest to its limit). */
  windowMs?: number;
  /** Concurrency budgets: the configured limit while `limit` is lower after BDC_1322. */
  configuredLimit?: number;
  /** Rows of many keys (key "*"): how many keys are active. */
  keys?: number;
}

/** What the limiter granted to the code running right now (read from inside `run`'s fn). */
export interface ActiveGrant {
  service: Upstream['service'];
  /** "budget:key" of every budget this call was admitted by. */
  budgets: string[];
  priority: Priority;
}

/** What an admitted call is told when it starts. */
export interface AdmittedCall {
  /** A person's call (not a Bot Connector send): its turn's deadline (app clock), by which it must have ended whatever its timeout. */
  endBy?: number;
}

export interface Limiter {
  /**
   * Runs fn once every budget that applies grants a slot, and releases them when it settles. Throws LimitExceeded
   * without calling fn when a budget is frozen, spent for longer than the caller can wait, or busy past maxWaitMs.
   */
  run<T>(upstream: Upstream, opts: RunOptions, fn: (call: AdmittedCall) => Promise<T>): Promise<T>;
  throttled(upstream: Upstream, throttle: Throttle): void;
  snapshot(): BudgetSnapshot[];
  /** When a call to this upstream would be refused right now: until when (status cards say so without calling). */
  blockedUntil(upstream: Upstream): number | undefined;
  close(): Promise<void>;
}
