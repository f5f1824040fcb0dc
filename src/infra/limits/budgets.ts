// The budget catalogue: which named budgets a call to an upstream must pass, with limits from config.limits.
import { createHash } from 'node:crypto';
import type { Config } from '../../config.js';
import type { Upstream } from './types.js';
import { HOUR_MS, type RateWindow } from './windows.js';

export type BudgetRule =
  /** A reservoir refilled at the top of every clock hour. */
  | { type: 'hourly'; limit: number }
  /** Sliding windows over call start times. */
  | { type: 'windows'; windows: RateWindow[] }
  /** Calls in flight at once. */
  | { type: 'concurrency'; limit: number }
  /** Counted, never limited. */
  | { type: 'unlimited' };

export interface BudgetRef {
  /** e.g. "bill.concurrency", "connector.thread". */
  budget: string;
  /** Hashed secret, org id, tenant id, team id, conversation id; "" for app-wide budgets. */
  key: string;
  /** budget + key: the name the store knows it by. */
  id: string;
  rule: BudgetRule;
  /** When spent, refuse at once with this reason instead of queueing. */
  failFast?: 'hourly' | 'logins' | 'busy';
  /** A 429 Retry-After from this upstream pauses this budget. */
  pauseOnRetryAfter?: boolean;
  /** Kept per conversation or team: shown as one aggregate row, idle keys are forgotten. */
  aggregate?: boolean;
}

/** A secret (dev key, apiToken) as a short one-way name for budget ids, logs and metric labels: 48 bits of SHA-256. */
function hashed(secret: string): string {
  return 'k' + createHash('sha256').update(secret, 'utf8').digest('hex').slice(0, 12);
}

/** Teams counts bot sends per thread (a 1:1 chat, a group chat, a channel); a reply chain (";messageid=...") is its channel's. */
export function threadKey(conversationId: string): string {
  const i = conversationId.indexOf(';messageid=');
  return i >= 0 ? conversationId.slice(0, i) : conversationId;
}

function ref(budget: string, key: string, rule: BudgetRule, flags: Partial<BudgetRef> = {}): BudgetRef {
  // Keys are ids from Teams and BILL that end up in Redis keys and logs: no control characters, bounded length.
  const k = key.replace(/\p{Cc}/gu, '').slice(0, 120);
  return { budget, key: k, id: `${budget}|${k}`, rule, ...flags };
}

/** Microsoft Graph's Teams limits, calls per second: per app across tenants, per app in one tenant, against one team. */
const GRAPH_PER_SECOND = { app: 1_500, tenant: 30, team: 4 };

const perWindow = (limit: number, windowMs: number): BudgetRule => ({ type: 'windows', windows: [{ limit, windowMs }] });

/** Every budget a call to `up` passes, in the order they are acquired. */
export function budgetsFor(limits: Config['limits'], up: Upstream): BudgetRef[] {
  switch (up.service) {
    case 'bill':
    case 'bill.login': {
      const key = hashed(up.devKey);
      // Concurrency first: the hourly reservoir is only charged once a slot is held and the call really goes.
      const refs = [
        ref('bill.concurrency', `${key}/${up.orgId}`, { type: 'concurrency', limit: limits.billConcurrency }, { pauseOnRetryAfter: true }),
      ];
      // People's sign-ins (connect, approvals) first take from their share, so a refused one never takes a login
      // the bot keeps for itself (LIMIT_BILL_LOGINS_RESERVED), then from the dev key's whole budget like any login.
      if (up.service === 'bill.login' && up.person) {
        const share = Math.max(1, limits.billLoginsPerHour - limits.billLoginsReserved);
        refs.push(ref('bill.logins.people', key, perWindow(share, HOUR_MS), { failFast: 'logins' }));
      }
      if (up.service === 'bill.login')
        refs.push(ref('bill.logins', key, perWindow(limits.billLoginsPerHour, HOUR_MS), { failFast: 'logins' }));
      // BILL allows 5 calls a minute to endpoints that send email or SMS (network invitations): a person waiting on
      // a click is told at once when to try again rather than held for most of a minute.
      if (up.service === 'bill' && up.email) refs.push(ref('bill.email', `${key}/${up.orgId}`, perWindow(5, 60_000), { failFast: 'busy' }));
      refs.push(ref('bill.requests', key, { type: 'hourly', limit: limits.billRequestsPerHour }, { failFast: 'hourly' }));
      return refs;
    }
    case 'spend':
      return [ref('spend.requests', hashed(up.token), perWindow(limits.spendPerMinute, 60_000), { pauseOnRetryAfter: true })];
    case 'graph': {
      const team = up.teamId
        ? [ref('graph.team', up.teamId, perWindow(GRAPH_PER_SECOND.team, 1_000), { pauseOnRetryAfter: true, aggregate: true })]
        : [];
      const tenant = ref('graph.tenant', up.tenantId, perWindow(GRAPH_PER_SECOND.tenant, 1_000), { pauseOnRetryAfter: true });
      return [...team, tenant, ref('graph.app', '', perWindow(GRAPH_PER_SECOND.app, 1_000))];
    }
    case 'identity':
      return [ref('identity', up.tenantId, { type: 'unlimited' }, { pauseOnRetryAfter: true })];
    case 'connector': {
      const rule: BudgetRule = { type: 'windows', windows: limits.connectorThread };
      return [ref('connector.thread', threadKey(up.conversationId), rule, { pauseOnRetryAfter: true, aggregate: true })];
    }
  }
}
