// BILL API sessions: one per (base URL, dev key, org, username), single-flight login, sliding idle clock, re-login on BDC_1109.
//
// Verified facts (developer.bill.com /docs/api-login-best-practices, /docs/api-rate-limits; Postman "API login"):
// - POST /v3/login {username, password, organizationId, devKey} -> {organizationId, sessionId, trusted, userId};
//   devKey goes in the body for login and in a header for every other call;
// - a session expires after 35 minutes without a call, and every call restarts that clock; there is no refresh;
// - 200 logins per dev key per hour; POST /v3/logout ends a session (200, empty body).
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../infra/clock.js';
import { BillApiError, LimitExceeded, errorMessage } from '../errors.js';
import type { Logger, SecretRegistry } from '../infra/log.js';
import type { RunOptions } from '../infra/limits/types.js';
import type { UpstreamCallCounter } from '../infra/upstreamCalls.js';
import type { BillHttp, BillRequest } from './http.js';
import type { LiveSession, RedisSessionLedger, Slot } from './sharedSessions.js';

/** Re-login before BILL's 35-minute idle expiry (a session idle this long is not reused, here or in the ledger). Here, not
 * in sharedSessions.ts: importing that loads ioredis and redis-semaphore (78 modules, 1.1 MB live heap) one instance never uses. */
export const SESSION_IDLE_REFRESH_MS = 30 * 60_000;

export interface SessionCredentials {
  baseUrl: string;
  devKey: string;
  username: string;
  password: string;
  orgId: string;
  /** A person's own session (approvals): the slot is theirs alone, and a new token gets a new slot. Not on the bot's. */
  owner?: string;
}

export type SessionCall = Pick<BillRequest, 'method' | 'path' | 'query' | 'body' | 'route'> & {
  /** Safe to repeat (retried after network errors and 5xx, replayed after a re-login); default: GET and DELETE are. */
  idempotent?: boolean;
  /** Another base on the same session, e.g. the webhook management base (/connect-events). */
  baseUrl?: string;
  /** Extra headers (X-Idempotent-Key). */
  headers?: Record<string, string>;
  /** The call makes BILL send an email (network invitations): it also passes the bill.email budget. */
  email?: boolean;
};

export interface SessionDeps {
  http: BillHttp;
  clock: Clock;
  log: Logger;
  secrets: SecretRegistry;
  /** Cluster mode: the fleet shares one session per slot; without it, each process logs in. */
  ledger?: RedisSessionLedger;
  /** The turn a caller runs in: a person waits for a sign-in only until its deadline. */
  turns?: Pick<UpstreamCallCounter, 'scope'>;
}

/** After BILL refuses the credentials, fail fast for this long instead of burning the login budget. */
const CREDENTIAL_RETRY_MS = 60_000;
/** A person's refused token is not tried again for an hour: their slot is keyed by it, so a retry only spends logins
 * (`connect` drops the slot before it checks a token). */
const PERSON_CREDENTIAL_RETRY_MS = 60 * 60_000;
/** After BILL refuses a session it issued before it answered any call with it, no sign-in for this long. */
const UNUSABLE_SESSION_RETRY_MS = 60_000;
/** How often a person waiting for a sign-in looks whether their turn is over (the app clock may be moved by tests). */
const TURN_CHECK_MS = 25;
/** A sessionId stays scrubbed from log lines this long after its last use (BILL ends it after 35 idle minutes), or until dropped. */
const SESSION_SECRET_TTL_MS = 40 * 60_000;

/** A slot per (base URL, dev key, org, username[, owner, token fingerprint]), hashed: no dev key or username in a key name. */
export function slotKey(creds: SessionCredentials): string {
  const owner = creds.owner ? `${creds.owner}#${sha256(creds.password).slice(0, 16)}` : '';
  return sha256([creds.baseUrl, creds.devKey, creds.orgId, creds.username.toLowerCase(), owner].join('\n')).slice(0, 32);
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** One BILL session slot: at most one live sessionId, at most one login in flight. */
export class OrgSession {
  private current: LiveSession | undefined;
  private pending: Promise<LiveSession> | undefined;
  private logins = 0;
  private lastError: { category: string; code?: string; at: number } | undefined;
  /** No sign-in before `until`: BILL refused the credentials, or refused a session it had just issued. */
  private signInHeld: { error: BillApiError; until: number } | undefined;
  /** The session this slot signed in for that has not answered a call yet: BILL refusing it means signing in again is no cure. */
  private unproven: string | undefined;

  constructor(
    private readonly deps: SessionDeps,
    readonly creds: SessionCredentials,
    /** How the ledger knows this slot: slotKey(creds), as the pool found it. */
    private readonly slot: Slot,
  ) {}

  info() {
    const now = this.deps.clock.now();
    const live = this.current;
    return {
      orgId: this.creds.orgId,
      loggedIn: !!live,
      sessionAgeMs: live ? now - live.createdAt : undefined,
      idleMs: live ? now - live.lastUsedAt : undefined,
      logins: this.logins,
      lastError: this.lastError,
    };
  }

  /** Makes a call with the session headers; on BDC_1109 re-logs in once (single flight) and replays idempotent calls once. */
  async call<T>(req: SessionCall, run: RunOptions): Promise<T> {
    const { baseUrl, headers, email, ...call } = req;
    const idempotent = req.idempotent ?? (req.method === 'GET' || req.method === 'DELETE');
    const { devKey, orgId } = this.creds;
    let used = (await this.ensure(run)).sessionId;
    for (let replayed = false; ; replayed = true) {
      try {
        const value = await this.deps.http.send<T>({
          ...call,
          idempotent,
          baseUrl: baseUrl ?? this.creds.baseUrl,
          run,
          upstream: { service: 'bill', devKey, orgId, email },
          headers: () => {
            // Inside the limiter slot: a caller that queued behind a re-login uses the new session.
            used = this.current?.sessionId ?? used;
            this.touch(used);
            return { ...headers, devKey, sessionId: used };
          },
        });
        this.lastError = undefined;
        if (this.unproven === used) this.unproven = undefined;
        return value;
      } catch (err) {
        if (!(err instanceof BillApiError) || err.category !== 'session') throw this.failed(err);
        if (this.unproven === used) {
          // A session BILL issued and refused before it answered anything: signing in again for every command
          // would spend the dev key's 200 sign-ins an hour on sessions that do not work.
          this.unproven = undefined;
          this.signInHeld = { error: err, until: this.deps.clock.now() + UNUSABLE_SESSION_RETRY_MS };
          this.deps.log.error({ orgId, route: req.route }, 'BILL refused a session it has just issued (BDC_1109); no sign-in for a minute');
        }
        this.invalidate(used);
        if (!idempotent || replayed) throw this.failed(err);
        this.deps.log.info({ orgId, route: req.route }, 'BILL session expired (BDC_1109); signing in again');
        used = (await this.ensure(run, used)).sessionId;
      }
    }
  }

  async logout(): Promise<void> {
    await this.pending?.catch(() => undefined);
    const live = this.current;
    if (!live) return;
    this.current = undefined;
    const { devKey, orgId } = this.creds;
    try {
      await this.post('/v3/logout', {
        idempotent: false,
        run: { priority: 'background', maxWaitMs: 5_000 },
        upstream: { service: 'bill', devKey, orgId },
        headers: () => ({ devKey, sessionId: live.sessionId }),
      });
      this.deps.log.info({ orgId }, 'BILL session closed');
    } catch (err) {
      this.deps.log.warn({ orgId, error: errorMessage(err) }, 'BILL logout failed; the session will expire by itself');
    } finally {
      this.deps.secrets.delete(live.sessionId);
      await this.deps.ledger?.invalidate(this.slot, live.sessionId).catch(() => undefined);
    }
  }

  /** Forgets the session here without ending it: other instances of the fleet keep using it (shutdown in cluster mode). */
  async detach(): Promise<void> {
    await this.pending?.catch(() => undefined);
    if (this.current) this.drop(this.current);
  }

  /** A live session, logging in (once, shared by every concurrent caller) when there is none or it sat idle too long. */
  private ensure(run: RunOptions, dead?: string): Promise<LiveSession> {
    const now = this.deps.clock.now();
    const live = this.current;
    if (live && now - live.lastUsedAt < SESSION_IDLE_REFRESH_MS) return Promise.resolve(live);
    if (live) {
      this.deps.log.info(
        { orgId: this.creds.orgId, idleMin: Math.round((now - live.lastUsedAt) / 60_000) },
        'BILL session idle; signing in again before it expires',
      );
      this.drop(live);
    }
    if (!this.pending) {
      const ledger = this.deps.ledger;
      const next = ledger ? ledger.obtain(this.slot, () => this.login(run), dead) : this.login(run);
      this.pending = next
        .then((s) => this.adopt(s))
        .finally(() => {
          this.pending = undefined;
        });
    }
    return this.waitFor(this.pending, run);
  }

  /** A person's turn waits for the shared sign-in until its deadline, then gets LimitExceeded('busy'); anyone else waits it out. */
  private async waitFor<T>(pending: Promise<T>, run: RunOptions): Promise<T> {
    const endBy = run.priority === 'interactive' ? this.deps.turns?.scope()?.deadline : undefined;
    if (endBy === undefined) return pending;
    const settled = Promise.allSettled([pending]).then(() => true);
    while (this.deps.clock.now() < endBy) {
      if (await Promise.race([settled, sleep(TURN_CHECK_MS, false)])) return pending;
    }
    this.deps.log.warn({ orgId: this.creds.orgId }, "BILL sign-in still under way when the person's turn ended; answering busy");
    throw new LimitExceeded('bill.logins', 2_000, 'busy');
  }

  private async login(run: RunOptions): Promise<LiveSession> {
    const { devKey, orgId, username, password } = this.creds;
    if (this.signInHeld && this.deps.clock.now() < this.signInHeld.until) throw this.signInHeld.error;
    this.logins++;
    const res = await this.post<{ sessionId?: string } | null>('/v3/login', {
      // Login is safe to repeat after a network error: at worst BILL holds one more idle session.
      idempotent: true,
      run,
      // The limiter's login budgets (200 an hour per dev key, people's share of them) refuse before BILL is called.
      upstream: { service: 'bill.login', devKey, orgId, person: !!this.creds.owner },
      headers: () => ({}),
      body: { username, password, organizationId: orgId, devKey },
    }).catch((err: unknown) => {
      if (err instanceof BillApiError && err.category === 'credentials') {
        const retryMs = this.creds.owner ? PERSON_CREDENTIAL_RETRY_MS : CREDENTIAL_RETRY_MS;
        this.signInHeld = { error: err, until: this.deps.clock.now() + retryMs };
        this.deps.log.error({ orgId, code: err.code }, 'BILL refused the sign-in credentials');
      }
      throw this.failed(err);
    });
    if (!res?.sessionId)
      throw this.failed(new BillApiError({ category: 'unknown', status: 200, message: 'BILL login answer carried no sessionId' }));
    // A secret from now on: in cluster mode the ledger handles it before adopt() sees it.
    this.deps.secrets.add(res.sessionId, SESSION_SECRET_TTL_MS);
    this.signInHeld = undefined;
    this.unproven = res.sessionId;
    this.deps.log.info({ orgId, logins: this.logins }, 'BILL session opened');
    const at = this.deps.clock.now();
    return { sessionId: res.sessionId, createdAt: at, lastUsedAt: at };
  }

  /** Login and logout: the session's own calls, outside call(). */
  private post<T>(path: '/v3/login' | '/v3/logout', req: Pick<BillRequest, 'idempotent' | 'run' | 'upstream' | 'headers' | 'body'>) {
    return this.deps.http.send<T>({ ...req, method: 'POST', baseUrl: this.creds.baseUrl, path, route: `POST ${path}` });
  }

  /** The session just logged in, or the fleet's (cluster mode, maybe another instance's): its id is a secret here. */
  private adopt(s: LiveSession): LiveSession {
    this.deps.secrets.add(s.sessionId, SESSION_SECRET_TTL_MS);
    this.current = { ...s };
    return this.current;
  }

  /** Forgets the session only if it is still the current one (a newer session from a concurrent re-login stays). */
  private invalidate(sessionId: string): void {
    if (this.current?.sessionId === sessionId) this.drop(this.current);
    this.deps.ledger?.invalidate(this.slot, sessionId).catch(() => undefined);
  }

  private drop(live: LiveSession): void {
    if (this.current === live) this.current = undefined;
    this.deps.secrets.delete(live.sessionId);
  }

  private touch(sessionId: string): void {
    if (this.current?.sessionId !== sessionId) return;
    this.current.lastUsedAt = this.deps.clock.now();
    // In use: it stays scrubbed for another SESSION_SECRET_TTL_MS.
    this.deps.secrets.add(sessionId, SESSION_SECRET_TTL_MS);
    this.deps.ledger?.touch(this.slot, this.current);
  }

  private failed(err: unknown): unknown {
    if (err instanceof BillApiError) this.lastError = { category: err.category, code: err.code, at: this.deps.clock.now() };
    else if (err instanceof LimitExceeded) this.lastError = { category: `limit:${err.reason}`, at: this.deps.clock.now() };
    return err;
  }
}
