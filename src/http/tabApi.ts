// GET /api/tab/dashboard[?team=<team thread id>]: the dashboard tab's figures (bills due, invoices overdue, approvals
// waiting, the last webhook events) for the person its Teams sign-in names, as plain JSON. Checks in order: token (401),
// tenant (403), the person's command rate (429), then the organisation: a channel tab's team, only for its members by
// the bot's own roster call (403; 404 unknown or unlinked), else the single organisation (404 in multi-org mode).
import type { Request, Response, Server } from 'restify';
import type { Logger } from '../infra/log.js';
import type { Clock } from '../infra/clock.js';
import { DependencyUnavailable, LimitExceeded, NotLinked, errorMessage, errorName } from '../errors.js';
import type { AccessPolicy } from '../features/access.js';
import type { OrgBindings } from '../bindings/bindings.js';
import type { Installations } from '../bindings/installations.js';
import { newCorrelationId } from '../features/dispatch.js';
import type { CommandContext, ConversationScope } from '../features/types.js';
import { readAudit } from '../features/audit.js';
import type { AuditTrail } from '../infra/audit.js';
import type { UpstreamCallCounter } from '../infra/upstreamCalls.js';
import { NS, type StateStore } from '../infra/state/types.js';
import { calendarDate, money } from '../cards/format.js';
import { currencyTotals, type Amount } from '../cards/words.js';
import { billsDueFigures, DEFAULT_DUE_DAYS, type PayablesDeps } from '../features/payables/commands.js';
import { amountDue, AGING_BUCKETS, cashOutPeriods } from '../features/payables/cards.js';
import { overdueInvoices, type ReceivablesDeps } from '../features/receivables/commands.js';
import { agedOverdue } from '../features/receivables/cards.js';
import type { Approvals } from '../features/approvals/service.js';
import { userRateKey, type UserCommandRate } from '../teams/userRate.js';
import type { teamRoster } from '../teams/proactive.js';
import type { TabEvent } from '../tab/events.js';
import { TabRefused, type TabPerson, type tabSso } from '../tab/sso.js';

/** Teams team thread ids: 19:<id>@thread.tacv2 (or .skype for older teams). */
const TEAM_ID = /^19:[A-Za-z0-9_.=-]{1,200}@thread\.[a-z0-9]{1,20}$/;

export interface TabApiDeps {
  sso: ReturnType<typeof tabSso>;
  access: Pick<AccessPolicy, 'tenantAllowed'>;
  rate: UserCommandRate;
  orgBindings: Pick<OrgBindings, 'mode' | 'resolve'>;
  installs: Pick<Installations, 'get'>;
  isMember: ReturnType<typeof teamRoster>;
  payables: PayablesDeps;
  receivables: ReceivablesDeps;
  /** Undefined without SECRETS_KEY (approvals are off). */
  approvals: Approvals | undefined;
  state: Pick<StateStore, 'get'>;
  clock: Clock;
  log: Logger;
  /** Each load a person is known for (their token checked) is recorded as a command is. */
  audit: Pick<AuditTrail, 'command'>;
  /** Counts the load's upstream calls and gives it a command's deadline. */
  upstreamCalls: Pick<UpstreamCallCounter, 'run' | 'scope'>;
}

/** The organisation the tab shows for this person and place, or TabRefused. */
async function orgFor(deps: TabApiDeps, person: TabPerson, scope: ConversationScope): Promise<string> {
  const { tenantId } = person;
  const team = scope.teamId;
  if (team === undefined) {
    const orgId = deps.orgBindings.mode === 'single' ? await deps.orgBindings.resolve(scope) : undefined;
    if (!orgId)
      throw new TabRefused(404, 'This billbridge serves several organisations: open the tab in a channel of a linked team.', 'no team');
    return orgId;
  }
  if (!TEAM_ID.test(team)) throw new TabRefused(404, 'This is not a Teams team billbridge knows.', 'malformed team');
  // Membership first: whether a team is linked, and to what, is only said to its members.
  const install = await deps.installs.get({ tenantId, kind: 'team', targetId: team });
  if (!install) throw new TabRefused(404, 'billbridge is not installed in this team: add the app to the team first.', 'team not installed');
  if (!(await deps.isMember(install.reference, team, person.aadObjectId)))
    throw new TabRefused(403, "You are not a member of this team, so its organisation's figures are not shown to you.", 'not a member');
  const orgId = await deps.orgBindings.resolve({ kind: 'channel', tenantId, teamId: team, conversationId: install.channelId ?? team });
  if (!orgId)
    throw new TabRefused(
      404,
      'This team is not linked to a BILL organisation yet: a billbridge admin types link in one of its channels.',
      'team not linked',
    );
  return orgId;
}

/** The figures for the organisation of `ctx` and its person, as of now, as the tab's page reads them. */
async function dashboard(ctx: CommandContext & { orgId: string }, person: TabPerson, deps: TabApiDeps) {
  const locale = deps.payables.settings.locale;
  const [bills, invoices, approvals, events] = await Promise.all([
    billsDueFigures(ctx, deps.payables, DEFAULT_DUE_DAYS),
    overdueInvoices(ctx, deps.receivables),
    waitingFor(person, ctx.orgId, deps.approvals, locale),
    deps.state.get<TabEvent[]>(NS.tabEvents, ctx.orgId),
  ]);
  if ('building' in invoices)
    throw new TabRefused(
      503,
      "billbridge is still reading this organisation's invoices from BILL. Try again in a minute.",
      'mirror building',
      60,
    );
  const totals = (amounts: Amount[]) => currencyTotals(amounts, locale);
  const billTotals = (list: typeof bills.due) =>
    totals(list.map((b) => ({ amount: amountDue(b), currency: bills.currencyOf(b.vendorId) })));
  const periods = cashOutPeriods(bills.today, DEFAULT_DUE_DAYS, locale);
  const aged = agedOverdue(invoices.invoices, invoices.today, (id) => invoices.customerOf(id)?.currency);
  return {
    org: { name: deps.payables.settings.note ?? `BILL organisation ${ctx.orgId}` },
    asOf: new Date(Math.min(bills.asOf, invoices.asOf)).toISOString(),
    locale,
    payables: {
      dueCount: bills.due.length,
      due: billTotals(bills.due),
      overdueCount: bills.overdue.length,
      overdue: billTotals(bills.overdue),
      byDay: periods.list.map((p) => ({
        label: p.label,
        amounts: billTotals(bills.due.filter((b) => b.dueDate.slice(0, 10) >= p.from && b.dueDate.slice(0, 10) <= p.to)),
      })),
    },
    receivables: {
      owedCount: aged.length,
      owed: totals(aged),
      aging: AGING_BUCKETS.map((bucket, i) => ({ label: bucket.label, amounts: totals(aged.filter((a) => a.bucket === i)) })),
    },
    approvals,
    events: events ?? [],
  };
}

/** The bills waiting for the person in BILL, read in their own session; null when they have not connected (or approvals are off). */
async function waitingFor(person: TabPerson, orgId: string, approvals: Approvals | undefined, locale: string) {
  if (!approvals) return null;
  const link = await approvals.links.get({ tenantId: person.tenantId, aadObjectId: person.aadObjectId, orgId });
  if (!link) return null;
  try {
    const { rows } = await approvals.pending(link);
    return rows.map((r) => ({
      kind: 'bill' as const,
      number: r.invoiceNumber ?? '',
      party: r.vendorName,
      amount: { currency: r.currency ?? 'USD', amount: r.amount, text: money(r.amount, r.currency, locale) },
      due: calendarDate(r.dueDate, locale),
    }));
  } catch (err) {
    // BILL refused the person's own token: their link went stale, as if they had never connected.
    if (err instanceof NotLinked) return null;
    throw err;
  }
}
/** One load: the figures or the refusal, with what the audit line needs (who and where once the token is checked, the org). */
async function load(deps: TabApiDeps, req: Request, correlationId: string) {
  let who: Pick<CommandContext, 'scope' | 'caller' | 'correlationId'> | undefined;
  let orgId: string | undefined;
  try {
    const person = await deps.sso(req.headers.authorization);
    if (!deps.access.tenantAllowed(person.tenantId))
      throw new TabRefused(403, "billbridge is not set up for your organisation's Microsoft 365 tenant.", 'tenant not allowed');
    const team = new URL(req.url ?? '/', 'http://tab').searchParams.get('team') ?? '';
    const scope: ConversationScope = {
      kind: team ? 'channel' : 'personal',
      tenantId: person.tenantId,
      teamId: team || undefined,
      aadGroupId: undefined,
      channelId: undefined,
      conversationId: team || `tab:${person.aadObjectId}`,
      serviceUrl: '',
    };
    const caller = { id: '', aadObjectId: person.aadObjectId, name: person.name };
    who = { scope, caller, correlationId };
    const decision = await deps.rate.take(userRateKey({ scope, caller }));
    if (!decision.allowed) {
      const retryAfterS = Math.ceil(decision.retryInMs / 1000);
      throw new TabRefused(429, `You have asked billbridge a lot this minute. Try again in ${retryAfterS} s.`, 'user rate', retryAfterS);
    }
    orgId = await orgFor(deps, person, scope);
    const ctx = {
      ...who,
      input: { name: 'dashboard', args: [], argText: '', page: 0 },
      orgId,
      now: new Date(deps.clock.now()),
      log: deps.log.child({ correlationId }),
    };
    return { who, orgId, status: 200, body: await dashboard(ctx, person, deps), result: 'ok' as const };
  } catch (err) {
    const refused =
      err instanceof TabRefused
        ? err
        : err instanceof LimitExceeded
          ? new TabRefused(429, 'billbridge is busy. Try again in a minute.', 'busy', Math.ceil(err.retryInMs / 1000))
          : new TabRefused(503, 'BILL or Teams did not answer in time. Try again in a minute.', errorMessage(err).slice(0, 120), 60);
    const errName = errorName(err);
    const log = { correlationId, status: refused.status, reason: refused.reason };
    if (refused.status === 503 && !(err instanceof TabRefused) && !(err instanceof DependencyUnavailable))
      deps.log.warn({ ...log, errName }, 'dashboard tab could not be answered');
    else deps.log.info(log, 'dashboard tab refused');
    return {
      who,
      orgId,
      status: refused.status,
      body: { error: refused.message },
      retryAfterS: refused.retryAfterS,
      // The audit line names the kind of refusal (TabRefused:<reason>, LimitExceeded:<reason>), never an error's message.
      reason: err instanceof TabRefused || err instanceof LimitExceeded ? `${errName}:${err.reason}` : errName,
      result: refused.status === 503 ? ('error' as const) : ('refused' as const),
    };
  }
}

export function tabApiRoute(deps: TabApiDeps): (server: Server) => void {
  return (server) => {
    server.get('/api/tab/dashboard', async (req: Request, res: Response) => {
      const correlationId = newCorrelationId();
      const started = performance.now();
      const reply = await deps.upstreamCalls.run(async () => {
        const r = await load(deps, req, correlationId);
        if (!r.who) return r;
        // As for commands: written before the answer goes out, and no trace, no answer.
        const upstream = { ...deps.upstreamCalls.scope()?.counts };
        try {
          await deps.audit.command(readAudit(r.who, 'dashboard tab', r, upstream, performance.now() - started));
          return r;
        } catch (err) {
          deps.log.error({ correlationId, err: errorMessage(err) }, 'the dashboard tab load could not be audited; not answered');
          return {
            status: 503,
            body: { error: 'billbridge could not record this load in its audit trail. Try again in a minute.' },
            retryAfterS: 60,
          };
        }
      });
      res.setHeader('Cache-Control', 'no-store');
      if (reply.retryAfterS !== undefined) res.setHeader('Retry-After', String(Math.max(1, reply.retryAfterS)));
      res.status(reply.status);
      res.json(reply.body);
    });
  };
}
