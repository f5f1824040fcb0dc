// The contract of the one limiter every outbound call goes through (BILL, Spend & Expense, Graph, Bot Connector).

/** A person waiting in a channel goes before background work (index refresh, digests, notifications). */
export type Priority = 'interactive' | 'background';

/**
 * What a call talks to; the limiter maps it to every budget that applies:
 * - bill:       bill.requests (per dev key, 20,000/h) + bill.concurrency (per dev key and org, 3 in flight); a call
 *               that makes BILL send an email (`email`) also bill.email (per dev key and org, 5/min)
 * - bill.login: bill.logins (per dev key, 200/h) + bill.requests + bill.concurrency; a person's own sign-in
 *               (`person`) also bill.logins.people (200 minus LIMIT_BILL_LOGINS_RESERVED), so the bot keeps its share
 * - spend:      spend.requests (per apiToken, 60/min)
 * - graph:      graph.app (1,500/s) + graph.tenant (30/s per tenant) + graph.team (4/s per team, when teamId is set)
 * - identity:   token endpoints (Entra client credentials); no published budget, but still counted here
 * - connector:  connector.thread (per conversation thread: 7/1 s, 8/2 s, 60/30 s, 1,800/h)
 * Keys (dev keys, tokens) are hashed by the limiter before they are used as names or shown.
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
  /**
   * Give up with LimitExceeded('busy') when the call cannot start within this many ms.
   * Default: config.limits.commandWaitMs for interactive calls; background calls wait.
   */
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
  /** e.g. the org id, a hashed key, a conversation id; "" for app-wide budgets. */
  key: string;
  limit: number;
  used: number;
  remaining: number;
  queued: number;
  running: number;
  rejected: number;
  /** Last server-side throttle on this budget (ms since epoch), if any. */
  lastThrottleAt?: number;
  lastThrottleKind?: Throttle['kind'];
  /** While frozen or paused: until when. */
  blockedUntil?: number;
  /** Rate budgets: the window the figures above describe (the one closest to its limit), in ms. */
  windowMs?: number;
  /** Concurrency budgets: the configured limit when `limit` is temporarily lower (after BDC_1322). */
  configuredLimit?: number;
  /** Budgets kept per conversation or team are shown as one row (key "*"): how many keys are active. */
  keys?: number;
}

/** What the limiter granted to the code running right now (read from inside `run`'s fn). */
export interface ActiveGrant {
  service: Upstream['service'];
  /** "budget:key" of every budget this call was admitted by. */
  budgets: string[];
  priority: Priority;
}

export interface Limiter {
  /**
   * Runs fn once every budget that applies to `upstream` grants a slot, and releases the slots when it
   * settles. Throws LimitExceeded without calling fn when a budget is frozen, exhausted for longer than the
   * caller can wait, or cannot start within maxWaitMs.
   */
  run<T>(upstream: Upstream, opts: RunOptions, fn: () => Promise<T>): Promise<T>;
  /** Server-side feedback (see Throttle). */
  throttled(upstream: Upstream, throttle: Throttle): void;
  /** Per budget: used, remaining, queued, running, rejected, last server-side throttle. */
  snapshot(): BudgetSnapshot[];
  /** True when a call to this upstream would be refused right now (status cards say so without calling). */
  blockedUntil(upstream: Upstream): number | undefined;
  /** The grant the current async context runs under, if any (tests prove every request runs inside one). */
  activeGrant?(): ActiveGrant | undefined;
  close(): Promise<void>;
}
