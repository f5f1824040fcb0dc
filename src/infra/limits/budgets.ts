// The budget catalogue: which named budgets a call to an upstream must pass, with limits from config.limits.
import { createHash } from 'node:crypto';
import type { Config } from '../../config.js';
import type { Upstream } from './types.js';
import { HOUR_MS, type RateWindow } from './windows.js';

export type BudgetName =
  | 'bill.requests'
  | 'bill.concurrency'
  | 'bill.logins'
  | 'bill.logins.people'
  | 'bill.email'
  | 'spend.requests'
  | 'graph.app'
  | 'graph.tenant'
  | 'graph.team'
  | 'identity'
  | 'connector.thread';

export type BudgetRule =
  /** A reservoir refilled at the top of every clock hour; spent -> fail fast. */
  | { type: 'hourly'; limit: number }
  /** Sliding windows over call start times. */
  | { type: 'windows'; windows: RateWindow[] }
  /** Calls in flight at once. */
  | { type: 'concurrency'; limit: number }
  /** Counted, never limited. */
  | { type: 'unlimited' };

export interface BudgetRef {
  budget: BudgetName;
  /** Hashed secret, org id, tenant id, team id, conversation id; "" for app-wide budgets. */
  key: string;
  /** budget + key: the name the store knows it by. */
  id: string;
  rule: BudgetRule;
  /** When spent, refuse at once with this reason instead of queueing. */
  failFast?: 'hourly' | 'logins' | 'busy';
  /** A 429 Retry-After from this upstream pauses this budget. */
  pauseOnRetryAfter: boolean;
  /** Kept per conversation or team: shown as one aggregate row, idle keys are forgotten. */
  aggregate: boolean;
}

const MAX_KEY_LENGTH = 120;

/**
 * A secret (dev key, apiToken) as a short, stable, one-way name: safe in budget ids, logs and metric labels.
 * 48 bits of SHA-256 cannot be reversed into a high-entropy key and do not collide among a handful of keys.
 */
function hashSecret(secret: string): string {
  return 'k' + createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 12);
}

/**
 * Teams counts bot sends per thread, where a thread is a 1:1 chat, a group chat or a team channel; a
 * channel reply chain (";messageid=...") belongs to its channel.
 */
export function threadKey(conversationId: string): string {
  const i = conversationId.indexOf(';messageid=');
  return i >= 0 ? conversationId.slice(0, i) : conversationId;
}

function cleanKey(key: string): string {
  // eslint-disable-next-line no-control-regex -- removing control characters is the point
  const k = key.replace(/[\u0000-\u001f\u007f]/g, '');
  return k.length > MAX_KEY_LENGTH ? k.slice(0, MAX_KEY_LENGTH) : k;
}

export class BudgetCatalogue {
  /** secret -> hash, so a busy path does not hash the same key on every call. */
  private readonly hashes = new Map<string, string>();

  constructor(private readonly limits: Config['limits']) {}

  private hashed(secret: string): string {
    let h = this.hashes.get(secret);
    if (!h) {
      if (this.hashes.size > 1_000) this.hashes.clear();
      h = hashSecret(secret);
      this.hashes.set(secret, h);
    }
    return h;
  }

  private ref(budget: BudgetName, key: string, rule: BudgetRule, extra: Partial<BudgetRef> = {}): BudgetRef {
    const k = cleanKey(key);
    return { budget, key: k, id: `${budget}|${k}`, rule, pauseOnRetryAfter: false, aggregate: false, ...extra };
  }

  /** Every budget a call to `up` passes, in the order they are acquired. */
  budgetsFor(up: Upstream): BudgetRef[] {
    const l = this.limits;
    switch (up.service) {
      case 'bill':
      case 'bill.login': {
        const key = this.hashed(up.devKey);
        // Concurrency first: the hourly reservoir is only charged once a slot is held and the call really goes.
        const refs = [
          this.ref(
            'bill.concurrency',
            `${key}/${up.orgId}`,
            { type: 'concurrency', limit: l.billConcurrency },
            { pauseOnRetryAfter: true },
          ),
        ];
        if (up.service === 'bill.login') {
          // People's sign-ins (connect, approvals) first take from their share, so a refused one never takes a login
          // the bot keeps for itself (LIMIT_BILL_LOGINS_RESERVED), then from the dev key's whole budget like any login.
          if (up.person) {
            refs.push(
              this.ref(
                'bill.logins.people',
                key,
                { type: 'windows', windows: [{ limit: Math.max(1, l.billLoginsPerHour - l.billLoginsReserved), windowMs: HOUR_MS }] },
                { failFast: 'logins' },
              ),
            );
          }
          refs.push(
            this.ref(
              'bill.logins',
              key,
              { type: 'windows', windows: [{ limit: l.billLoginsPerHour, windowMs: HOUR_MS }] },
              { failFast: 'logins' },
            ),
          );
        }
        // BILL allows 5 calls a minute to endpoints that send email or SMS (network invitations): a person waiting on
        // a click is told at once when to try again rather than held for most of a minute.
        if (up.service === 'bill' && up.email)
          refs.push(
            this.ref(
              'bill.email',
              `${key}/${up.orgId}`,
              { type: 'windows', windows: [{ limit: 5, windowMs: 60_000 }] },
              { failFast: 'busy' },
            ),
          );
        refs.push(this.ref('bill.requests', key, { type: 'hourly', limit: l.billRequestsPerHour }, { failFast: 'hourly' }));
        return refs;
      }
      case 'spend':
        return [
          this.ref(
            'spend.requests',
            this.hashed(up.token),
            { type: 'windows', windows: [{ limit: l.spendPerMinute, windowMs: 60_000 }] },
            { pauseOnRetryAfter: true },
          ),
        ];
      case 'graph': {
        const refs: BudgetRef[] = [];
        if (up.teamId)
          refs.push(
            this.ref(
              'graph.team',
              up.teamId,
              { type: 'windows', windows: [{ limit: l.graphTeamPerSecond, windowMs: 1_000 }] },
              { pauseOnRetryAfter: true, aggregate: true },
            ),
          );
        refs.push(
          this.ref(
            'graph.tenant',
            up.tenantId,
            { type: 'windows', windows: [{ limit: l.graphTenantPerSecond, windowMs: 1_000 }] },
            { pauseOnRetryAfter: true },
          ),
        );
        refs.push(this.ref('graph.app', '', { type: 'windows', windows: [{ limit: l.graphAppPerSecond, windowMs: 1_000 }] }));
        return refs;
      }
      case 'identity':
        return [this.ref('identity', up.tenantId, { type: 'unlimited' }, { pauseOnRetryAfter: true })];
      case 'connector':
        return [
          this.ref(
            'connector.thread',
            threadKey(up.conversationId),
            { type: 'windows', windows: l.connectorThread },
            { pauseOnRetryAfter: true, aggregate: true },
          ),
        ];
    }
  }
}
