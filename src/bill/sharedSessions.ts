// Cluster mode: one BILL session per slot for the whole fleet, kept in Redis; one login at a time per slot across instances.
//
// Layout (<slot> is the pool's hashed slot key, so no dev key or username appears in a key name):
//   billbridge:bill:session:{<slot>}  JSON {ref, box, createdAt, lastUsedAt} with SECRETS_KEY, else
//                                     JSON {sessionId, createdAt, lastUsedAt}; PX = BILL's 35-minute idle expiry
//   mutex:billbridge:bill:login:{<slot>}  redis-semaphore Mutex held while one instance signs in (TTL, refreshed)
// The sessionId is a secret: it is stored here because every instance must send it, is registered in each
// instance's SecretRegistry when read (OrgSession.adopt), and never appears in a log line or an error. With
// SECRETS_KEY it is stored sealed (AES-GCM under a key derived for this purpose alone, bound to the slot's hash and
// org, so a record copied to another slot does not open) and compared by `ref`, an HMAC of it that does not reveal
// it; without SECRETS_KEY (allowed outside production, said at start-up) it is stored as it is.
import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LostLockError } from 'redis-semaphore';
import type { Clock } from '../infra/clock.js';
import { LimitExceeded, errorMessage } from '../errors.js';
import type { Logger } from '../infra/log.js';
import { SafeMutex as Mutex, type RedisConnection } from '../infra/state/redisClient.js';
import { deriveKey, openText, sealText, type SealedBox } from '../infra/state/sealing.js';
import { SESSION_IDLE_REFRESH_MS } from './sessions.js';

/** A BILL session as the pool holds it and the fleet shares it. */
export interface LiveSession {
  sessionId: string;
  createdAt: number;
  lastUsedAt: number;
}

/** BILL ends a session after 35 minutes without a call; the shared record goes with it. */
const BILL_IDLE_EXPIRY_MS = 35 * 60_000;
/** Shared lastUsedAt is moved at most this often per slot (every call moves the local one). */
const TOUCH_EVERY_MS = 15_000;
/** The login lock frees itself this long after its holder stopped refreshing it (crash). */
const LOCK_TIMEOUT_MS = 10_000;
/** How long an instance waits for another one's login before giving up with LimitExceeded('busy'). */
const WAIT_MS = 15_000;
/** How often a waiter looks for the session another instance is creating. */
const POLL_MS = 25;

/** The pool's slot: `key` is a hash of the credentials (base URL, dev key, org, username[, owner]). */
export interface Slot {
  key: string;
  orgId: string;
}

// Deletes the record only if it still holds the sessionId BILL refused: a newer session stays.
const FORGET_IF = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local ok, rec = pcall(cjson.decode, v)
if ok and (rec.ref or rec.sessionId) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`;

// Moves lastUsedAt forward (never back) and restarts the idle expiry, only for the session still shared.
const TOUCH_IF = `
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local rec = cjson.decode(v)
if (rec.ref or rec.sessionId) ~= ARGV[1] then return 0 end
local at = tonumber(ARGV[2])
if at > tonumber(rec.lastUsedAt) then
  rec.lastUsedAt = at
  redis.call('SET', KEYS[1], cjson.encode(rec), 'PX', ARGV[3])
end
return 1`;

const RELEASE_IF = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** The record as stored in Redis: sessionId without SECRETS_KEY only. */
interface StoredSession extends Partial<LiveSession> {
  /** With SECRETS_KEY: HMAC of the sessionId (what the scripts compare) and the sealed sessionId. */
  ref?: string;
  box?: SealedBox;
}

/** Where a slot's live session is shared by the instances of a fleet (the session pool's ledger in cluster mode). */
export class RedisSessionLedger {
  private readonly lastTouch = new Map<string, number>();
  private readonly keys: { seal: Buffer; ref: Buffer } | undefined;

  constructor(
    private readonly deps: {
      redis: RedisConnection;
      clock: Clock;
      log: Logger;
      /** SECRETS_KEY: sessionIds are stored sealed with a key derived from it; without it they are stored as they are. */
      secretsKey?: Buffer;
    },
  ) {
    const key = deps.secretsKey;
    if (key) this.keys = { seal: deriveKey(key, 'bill-sessions/seal/v1'), ref: deriveKey(key, 'bill-sessions/ref/v1') };
    else
      deps.log.warn(
        'SECRETS_KEY is not set: the BILL session the instances share is stored in Redis unencrypted; set SECRETS_KEY to seal it',
      );
  }

  /** The fleet's live session, or the one `login` creates (one login per slot fleet-wide); never `dead`, the sessionId BILL
   * just refused, so instances that see BDC_1109 together log in once. */
  async obtain(slot: Slot, login: () => Promise<LiveSession>, dead?: string): Promise<LiveSession> {
    const giveUpAt = Date.now() + WAIT_MS;
    for (;;) {
      const found = await this.read(slot, dead);
      if (found) return found;
      const lock = new Mutex(this.deps.redis.client, this.key(slot, 'login'), {
        lockTimeout: LOCK_TIMEOUT_MS,
        acquireAttemptsLimit: 1,
        refreshInterval: Math.round(LOCK_TIMEOUT_MS * 0.3),
        onLockLost: (err: LostLockError) =>
          this.deps.log.warn({ orgId: slot.orgId, err: err.message }, 'BILL login lock lost in Redis while signing in'),
      });
      const acquired = await this.deps.redis
        .run(() => lock.tryAcquire())
        .catch((err: unknown) => {
          // A timed-out acquire may still run once Redis answers again: drop the lock right behind it.
          this.deps.redis.eval(RELEASE_IF, [`mutex:${this.key(slot, 'login')}`], [lock.identifier]).catch(() => undefined);
          throw err;
        });
      if (acquired) {
        try {
          // Another instance may have finished its login between our read and our lock.
          const again = await this.read(slot, dead);
          if (again) return again;
          const live = await login();
          await this.write(slot, live).catch((err: unknown) => {
            // The session works; the other instances will sign in for themselves until Redis takes writes again.
            this.deps.log.warn({ orgId: slot.orgId, err: errorMessage(err) }, 'could not share the new BILL session through Redis');
          });
          return live;
        } finally {
          await lock.release().catch(() => undefined);
        }
      }
      if (Date.now() >= giveUpAt) {
        this.deps.log.warn({ orgId: slot.orgId, waitedMs: WAIT_MS }, 'another instance is still signing in to BILL; giving up waiting');
        throw new LimitExceeded('bill.logins', 2_000, 'busy');
      }
      await sleep(POLL_MS);
    }
  }

  /** BILL refused (or we ended) this sessionId: forget it fleet-wide if it is still the shared one (compare-and-swap). */
  async invalidate(slot: Slot, sessionId: string): Promise<void> {
    await this.deps.redis.eval(FORGET_IF, [this.key(slot, 'session')], [this.refOf(sessionId)]);
  }

  /** The session was used now: the fleet shares BILL's sliding idle clock. Best effort, never throws. */
  touch(slot: Slot, session: LiveSession): void {
    const key = this.key(slot, 'session');
    const now = this.deps.clock.now();
    if (now - (this.lastTouch.get(key) ?? 0) < TOUCH_EVERY_MS) return;
    this.lastTouch.set(key, now);
    if (this.lastTouch.size > 10_000) this.lastTouch.clear();
    this.deps.redis
      .eval(TOUCH_IF, [key], [this.refOf(session.sessionId), session.lastUsedAt, BILL_IDLE_EXPIRY_MS])
      .catch((err: unknown) =>
        this.deps.log.debug({ orgId: slot.orgId, err: errorMessage(err) }, 'could not share the BILL session idle clock'),
      );
  }

  /** The shared session unless absent, `dead` or idle too long; with SECRETS_KEY a record that does not open counts as none. */
  private async read(slot: Slot, dead: string | undefined): Promise<LiveSession | undefined> {
    const raw = await this.deps.redis.run((r) => r.get(this.key(slot, 'session')));
    if (!raw) return undefined;
    let rec: StoredSession;
    try {
      rec = JSON.parse(raw) as StoredSession;
    } catch {
      return undefined;
    }
    let sessionId: string | undefined;
    if (this.keys) {
      if (!rec.box) return undefined;
      try {
        sessionId = openText(this.keys.seal, rec.box, this.aad(slot));
      } catch {
        this.deps.log.warn({ orgId: slot.orgId }, 'shared BILL session record cannot be opened with SECRETS_KEY; signing in again');
        return undefined;
      }
    } else sessionId = rec.sessionId;
    const lastUsedAt = Number(rec.lastUsedAt) || 0;
    if (typeof sessionId !== 'string' || sessionId === '' || sessionId === dead) return undefined;
    if (this.deps.clock.now() - lastUsedAt >= SESSION_IDLE_REFRESH_MS) return undefined;
    return { sessionId, createdAt: Number(rec.createdAt) || 0, lastUsedAt };
  }

  private async write(slot: Slot, live: LiveSession): Promise<void> {
    const secret: StoredSession = this.keys
      ? { ref: this.refOf(live.sessionId), box: sealText(this.keys.seal, live.sessionId, this.aad(slot)) }
      : { sessionId: live.sessionId };
    const rec: StoredSession = { ...secret, createdAt: live.createdAt, lastUsedAt: live.lastUsedAt };
    await this.deps.redis.run((r) => r.set(this.key(slot, 'session'), JSON.stringify(rec), 'PX', BILL_IDLE_EXPIRY_MS));
  }

  /** What the scripts compare: the sessionId itself when stored in plain, else a keyed HMAC of it. */
  private refOf(sessionId: string): string {
    return this.keys ? createHmac('sha256', this.keys.ref).update(sessionId, 'utf8').digest('base64url') : sessionId;
  }

  /** The sealed sessionId belongs to this slot and org: a record moved to another key does not open. */
  private aad(slot: Slot): string {
    return `bill-session|${slot.key}|${slot.orgId}`;
  }

  /** The shared record (`session`) or the login lock (`login`) of a slot. */
  private key(slot: Slot, what: 'session' | 'login'): string {
    return `${this.deps.redis.keyPrefix}bill:${what}:{${slot.key}}`;
  }
}
