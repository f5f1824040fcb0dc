// The status card: a title, then sections (upstream budgets, cache, and whatever other parts add), then the version.
import type { AnswerStats } from '../../mirror/answers.js';
import type { BudgetSnapshot } from '../../infra/limits/types.js';
import {
  adaptiveCard,
  container,
  escapeMarkdown,
  subtitle,
  table,
  text,
  title,
  type CardElement,
  type CardReply,
} from '../../cards/card.js';
import { clockTime, type FormatOptions } from '../../cards/format.js';
import { versionFooter } from '../../cards/help.js';

/** One block of the status card; other parts (org binding, BILL connectivity, session age) add their own. */
export interface StatusSection {
  title: string;
  items: CardElement[];
  /** One line for the card summary, when the section has something worth saying there. */
  summary?: string;
}

export interface StatusCardOptions extends FormatOptions {
  version: string;
  now: number;
  /** Footer note, e.g. "Demo organisation — simulated data". */
  note?: string;
}

/** Rows beyond this are summed up in one line, keeping the card small. */
const MAX_BUDGET_ROWS = 20;

const BUDGET_LABELS: Record<string, string> = {
  'bill.requests': 'BILL requests',
  'bill.concurrency': 'BILL calls in flight',
  'bill.logins': 'BILL sign-ins',
  'bill.logins.people': "BILL sign-ins (people's share)",
  'bill.email': 'BILL emails (network invitations)',
  'spend.requests': 'Spend & Expense requests',
  'graph.app': 'Graph (whole app)',
  'graph.tenant': 'Graph (tenant)',
  'graph.team': 'Graph (busiest team)',
  identity: 'Entra token requests',
  'connector.thread': 'Teams sends (busiest thread)',
};

const THROTTLE_WORDS: Record<string, string> = {
  concurrency: 'too many in flight',
  hourly: 'hourly limit reached',
  retryAfter: 'asked to retry later',
};

function count(n: number, locale: string): string {
  return Number.isFinite(n) ? n.toLocaleString(locale) : '∞';
}

function per(windowMs: number | undefined): string {
  if (windowMs === undefined) return '';
  if (windowMs === 3_600_000) return ' / h';
  if (windowMs === 60_000) return ' / min';
  if (windowMs % 1_000 === 0) return windowMs === 1_000 ? ' / s' : ` / ${windowMs / 1_000} s`;
  return ` / ${windowMs} ms`;
}

/**
 * Who or what the row is for: an organisation, a tenant, a hashed key, or how many threads/teams are active. BILL
 * organisation ids are for admins; a member's rows are their own organisation's ("this organisation").
 */
function scope(row: BudgetSnapshot, admin: boolean): string {
  if (row.key === '') return '';
  if (row.key === '*') return row.keys ? ` · ${row.keys} active` : '';
  if (row.budget === 'bill.concurrency') return admin ? ` · org ${row.key.split('/').pop()}` : ' · this organisation';
  if (row.budget === 'graph.tenant' || row.budget === 'identity') return ` · tenant ${row.key.slice(0, 8)}…`;
  return ` · key ${row.key}`;
}

function budgetLabel(budget: string): string {
  return BUDGET_LABELS[budget] ?? budget;
}

/**
 * The budgets a person may see. Everyone sees app-wide budgets (dev keys and tokens only as hashes) and the
 * aggregated thread/team rows; other organisations' and tenants' rows are for billbridge admins only.
 */
export function budgetsSection(
  all: BudgetSnapshot[],
  opts: StatusCardOptions,
  who: { admin: boolean; orgId?: string; tenantId?: string },
): StatusSection {
  const { locale } = opts;
  const order = Object.keys(BUDGET_LABELS);
  const rank = (b: string) => (order.includes(b) ? order.indexOf(b) : order.length);
  const visible = who.admin
    ? all
    : all.filter((r) => {
        if (r.budget === 'bill.concurrency') return who.orgId !== undefined && r.key.endsWith(`/${who.orgId}`);
        if (r.budget === 'graph.tenant' || r.budget === 'identity') return r.key.toLowerCase() === who.tenantId?.toLowerCase();
        return true;
      });
  const rows = [...visible].sort((a, b) => rank(a.budget) - rank(b.budget) || a.key.localeCompare(b.key));
  const shown = rows.slice(0, MAX_BUDGET_ROWS);
  if (rows.length === 0) return { title: 'Upstream budgets', items: [text('No upstream calls yet.', { subtle: true })] };
  const items: CardElement[] = [
    table(
      [{ header: 'Budget' }, { header: 'Used', figure: true }, { header: 'Waiting' }, { header: 'Running' }, { header: 'Refused' }],
      shown.map((r) => {
        const limit =
          r.configuredLimit !== undefined ? `${count(r.limit, locale)} (of ${count(r.configuredLimit, locale)})` : count(r.limit, locale);
        return [
          // The label is ours ("Teams sends (busiest thread)"); the scope may carry a key or an id.
          budgetLabel(r.budget) + escapeMarkdown(scope(r, who.admin)),
          `${count(r.used, locale)} of ${limit}${per(r.windowMs)}`,
          count(r.queued, locale),
          count(r.running, locale),
          count(r.rejected, locale),
        ];
      }),
    ),
  ];
  if (rows.length > shown.length) items.push(text(`…and ${rows.length - shown.length} more budgets (see /metrics).`, { subtle: true }));

  const why = (row: BudgetSnapshot) => THROTTLE_WORDS[row.lastThrottleKind ?? ''] ?? 'throttled';
  const blocked = rows.flatMap((row) =>
    row.blockedUntil !== undefined && row.blockedUntil > opts.now ? [{ row, until: row.blockedUntil }] : [],
  );
  for (const { row, until } of blocked) {
    items.push(text(`**${escapeMarkdown(budgetLabel(row.budget))}** is paused until ${clockTime(until, opts)} (${why(row)}).`));
  }
  // The latest throttle (on a tie, the first row).
  let last: { row: BudgetSnapshot; at: number } | undefined;
  for (const row of rows)
    if (row.lastThrottleAt !== undefined && (!last || row.lastThrottleAt > last.at)) last = { row, at: row.lastThrottleAt };
  items.push(
    last
      ? text(
          `Last server-side throttle: ${escapeMarkdown(budgetLabel(last.row.budget))}, ${why(last.row)}, at ${clockTime(last.at, opts)}.`,
          { subtle: blocked.length === 0 },
        )
      : text('No server-side throttling since start.', { subtle: true }),
  );
  const first = blocked[0];
  const summary = first ? `${budgetLabel(first.row.budget)} paused until ${clockTime(first.until, opts)}` : undefined;
  return { title: 'Upstream budgets', items, summary };
}

export function cacheSection(stats: AnswerStats, opts: Pick<StatusCardOptions, 'locale'>): StatusSection {
  const gets = stats.hits + stats.misses;
  const ratio =
    gets === 0
      ? 'no lookups yet'
      : `${Math.round((stats.hits / gets) * 100)}% answered without a new BILL call (${count(gets, opts.locale)} lookups)`;
  return {
    title: 'Cache',
    items: [text(`Hit ratio: ${ratio}. Holding ${count(stats.entries, opts.locale)} answers.`)],
  };
}

/** Admins only: stored secrets SECRETS_KEY cannot open (it was changed), and what that breaks. */
export function storedSecretsSection(unopenable: number): StatusSection {
  const what = unopenable === 1 ? '1 stored secret cannot be opened' : `${unopenable} stored secrets cannot be opened`;
  return {
    title: 'Stored secrets',
    items: [
      text(
        `${what} with SECRETS_KEY (was it changed?). Webhook keys among them no longer verify BILL's events; approvers among them must connect again.`,
      ),
    ],
    summary: what,
  };
}

export function statusCard(sections: StatusSection[], opts: StatusCardOptions): CardReply {
  const body: CardElement[] = [title('billbridge status'), subtitle(`As of ${clockTime(opts.now, opts)}`)];
  for (const s of sections) {
    body.push(container([text(s.title, { weight: 'Bolder', size: 'Medium' }), ...s.items], { separator: true }));
  }
  body.push(versionFooter(opts.note, opts.version));
  const said = sections.map((s) => s.summary).filter(Boolean);
  return adaptiveCard(body, { summary: `billbridge ${opts.version} status${said.length ? ': ' + said.join('; ') : ''}` });
}
