// GET /api/tab/dashboard[?team=<team thread id>]: the dashboard tab's figures for the person its Teams sign-in names.
// In order: the token (401), the tenant (403), the person's rate as for commands (429), which organisation — a channel
// tab's team, only for members of that team by the bot's own roster call (403; 404 for a team billbridge is not in or
// that is not linked), else the deployment's in single-organisation mode (404 in multi) — then the figures.
import type { Request, Response, Server } from 'restify';
import type { Logger } from '../infra/log.js';
import type { Clock } from '../infra/clock.js';
import { DependencyUnavailable, LimitExceeded, errorMessage } from '../errors.js';
import type { AccessPolicy } from '../features/access.js';
import type { OrgBindings } from '../bindings/bindings.js';
import type { Installations } from '../bindings/installations.js';
import { newCorrelationId } from '../features/dispatch.js';
import type { CommandContext, ConversationScope } from '../features/types.js';
import { userRateKey, type UserCommandRate } from '../teams/userRate.js';
import type { TeamRoster } from '../teams/roster.js';
import { TabRefused, type TabPerson, type TabSso } from '../tab/sso.js';
import { dashboard, type DashboardDeps } from '../tab/dashboard.js';

/** Teams team thread ids: 19:<id>@thread.tacv2 (or .skype for older teams). */
const TEAM_ID = /^19:[A-Za-z0-9_.=-]{1,200}@thread\.[a-z0-9]{1,20}$/;

export interface TabApiDeps extends DashboardDeps {
  sso: Pick<TabSso, 'person'>;
  access: Pick<AccessPolicy, 'tenantAllowed'>;
  rate: UserCommandRate;
  orgBindings: Pick<OrgBindings, 'mode' | 'resolve'>;
  installs: Pick<Installations, 'get'>;
  roster: Pick<TeamRoster, 'isMember'>;
  clock: Clock;
  log: Logger;
}

/** The organisation the tab shows for this person and place, or TabRefused. */
async function orgFor(deps: TabApiDeps, person: TabPerson, team: string): Promise<string> {
  const { tenantId } = person;
  if (team === '') {
    const orgId =
      deps.orgBindings.mode === 'single'
        ? await deps.orgBindings.resolve({ kind: 'personal', tenantId, teamId: undefined, conversationId: `tab:${person.aadObjectId}` })
        : undefined;
    if (!orgId)
      throw new TabRefused(404, 'This billbridge serves several organisations: open the tab in a channel of a linked team.', 'no team');
    return orgId;
  }
  if (!TEAM_ID.test(team)) throw new TabRefused(404, 'This is not a Teams team billbridge knows.', 'malformed team');
  // Membership first: whether a team is linked, and to what, is only said to its members.
  const install = await deps.installs.get({ tenantId, kind: 'team', id: team });
  if (!install) throw new TabRefused(404, 'billbridge is not installed in this team: add the app to the team first.', 'team not installed');
  if (!(await deps.roster.isMember(install.reference, team, person.aadObjectId)))
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

async function answer(deps: TabApiDeps, req: Request, correlationId: string): Promise<unknown> {
  const person = await deps.sso.person(req.headers.authorization);
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
  const decision = await deps.rate.take(userRateKey({ scope, caller }));
  if (!decision.allowed) {
    const retryAfterS = Math.ceil(decision.retryInMs / 1000);
    throw new TabRefused(429, `You have asked billbridge a lot this minute. Try again in ${retryAfterS} s.`, 'user rate', retryAfterS);
  }
  const orgId = await orgFor(deps, person, team);
  const ctx: CommandContext = {
    input: { name: 'dashboard', args: [], argText: '', page: 0 },
    scope,
    caller,
    orgId,
    correlationId,
    now: new Date(deps.clock.now()),
    log: deps.log.child({ correlationId }),
  };
  return dashboard(ctx, deps);
}

/** Registers GET /api/tab/dashboard on the bot's server. */
export function tabApiRoute(deps: TabApiDeps): (server: Server) => void {
  return (server) => {
    server.get('/api/tab/dashboard', async (req: Request, res: Response) => {
      const correlationId = newCorrelationId();
      res.setHeader('Cache-Control', 'no-store');
      try {
        const body = await answer(deps, req, correlationId);
        res.status(200);
        res.json(body);
      } catch (err) {
        const refused =
          err instanceof TabRefused
            ? err
            : err instanceof LimitExceeded
              ? new TabRefused(429, 'billbridge is busy. Try again in a minute.', 'busy', Math.ceil(err.retryInMs / 1000))
              : new TabRefused(503, 'BILL or Teams did not answer in time. Try again in a minute.', errorMessage(err).slice(0, 120), 60);
        const log = { correlationId, status: refused.status, reason: refused.reason };
        if (refused.status === 503 && !(err instanceof TabRefused) && !(err instanceof DependencyUnavailable))
          deps.log.warn({ ...log, errName: err instanceof Error ? err.name : typeof err }, 'dashboard tab could not be answered');
        else deps.log.info(log, 'dashboard tab refused');
        if (refused.retryAfterS !== undefined) res.setHeader('Retry-After', String(Math.max(1, refused.retryAfterS)));
        res.status(refused.status);
        res.json({ error: refused.message });
      }
    });
  };
}
