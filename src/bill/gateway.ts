// The BILL gateway the bot uses: one HTTP pool and one session pool, org-scoped clients, the S&E client, status.
import type { Clock } from '../infra/clock.js';
import { NotBound } from '../errors.js';
import type { Logger, SecretRegistry } from '../infra/log.js';
import type { Limiter, Priority, RunOptions } from '../infra/limits/types.js';
import { BillOrgClient } from './api.js';
import { BillHttp, type RetryPolicy } from './http.js';
import { SessionPool, type SessionInfo, type SessionLedger } from './sessions.js';
import { SpendClient } from './spend.js';

export interface BillEndpoints {
  /** AP/AR base without the version, e.g. https://gateway.stage.bill.com/connect */
  baseUrl: string;
  spendBaseUrl: string;
  /** Webhook management base, e.g. https://gateway.stage.bill.com/connect-events */
  eventsBaseUrl: string;
}

interface BillUser {
  devKey: string;
  username: string;
  password: string;
}

/**
 * A person's own BILL sign-in (approvals): an AP/AR sync token, its name as username and its value as password.
 * BILL then records that person, never the bot, as the one who acted.
 */
export interface PersonCredentials {
  username: string;
  password: string;
  /** Stable, unique id of the person (tenant + Entra object id): their sessions never mix with anyone else's. */
  owner: string;
}

export interface BillGatewayOptions {
  backend: 'bill' | 'sandbox';
  endpoints: BillEndpoints;
  /** The bot's BILL user; the org comes from the conversation's binding. */
  user: BillUser;
  /** The org the bot was configured with (or the sandbox's demo org). */
  defaultOrgId: string;
  /** When non-empty, only these orgs may be used (config.bill.allowedOrgIds). */
  allowedOrgIds: string[];
  /** Spend & Expense token of defaultOrgId; no S&E client for that org without it. */
  spendApiToken?: string;
  /** Spend & Expense tokens of other organisations (BILL_SPEND_API_TOKENS): a token answers only for its own org. */
  spendApiTokens?: Record<string, string>;
  requestTimeoutMs: number;
  limiter: Limiter;
  clock: Clock;
  log: Logger;
  secrets: SecretRegistry;
  retry?: Partial<RetryPolicy>;
  /** Re-login after this much idle time (default 30 min, BILL expires sessions after 35). */
  idleRefreshMs?: number;
  /** Cluster mode: sessions shared by the fleet through Redis (src/bill/sharedSessions.ts). */
  sessionLedger?: SessionLedger;
}

export interface CallOptions {
  /** Default 'interactive'. */
  priority?: Priority;
  /** Give up with LimitExceeded('busy') when no slot is free within this time (default: the limiter's). */
  maxWaitMs?: number;
}

export interface BillStatus {
  backend: 'bill' | 'sandbox';
  baseUrl: string;
  /** One entry per organisation the bot has talked to (people's own approval sessions are not listed). */
  sessions: SessionInfo[];
  /** Logins with the configured dev key in the last hour (BILL allows 200). */
  loginsLastHour: number;
  spendConfigured: boolean;
  /** False after a credentials refusal or a network failure that no later success cleared. */
  reachable: boolean;
}

export class BillGateway {
  readonly backend: 'bill' | 'sandbox';
  readonly endpoints: BillEndpoints;
  readonly defaultOrgId: string;
  private readonly http: BillHttp;
  private readonly sessions: SessionPool;
  private closing: Promise<void> | undefined;

  constructor(private readonly opts: BillGatewayOptions) {
    this.backend = opts.backend;
    this.endpoints = opts.endpoints;
    this.defaultOrgId = opts.defaultOrgId;
    this.http = new BillHttp({
      limiter: opts.limiter,
      clock: opts.clock,
      log: opts.log,
      timeoutMs: opts.requestTimeoutMs,
      retry: opts.retry,
    });
    this.sessions = new SessionPool({
      http: this.http,
      clock: opts.clock,
      log: opts.log,
      secrets: opts.secrets,
      idleRefreshMs: opts.idleRefreshMs,
      ledger: opts.sessionLedger,
    });
    opts.secrets.add(opts.user.password);
    opts.secrets.add(opts.user.devKey);
    opts.secrets.add(opts.spendApiToken);
    for (const token of Object.values(opts.spendApiTokens ?? {})) opts.secrets.add(token);
  }

  /** AP/AR endpoints of one organisation. Throws NotBound('orgNotAllowed') for an org outside BILL_ALLOWED_ORG_IDS. */
  org(orgId: string, opts: CallOptions = {}): BillOrgClient {
    if (this.opts.allowedOrgIds.length > 0 && !this.opts.allowedOrgIds.includes(orgId)) throw new NotBound('orgNotAllowed');
    const session = this.sessions.get({ baseUrl: this.endpoints.baseUrl, orgId, ...this.opts.user });
    return new BillOrgClient(session, this.runOptions(opts), this.endpoints.eventsBaseUrl);
  }

  /**
   * AP/AR endpoints of one organisation in a person's own session (approvals). The session joins the pool under
   * its own slot and goes through the same per-org budget; the bot's service session is never used for it.
   */
  orgAs(orgId: string, person: PersonCredentials, opts: CallOptions = {}): BillOrgClient {
    if (this.opts.allowedOrgIds.length > 0 && !this.opts.allowedOrgIds.includes(orgId)) throw new NotBound('orgNotAllowed');
    // The person's token is not registered with the log scrubber (a value a person typed, of any length or content):
    // it only travels in the login body, which is never logged.
    const session = this.sessions.get(this.personSlot(orgId, person));
    return new BillOrgClient(session, this.runOptions(opts), this.endpoints.eventsBaseUrl);
  }

  /** Logs a person's session out of BILL and forgets it (they disconnected, or replaced their token). */
  async releaseAs(orgId: string, person: PersonCredentials): Promise<void> {
    await this.sessions.release(this.personSlot(orgId, person));
  }

  /**
   * Spend & Expense endpoints of one organisation; undefined when no API token is configured for it. An S&E token
   * belongs to one organisation, so another organisation's token is never used in its place.
   */
  spend(orgId: string = this.defaultOrgId, opts: CallOptions = {}): SpendClient | undefined {
    if (this.opts.allowedOrgIds.length > 0 && !this.opts.allowedOrgIds.includes(orgId)) throw new NotBound('orgNotAllowed');
    const token = this.opts.spendApiTokens?.[orgId] ?? (orgId === this.defaultOrgId ? this.opts.spendApiToken : undefined);
    if (!token) return undefined;
    return new SpendClient({ http: this.http, baseUrl: this.endpoints.spendBaseUrl, apiToken: token }, this.runOptions(opts));
  }

  status(): BillStatus {
    const sessions = this.serviceSessions().map((s) => s.info());
    return {
      backend: this.backend,
      baseUrl: this.endpoints.baseUrl,
      sessions,
      loginsLastHour: this.opts.limiter
        .snapshot()
        .filter((b) => b.budget === 'bill.logins')
        .reduce((sum, b) => sum + b.used, 0),
      spendConfigured: !!this.opts.spendApiToken || Object.keys(this.opts.spendApiTokens ?? {}).length > 0,
      reachable: this.ready(),
    };
  }

  /** Readiness: no session is stuck on a credentials refusal or an unanswered network failure. Never calls BILL. */
  ready(): boolean {
    // A person's revoked token is their problem, not the bot's: only the service sessions count.
    return this.serviceSessions().every((s) => {
      const { lastError, lastSuccessAt } = s.info();
      if (!lastError || (lastSuccessAt !== undefined && lastSuccessAt >= lastError.at)) return true;
      return lastError.category !== 'credentials' && lastError.category !== 'network';
    });
  }

  /** Logs every session out, then closes the connection pool (once; later calls wait for the first). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.sessions.close();
      await this.http.close();
    })();
    return this.closing;
  }

  private serviceSessions() {
    return this.sessions.all().filter((s) => !s.creds.owner);
  }

  private personSlot(orgId: string, person: PersonCredentials) {
    return {
      baseUrl: this.endpoints.baseUrl,
      devKey: this.opts.user.devKey,
      orgId,
      username: person.username,
      password: person.password,
      owner: person.owner,
    };
  }

  private runOptions(opts: CallOptions): RunOptions {
    return { priority: opts.priority ?? 'interactive', maxWaitMs: opts.maxWaitMs };
  }
}
