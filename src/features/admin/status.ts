// `status`: how busy billbridge is — every upstream budget (used, waiting, running, refused, last throttle), the cache, the version.
// Members see whether the bot is healthy and linked; hosts, paths and organisation ids are for billbridge admins.
// The command gathers each source; the section functions below draw it (pure, so the gallery can draw them too).
import type { BillGateway, BillStatus } from '../../bill/gateway.js';
import { GraphApiError, type GraphTeams } from '../../graph/teams.js';
import type { Config } from '../../config.js';
import type { BindingMode, BindingState, OrgBindings } from '../../bindings/bindings.js';
import type { InstallRecord, Installations } from '../../bindings/installations.js';
import {
  adaptiveCard,
  container,
  escapeMarkdown,
  facts,
  subtitle,
  table,
  text,
  title,
  type CardElement,
  type CardReply,
} from '../../cards/card.js';
import { clockTime, dateTime, type FormatOptions } from '../../cards/format.js';
import { versionFooter } from '../../cards/help.js';
import { plainFacts } from '../../cards/list.js';
import { channelTargetOf } from '../notifications/commands.js';
import { scheduleIn } from '../notifications/cards.js';
import type { AccessPolicy } from '../access.js';
import type { Clock } from '../../infra/clock.js';
import type { BudgetSnapshot, Limiter } from '../../infra/limits/types.js';
import type { AnswerStats } from '../../mirror/answers.js';
import type { Mirror, MirrorInfo } from '../../mirror/mirror.js';
import { PUSH_FED } from '../../notify/kinds.js';
import type { Notifications } from '../../notify/index.js';
import { UNREADABLE_FOR_MS } from '../../notify/worker.js';
import type { AuditTrail } from '../../infra/audit.js';
import type { Command, ConversationKind, ConversationScope } from '../types.js';

export interface StatusDeps {
  orgBindings: Pick<OrgBindings, 'describe' | 'mode'>;
  installs: Pick<Installations, 'forScope'>;
  /** Undefined when Graph is not used. */
  graph: Pick<GraphTeams, 'getTeam'> | undefined;
  /** The bot's identity settings: why Graph is not used when it is not. */
  bot: Config['bot'];
  access: Pick<AccessPolicy, 'isAdmin'>;
  limiter: Pick<Limiter, 'snapshot'>;
  mirror: Pick<Mirror, 'answers' | 'info'>;
  bill: Pick<BillGateway, 'status' | 'spend'>;
  audit: Pick<AuditTrail, 'location'>;
  notify: Pick<Notifications, 'status' | 'push'>;
  clock: Clock;
  /** The card's locale, time zone, version and note; how long lists are kept (the webhooks row). */
  settings: Omit<StatusCardOptions, 'now'> & { cache: { listTtlS: number; pushedTtlS: number } };
  /** Stored secrets SECRETS_KEY cannot open, counted at start-up. */
  unopenableSecrets(): number;
}

/** Binding, install record and Graph team of the conversation; team names are kept CACHE_TTL_NAMES_S. */
export async function conversationStatus(deps: StatusDeps, scope: ConversationScope): Promise<ConversationStatus> {
  const binding = await deps.orgBindings.describe(scope);
  const install = await deps.installs.forScope(scope);
  return { mode: deps.orgBindings.mode, binding, install, graph: await graphStatus(deps, scope, install?.aadGroupId) };
}

/** Graph's view of the team in words; a Graph failure is reported, never thrown. */
async function graphStatus(deps: StatusDeps, scope: ConversationScope, recordedGroupId: string | undefined): Promise<string> {
  const graph = deps.graph;
  if (!graph) {
    const { appId, appType } = deps.bot;
    return appId === ''
      ? 'skipped — local mode: no MicrosoftAppId, so Graph is not called'
      : appType === 'UserAssignedMSI'
        ? 'skipped — managed identity: Graph lookups need a client secret'
        : 'skipped — no MicrosoftAppPassword: Graph is not called';
  }
  if (scope.kind !== 'channel') return 'not a team';
  const aadGroupId = scope.aadGroupId ?? recordedGroupId;
  // Neither the activity nor the install record carries it when the app was added before billbridge recorded it.
  if (!aadGroupId || !scope.tenantId) return 'team group id unknown (re-add the app to record it)';
  try {
    const team = await graph.getTeam(scope.tenantId, aadGroupId);
    return `${team.displayName}${team.isArchived ? ' (archived)' : ''} · as of ${dateTime(team.fetchedAt, deps.settings)}`;
  } catch (err) {
    if (err instanceof GraphApiError) return `failed: ${err.code} (${err.category}${err.status ? `, HTTP ${err.status}` : ''})`;
    return `failed: ${err instanceof Error ? err.name : 'Error'} (unknown)`;
  }
}

export const statusCommand: Command<StatusDeps> = {
  name: 'status',
  usage: 'status',
  description: "This team's BILL organisation, BILL connectivity and session, budgets, cache and version",
  examples: ['status'],
  upstream: false,
  rank: 80,
  async run(ctx, deps) {
    const { cache, ...settings } = deps.settings;
    const opts = { ...settings, now: deps.clock.now() };
    const admin = deps.access.isAdmin(ctx.caller);
    const orgId = ctx.orgId;
    const pushFed = orgId
      ? { kinds: PUSH_FED.filter((p) => deps.notify.push.fed(orgId, p.entity)).map((p) => p.kind), ...cache }
      : undefined;
    // S&E tokens are per organisation: the row says whether THIS team's organisation has one, not whether any does.
    let spendConfigured = false;
    try {
      spendConfigured = orgId !== undefined && deps.bill.spend(orgId) !== undefined;
    } catch {
      // spend() refuses an organisation the deployment does not serve: it has no token.
    }
    const unopenable = deps.unopenableSecrets();
    const channel = channelTargetOf(ctx.scope);
    // The audit log's path is a server path, and unopenable stored secrets are something to act on: both for admins only.
    const sections = [
      conversationSection(await conversationStatus(deps, ctx.scope), ctx.scope.kind, opts, admin),
      billSection({ ...deps.bill.status(), spendConfigured }, orgId, orgId ? deps.mirror.info(orgId) : [], opts, pushFed, admin),
      notificationsSection(await deps.notify.status(channel, orgId, admin), !!channel, opts),
      budgetsSection(deps.limiter.snapshot(), opts, { admin, orgId, tenantId: ctx.scope.tenantId }),
      cacheSection(deps.mirror.answers.stats(), opts),
      admin ? auditSection(deps.audit.location) : undefined,
      admin && unopenable > 0 ? storedSecretsSection(unopenable) : undefined,
    ].filter((s) => s !== undefined);
    return statusCard(sections, opts);
  },
};

/** What notifications say about a channel and the deployment (Notifications.status). */
type NotifyStatus = Awaited<ReturnType<Notifications['status']>>;

/** One block of the status card. */
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

/** Budget labels, in card order. `per`: kept per BILL organisation (keyed "<dev key hash>/<org id>") or per Entra tenant;
 * a member sees their own organisation's or tenant's row only. */
const BUDGETS: Record<string, { label: string; per?: 'org' | 'tenant' }> = {
  'bill.requests': { label: 'BILL requests' },
  'bill.concurrency': { label: 'BILL calls in flight', per: 'org' },
  'bill.logins': { label: 'BILL sign-ins' },
  'bill.logins.people': { label: "BILL sign-ins (people's share)" },
  'bill.email': { label: 'BILL emails (network invitations)', per: 'org' },
  'spend.requests': { label: 'Spend & Expense requests' },
  'graph.app': { label: 'Graph (whole app)' },
  'graph.tenant': { label: 'Graph (tenant)', per: 'tenant' },
  'graph.team': { label: 'Graph (busiest team)' },
  identity: { label: 'Entra token requests', per: 'tenant' },
  'connector.thread': { label: 'Teams sends (busiest thread)' },
};

const THROTTLE_WORDS: Record<string, string> = {
  concurrency: 'too many in flight',
  hourly: 'hourly limit reached',
  retryAfter: 'asked to retry later',
};

function count(n: number, locale: string): string {
  return Number.isFinite(n) ? n.toLocaleString(locale) : '∞';
}

const PER: Record<number, string> = { 3_600_000: ' / h', 60_000: ' / min', 1_000: ' / s' };

function per(windowMs: number | undefined): string {
  if (windowMs === undefined) return '';
  return PER[windowMs] ?? (windowMs % 1_000 === 0 ? ` / ${windowMs / 1_000} s` : ` / ${windowMs} ms`);
}

/** Who the row is for: an organisation (its id for admins only), a tenant, a hashed key, or how many threads/teams are active. */
function scope(row: BudgetSnapshot, admin: boolean): string {
  if (row.key === '') return '';
  if (row.key === '*') return row.keys ? ` · ${row.keys} active` : '';
  const keptPer = BUDGETS[row.budget]?.per;
  if (keptPer === 'org') return admin ? ` · org ${row.key.split('/').pop()}` : ' · this organisation';
  if (keptPer === 'tenant') return ` · tenant ${row.key.slice(0, 8)}…`;
  return ` · key ${row.key}`;
}

const budgetLabel = (budget: string): string => BUDGETS[budget]?.label ?? budget;

/** Everyone sees app-wide budgets (keys only as hashes) and their own org's and tenant's rows; admins see all. */
export function budgetsSection(
  all: BudgetSnapshot[],
  opts: StatusCardOptions,
  who: { admin: boolean; orgId?: string; tenantId?: string },
): StatusSection {
  const n = (v: number) => count(v, opts.locale);
  const order = Object.keys(BUDGETS);
  const rank = (b: string) => (order.includes(b) ? order.indexOf(b) : order.length);
  const mine = (r: BudgetSnapshot) =>
    BUDGETS[r.budget]?.per === 'org'
      ? who.orgId !== undefined && r.key.endsWith(`/${who.orgId}`)
      : BUDGETS[r.budget]?.per !== 'tenant' || r.key.toLowerCase() === who.tenantId?.toLowerCase();
  const rows = all.filter((r) => who.admin || mine(r)).sort((a, b) => rank(a.budget) - rank(b.budget) || a.key.localeCompare(b.key));
  if (rows.length === 0) return { title: 'Upstream budgets', items: [text('No upstream calls yet.', { subtle: true })] };
  const shown = rows.slice(0, MAX_BUDGET_ROWS);
  const items: CardElement[] = [
    table(
      [{ header: 'Budget' }, { header: 'Used', figure: true }, { header: 'Waiting' }, { header: 'Running' }, { header: 'Refused' }],
      shown.map((r) => [
        // The label is ours ("Teams sends (busiest thread)"); the scope may carry a key or an id.
        budgetLabel(r.budget) + escapeMarkdown(scope(r, who.admin)),
        `${n(r.used)} of ${n(r.limit)}${r.configuredLimit !== undefined ? ` (of ${n(r.configuredLimit)})` : ''}${per(r.windowMs)}`,
        n(r.queued),
        n(r.running),
        n(r.rejected),
      ]),
    ),
  ];
  if (rows.length > shown.length) items.push(text(`…and ${rows.length - shown.length} more budgets (see /metrics).`, { subtle: true }));

  const why = (row: BudgetSnapshot) => THROTTLE_WORDS[row.lastThrottleKind ?? ''] ?? 'throttled';
  const blocked = rows.filter((row) => (row.blockedUntil ?? 0) > opts.now);
  const until = (row: BudgetSnapshot) => clockTime(row.blockedUntil ?? 0, opts);
  for (const row of blocked)
    items.push(text(`**${escapeMarkdown(budgetLabel(row.budget))}** is paused until ${until(row)} (${why(row)}).`));
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
  const summary = first && `${budgetLabel(first.budget)} paused until ${until(first)}`;
  return { title: 'Upstream budgets', items, summary };
}

export function cacheSection(stats: AnswerStats, opts: Pick<StatusCardOptions, 'locale'>): StatusSection {
  const gets = stats.hits + stats.misses;
  const ratio =
    gets === 0
      ? 'no lookups yet'
      : `${Math.round((stats.hits / gets) * 100)}% answered without a new BILL call (${count(gets, opts.locale)} lookups)`;
  return { title: 'Cache', items: [text(`Hit ratio: ${ratio}. Holding ${count(stats.entries, opts.locale)} answers.`)] };
}

/** Admins only: stored secrets SECRETS_KEY cannot open (it was changed), and what that breaks. */
function storedSecretsSection(unopenable: number): StatusSection {
  const what = unopenable === 1 ? '1 stored secret cannot be opened' : `${unopenable} stored secrets cannot be opened`;
  const line = `${what} with SECRETS_KEY (was it changed?). Webhook keys among them no longer verify BILL's events; approvers among them must connect again.`;
  return { title: 'Stored secrets', items: [text(line)], summary: what };
}

export function statusCard(sections: StatusSection[], opts: StatusCardOptions): CardReply {
  const body: CardElement[] = [title('billbridge status'), subtitle(`As of ${clockTime(opts.now, opts)}`)];
  for (const s of sections) body.push(container([text(s.title, { weight: 'Bolder', size: 'Medium' }), ...s.items], { separator: true }));
  body.push(versionFooter(opts.note, opts.version));
  const said = sections.map((s) => s.summary).filter(Boolean);
  return adaptiveCard(body, { summary: `billbridge ${opts.version} status${said.length ? ': ' + said.join('; ') : ''}` });
}

export interface ConversationStatus {
  mode: BindingMode;
  binding: BindingState;
  /** The stored install record, when the bot saw itself being added. */
  install: Pick<InstallRecord, 'installedAt' | 'name' | 'graph'> | undefined;
  /** Graph's view of the team, in words. */
  graph: string;
}

/** "This team"/"This chat": binding (the organisation id for admins only), install record, Graph. */
export function conversationSection(s: ConversationStatus, kind: ConversationKind, opts: FormatOptions, admin: boolean): StatusSection {
  const b = s.binding;
  const org =
    b.state === 'bound'
      ? admin
        ? `${b.orgId} (${b.source === 'link' ? 'linked by an admin' : "the deployment's organisation"})`
        : `linked (${b.source === 'link' ? 'by an admin' : "the deployment's organisation"})`
      : b.state === 'orgNotAllowed'
        ? `${admin ? `${b.orgId} ` : ''}no longer allowed; an admin links it again`
        : b.state === 'tenantNotAllowed'
          ? 'tenant not allowed'
          : b.reason === 'noOrgConfigured'
            ? 'none configured'
            : 'not linked — an admin types "link {BILL organisation id}"';
  const team = s.install?.graph?.displayName || s.install?.name;
  const rows: Array<[string, string]> = [
    ['Organisations', s.mode === 'single' ? 'one per deployment (every team uses it)' : 'linked per team (BILL_ALLOWED_ORG_IDS)'],
    ['BILL organisation', org],
    [
      'Installed',
      s.install
        ? `${dateTime(s.install.installedAt, opts)}${team ? ` in ${team}` : ''}`
        : 'no install record (added before billbridge recorded installs, or not seen)',
    ],
    ['Microsoft Graph', s.graph],
  ];
  const summary =
    b.state === 'bound' ? undefined : b.state === 'tenantNotAllowed' ? 'Tenant not allowed.' : 'Not linked to a BILL organisation.';
  return { title: kind === 'channel' ? 'This team' : 'This chat', items: [plainFacts(rows)], summary };
}

/** "3 min", "2 h 5 min", "40 s". */
function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
}

/** `pushFed`: record kinds BILL webhooks keep current for this org (lists live CACHE_TTL_PUSHED_S); undefined without notifications. */
export function billSection(
  status: BillStatus,
  orgId: string | undefined,
  indexes: MirrorInfo[],
  opts: FormatOptions,
  pushFed?: { kinds: string[]; pushedTtlS: number; listTtlS: number },
  admin = true,
): StatusSection {
  const session = orgId ? status.sessions.find((s) => s.orgId === orgId) : undefined;
  // This organisation's BILL: a network failure of any session (one host serves them all), a refused sign-in only of
  // its own; another organisation's refused credentials are not this team's to read.
  const reachable = orgId
    ? status.sessions.every((s) => s.lastError?.category !== 'network') && session?.lastError?.category !== 'credentials'
    : status.reachable;
  // Where BILL is (host and port) is for admins; BILL_BASE_URL (or the sandbox's) is a URL: config checks it at start-up.
  const at = admin ? ` at ${new URL(status.baseUrl).host}` : '';
  const rows: Array<[string, string]> = [
    ['Backend', status.backend === 'sandbox' ? `embedded sandbox${at} (demo organisation, simulated data)` : `BILL${at}`],
    ['Connectivity', reachable ? 'reachable' : 'failing — see the last error below'],
  ];
  if (!session) rows.push(['Session', orgId ? 'not signed in yet (signs in on the first command)' : 'no organisation bound here']);
  else {
    const idle = `idle ${duration(session.idleMs ?? 0)} (BILL ends sessions after 35 idle min)`;
    rows.push(
      [
        'Session',
        session.loggedIn && session.sessionAgeMs !== undefined
          ? `signed in ${duration(session.sessionAgeMs)} ago, ${idle}`
          : 'signed out (signs in again on the next command)',
      ],
      ['Sign-ins', `${session.logins} since start · ${status.loginsLastHour} in the last hour for the dev key (BILL allows 200)`],
    );
    // A later answer clears it (sessions.ts), so one shown here is BILL's latest word.
    const e = session.lastError;
    if (e) rows.push(['Last error', `${e.code ?? e.category} (${e.category}) at ${dateTime(e.at, opts)}`]);
  }
  // `spendConfigured` is this organisation's (the status command asks for it); an admin is told where tokens go.
  const spendHint = admin ? ' (BILL_SPEND_API_TOKEN for BILL_ORG_ID, BILL_SPEND_API_TOKENS for others)' : '';
  const spend = status.spendConfigured ? 'API token configured' : `not configured for this organisation${spendHint}`;
  rows.push(['Spend & Expense', orgId ? spend : 'no organisation bound here']);
  for (const ix of indexes) {
    const records = ix.records.toLocaleString(opts.locale);
    rows.push([
      `${ix.kind.charAt(0).toUpperCase()}${ix.kind.slice(1)} index`,
      ix.complete
        ? `${records} ${ix.scope === 'open' ? 'open records' : 'records'}, updated ${dateTime(ix.refreshedAt, opts)}`
        : `building (${records} so far)`,
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
  const items = [plainFacts(rows)];
  if (!reachable) items.push(text('billbridge cannot talk to BILL right now: commands that need BILL will fail until it answers again.'));
  return { title: 'BILL', items, summary: reachable ? undefined : 'BILL unreachable' };
}

/** This channel's subscriptions and digest (`inChannel`), the outbox, dead letters and webhook keys. */
export function notificationsSection(s: NotifyStatus, inChannel: boolean, opts: StatusCardOptions): StatusSection {
  const rows: Array<[string, string]> = [];
  if (inChannel)
    rows.push(
      ['This channel', s.kinds.length > 0 ? s.kinds.join(', ') : 'no subscriptions'],
      ['Digest', s.digest ? scheduleIn(s.digest.schedule, opts) : 'off'],
    );
  const next =
    s.outbox.pending > 0 && s.outbox.nextAt !== undefined ? `, next try ${clockTime(Math.max(s.outbox.nextAt, opts.now), opts)}` : '';
  rows.push(
    ['Outbox', s.outbox.events === 0 ? 'empty' : `${s.outbox.events} events, ${s.outbox.pending} deliveries waiting${next}`],
    [
      'Dead letters',
      s.deadLetters.total === 0
        ? 'none'
        : `${s.deadLetters.total} in the last 30 days${inChannel ? `, ${s.deadLetters.here.length || 'none'} here` : ''}`,
    ],
    [
      'BILL webhooks',
      s.webhook.storedKeys > 0
        ? `${s.webhook.storedKeys} subscription${s.webhook.storedKeys === 1 ? '' : 's'} with a stored key${s.webhook.envKey ? ' + BILL_WEBHOOK_SECURITY_KEY' : ''}`
        : s.webhook.envKey
          ? 'BILL_WEBHOOK_SECURITY_KEY'
          : 'not set up (admins: webhooks setup)',
    ],
  );
  const items: CardElement[] = [facts(rows)];
  for (const d of s.deadLetters.here) {
    const answer = escapeMarkdown(`${d.status}${d.code ? ` ${d.code}` : ''}`);
    const tries = `${d.tries} ${d.tries === 1 ? 'try' : 'tries'}`;
    // A letter set aside before any send says why, not a count of sends that were never made.
    const why =
      d.cause === 'refused'
        ? `: set aside, BILL refused to read the record (${answer})`
        : d.cause === 'unreadable'
          ? `: set aside, its record could not be read from BILL for ${UNREADABLE_FOR_MS / 86_400_000} days${d.status > 0 ? ` (${answer})` : ''}`
          : d.cause === 'undrawable'
            ? `: set aside, its card could not be drawn (${tries})`
            : ` after ${tries} (${answer})`;
    items.push(text(`Not delivered here: ${escapeMarkdown(d.type)} of ${dateTime(d.at, opts)}${why}.`, { size: 'Small' }));
  }
  const summary =
    s.deadLetters.total > 0 ? `${s.deadLetters.total} undelivered notification${s.deadLetters.total === 1 ? '' : 's'}` : undefined;
  return { title: 'Notifications', items, summary };
}

export function auditSection(location: string): StatusSection {
  const line = `Every command and admin action is appended to ${escapeMarkdown(location)}.`;
  return { title: 'Audit log', items: [text(line, { subtle: true })] };
}
