// `status`: how busy billbridge is — every upstream budget (used, waiting, running, refused, last throttle), the cache, the version.
// Members see whether the bot is healthy and linked; hosts, paths and organisation ids are for billbridge admins.
import type { BillGateway } from '../../bill/gateway.js';
import { GraphApiError, type GraphTeams } from '../../graph/teams.js';
import type { Config } from '../../config.js';
import type { OrgBindings } from '../../bindings/bindings.js';
import type { Installations } from '../../bindings/installations.js';
import { dateTime } from '../../cards/format.js';
import { channelTargetOf } from '../notifications/commands.js';
import type { AccessPolicy } from '../access.js';
import type { Clock } from '../../infra/clock.js';
import type { Limiter } from '../../infra/limits/types.js';
import type { Mirror } from '../../mirror/mirror.js';
import { PUSH_FED } from '../../notify/kinds.js';
import type { Notifications } from '../../notify/index.js';
import type { AuditTrail } from '../../infra/audit.js';
import {
  auditSection,
  billSection,
  budgetsSection,
  cacheSection,
  conversationSection,
  notificationsSection,
  statusCard,
  storedSecretsSection,
  type ConversationStatus,
  type StatusCardOptions,
} from './statusCards.js';
import type { Command, ConversationScope } from '../types.js';

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
