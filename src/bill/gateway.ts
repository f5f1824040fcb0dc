// The BILL gateway the bot uses: one HTTP pool and the pool of sessions, org-scoped clients, the S&E client, status.
import type { Clock } from '../infra/clock.js';
import type { Config } from '../config.js';
import { NotBound } from '../errors.js';
import type { Logger, SecretRegistry } from '../infra/log.js';
import type { Limiter, RunOptions } from '../infra/limits/types.js';
import { billOrgClient, type BillOrgClient } from './api.js';
import { billHttp, type BillHttp, type RetryPolicy } from './http.js';
import { OrgSession, slotKey, type SessionCredentials, type SessionDeps } from './sessions.js';
import type { RedisSessionLedger } from './sharedSessions.js';
import { spendClient, type SpendClient } from './spend.js';

/** A person's own BILL sign-in (approvals): an AP/AR sync token's name and value as username and password, and `owner`,
 * their stable id (tenant + Entra object id). BILL then records that person, never the bot, as the one who acted. */
export type PersonCredentials = Required<Pick<SessionCredentials, 'username' | 'password' | 'owner'>>;

export interface BillGatewayOptions {
  backend: 'bill' | 'sandbox';
  /** The base URLs (AP/AR, Spend & Expense, webhook management), the orgs allowed (empty: any) and the request timeout. */
  bill: Pick<Config['bill'], 'baseUrl' | 'spendBaseUrl' | 'eventsBaseUrl' | 'allowedOrgIds' | 'requestTimeoutMs'>;
  /** The bot's BILL user; the org comes from the conversation's binding. */
  user: { devKey: string; username: string; password: string };
  /** Org id -> its Spend & Expense token (a token answers only for its own org); no S&E client for an org without one. */
  spendApiTokens: Record<string, string>;
  limiter: Limiter;
  clock: Clock;
  log: Logger;
  secrets: SecretRegistry;
  retry?: Partial<RetryPolicy>;
  /** Cluster mode: sessions shared by the fleet through Redis (src/bill/sharedSessions.ts). */
  sessionLedger?: RedisSessionLedger;
  /** The turn a call runs in: a person's call waits for a sign-in only until its turn's deadline. */
  turns?: SessionDeps['turns'];
}

export type BillStatus = ReturnType<BillGateway['status']>;

const INTERACTIVE: RunOptions = { priority: 'interactive' };

export class BillGateway {
  readonly backend: 'bill' | 'sandbox';
  private readonly http: BillHttp;
  private readonly sessionDeps: SessionDeps;
  /** Every session slot of the process by its slotKey: the bot's one per org, and people's own (created on first use). */
  private readonly sessions = new Map<string, OrgSession>();
  private closing: Promise<void> | undefined;

  constructor(private readonly opts: BillGatewayOptions) {
    this.backend = opts.backend;
    const { limiter, clock, log, secrets } = opts;
    this.http = billHttp({ limiter, clock, log, timeoutMs: opts.bill.requestTimeoutMs, retry: opts.retry });
    this.sessionDeps = { http: this.http, clock, log, secrets, ledger: opts.sessionLedger, turns: opts.turns };
    secrets.add(opts.user.password);
    secrets.add(opts.user.devKey);
    for (const token of Object.values(opts.spendApiTokens)) secrets.add(token);
  }

  /** AP/AR endpoints of one organisation. Throws NotBound('orgNotAllowed') for an org outside BILL_ALLOWED_ORG_IDS. */
  org(orgId: string, run: RunOptions = INTERACTIVE): BillOrgClient {
    return this.client({ baseUrl: this.opts.bill.baseUrl, orgId, ...this.opts.user }, run);
  }

  /** AP/AR endpoints of one organisation in a person's own session (approvals), under the same per-org budget. */
  orgAs(orgId: string, person: PersonCredentials, run: RunOptions = INTERACTIVE): BillOrgClient {
    // The person's token is not registered with the log scrubber (a value a person typed, of any length or content):
    // it only travels in the login body, which is never logged.
    return this.client(this.personSlot(orgId, person), run);
  }

  /** Forgets a person's slot without a live session, and the refusal it keeps: their next sign-in is a fresh check. */
  forgetRefusedAs(orgId: string, person: PersonCredentials): void {
    const key = slotKey(this.personSlot(orgId, person));
    if (this.sessions.get(key)?.info().loggedIn === false) this.sessions.delete(key);
  }

  /** Logs a person's session out of BILL and forgets it (they disconnected, or replaced their token). */
  async releaseAs(orgId: string, person: PersonCredentials): Promise<void> {
    const key = slotKey(this.personSlot(orgId, person));
    const session = this.sessions.get(key);
    this.sessions.delete(key);
    await session?.logout();
  }

  /** Spend & Expense endpoints of one organisation; undefined without its own API token (never another org's). */
  spend(orgId: string, run: RunOptions = INTERACTIVE): SpendClient | undefined {
    this.checkAllowed(orgId);
    const token = this.opts.spendApiTokens[orgId];
    if (!token) return undefined;
    return spendClient(this.http, this.opts.bill.spendBaseUrl, token, run);
  }

  status() {
    return {
      backend: this.backend,
      baseUrl: this.opts.bill.baseUrl,
      /** One entry per organisation the bot has talked to (people's own approval sessions are not listed). */
      sessions: this.serviceSessions().map((s) => s.info()),
      /** Logins with the configured dev key in the last hour (BILL allows 200). */
      loginsLastHour: this.opts.limiter
        .snapshot()
        .filter((b) => b.budget === 'bill.logins')
        .reduce((sum, b) => sum + b.used, 0),
      spendConfigured: Object.values(this.opts.spendApiTokens).some(Boolean),
      /** False after a credentials refusal or a network failure that no later success cleared. */
      reachable: this.ready(),
    };
  }

  /** Readiness: no session is stuck on a credentials refusal or an unanswered network failure. Never calls BILL. */
  ready(): boolean {
    // A person's revoked token is their problem, not the bot's: only the service sessions count. A success clears lastError.
    return this.serviceSessions().every((s) => {
      const category = s.info().lastError?.category;
      return category !== 'credentials' && category !== 'network';
    });
  }

  /** Logs every session out (cluster mode: the fleet keeps them), then closes the connection pool; later calls wait for the first. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.sessions.values()].map((s) => (this.opts.sessionLedger ? s.detach() : s.logout())));
      await this.http.close();
    })();
    return this.closing;
  }

  private client(creds: SessionCredentials, run: RunOptions): BillOrgClient {
    this.checkAllowed(creds.orgId);
    const key = slotKey(creds);
    const session = this.sessions.get(key) ?? new OrgSession(this.sessionDeps, creds, { key, orgId: creds.orgId });
    this.sessions.set(key, session);
    return billOrgClient(session, run, this.opts.bill.eventsBaseUrl);
  }

  private checkAllowed(orgId: string): void {
    if (this.opts.bill.allowedOrgIds.length > 0 && !this.opts.bill.allowedOrgIds.includes(orgId)) throw new NotBound('orgNotAllowed');
  }

  private serviceSessions() {
    return [...this.sessions.values()].filter((s) => !s.creds.owner);
  }

  private personSlot(orgId: string, person: PersonCredentials): SessionCredentials {
    return { baseUrl: this.opts.bill.baseUrl, devKey: this.opts.user.devKey, orgId, ...person };
  }
}
