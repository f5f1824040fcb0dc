// Status card sections about BILL: which backend, whether it answers, this organisation's session and indexes; and
// where the audit log is. Pure: the status command gathers the data.
import type { BillStatus } from '../../bill/gateway.js';
import type { MirrorInfo } from '../../mirror/mirror.js';
import { escapeMarkdown, facts, text } from '../../cards/card.js';
import { dateTime, type FormatOptions } from '../../cards/format.js';
import type { StatusSection } from './statusCards.js';

/** "3 min", "2 h 5 min", "40 s". */
function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
}

/**
 * `pushFed`: record kinds BILL webhooks keep current for this org (their lists live CACHE_TTL_PUSHED_S); undefined
 * when notifications are not part of this deployment.
 */
export function billSection(
  status: BillStatus,
  orgId: string | undefined,
  indexes: MirrorInfo[],
  opts: FormatOptions,
  pushFed?: { kinds: string[]; pushedTtlS: number; listTtlS: number },
  who: { admin: boolean } = { admin: true },
): StatusSection {
  const rows: Array<[string, string]> = [];
  // Where BILL is (host and port) is for admins; members see which kind of backend answers and whether it does.
  // BILL_BASE_URL (or the sandbox's) is a URL: config checks it at start-up.
  const at = who.admin ? ` at ${new URL(status.baseUrl).host}` : '';
  rows.push(['Backend', status.backend === 'sandbox' ? `embedded sandbox${at} (demo organisation, simulated data)` : `BILL${at}`]);
  rows.push(['Connectivity', status.reachable ? 'reachable' : 'failing — see the last error below']);
  const session = orgId ? status.sessions.find((s) => s.orgId === orgId) : undefined;
  if (!orgId) {
    rows.push(['Session', 'no organisation bound here']);
  } else if (!session) {
    rows.push(['Session', 'not signed in yet (signs in on the first command)']);
  } else {
    rows.push([
      'Session',
      session.loggedIn && session.sessionAgeMs !== undefined
        ? `signed in ${duration(session.sessionAgeMs)} ago, idle ${duration(session.idleMs ?? 0)} (BILL ends sessions after 35 idle min)`
        : 'signed out (signs in again on the next command)',
    ]);
    rows.push(['Sign-ins', `${session.logins} since start · ${status.loginsLastHour} in the last hour for the dev key (BILL allows 200)`]);
    if (session.lastError) {
      const when = dateTime(session.lastError.at, opts);
      const cleared = session.lastSuccessAt !== undefined && session.lastSuccessAt >= session.lastError.at;
      rows.push([
        'Last error',
        `${session.lastError.code ?? session.lastError.category} (${session.lastError.category}) at ${when}${cleared ? ', answered since' : ''}`,
      ]);
    }
  }
  // `spendConfigured` is this organisation's (the status command asks for it); an admin is told where tokens go.
  const spendHint = who.admin ? ' (BILL_SPEND_API_TOKEN for BILL_ORG_ID, BILL_SPEND_API_TOKENS for others)' : '';
  rows.push([
    'Spend & Expense',
    !orgId
      ? 'no organisation bound here'
      : status.spendConfigured
        ? 'API token configured'
        : `not configured for this organisation${spendHint}`,
  ]);
  for (const ix of indexes) {
    rows.push([
      `${ix.kind.charAt(0).toUpperCase()}${ix.kind.slice(1)} index`,
      ix.complete
        ? `${ix.records.toLocaleString(opts.locale)} ${ix.scope === 'open' ? 'open records' : 'records'}, updated ${dateTime(ix.refreshedAt, opts)}`
        : `building (${ix.records.toLocaleString(opts.locale)} so far)`,
    ]);
  }
  if (orgId && pushFed) {
    rows.push([
      'Kept current by webhooks',
      pushFed.kinds.length > 0
        ? `${pushFed.kinds.join(', ')} (their lists are read again after each event, and every ${duration(pushFed.pushedTtlS * 1000)} in any case)`
        : `nothing: lists are read again every ${duration(pushFed.listTtlS * 1000)} (webhooks setup changes that)`,
    ]);
  }
  const items = [facts(rows.map(([k, v]) => [k, escapeMarkdown(v)] as [string, string]))];
  if (!status.reachable)
    items.push(text('billbridge cannot talk to BILL right now: commands that need BILL will fail until it answers again.'));
  return { title: 'BILL', items, summary: status.reachable ? undefined : 'BILL unreachable' };
}

export function auditSection(location: string): StatusSection {
  return {
    title: 'Audit log',
    items: [text(`Every command and admin action is appended to ${escapeMarkdown(location)}.`, { subtle: true })],
  };
}
