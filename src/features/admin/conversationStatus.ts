// What `status` says about the conversation it is typed in: its BILL binding, its install record, and Graph's view of the team.
import { GraphApiError, type GraphTeams } from '../../graph/teams.js';
import type { Config } from '../../config.js';
import type { BindingMode, BindingState, OrgBindings } from '../../bindings/bindings.js';
import type { InstallRecord, Installations } from '../../bindings/installations.js';
import { escapeMarkdown, facts } from '../../cards/card.js';
import { dateTime, type FormatOptions } from '../../cards/format.js';
import type { StatusSection } from './statusCards.js';
import type { ConversationKind, ConversationScope } from '../types.js';

export interface ConversationStatus {
  mode: BindingMode;
  binding: BindingState;
  /** The stored install record, when the bot saw itself being added. */
  install: Pick<InstallRecord, 'installedAt' | 'name' | 'graph'> | undefined;
  /** Graph's view of the team, in words. */
  graph: string;
}

export interface ConversationStatusDeps {
  orgBindings: Pick<OrgBindings, 'describe' | 'mode'>;
  installs: Pick<Installations, 'forScope'>;
  /** Undefined when Graph is not used. */
  graph: Pick<GraphTeams, 'getTeam'> | undefined;
  /** The bot's identity settings: why Graph is not used when it is not. */
  bot: Config['bot'];
  settings: FormatOptions;
}

/**
 * Binding, install record and Graph team for the conversation of `scope`. Graph answers come from the cache
 * when fresh (team names are kept CACHE_TTL_NAMES_S); a Graph failure is reported, never thrown.
 */
export async function conversationStatus(deps: ConversationStatusDeps, scope: ConversationScope): Promise<ConversationStatus> {
  const binding = await deps.orgBindings.describe(scope);
  const install = await deps.installs.forScope(scope);
  return { mode: deps.orgBindings.mode, binding, install, graph: await graphStatus(deps, scope, install?.aadGroupId) };
}

async function graphStatus(deps: ConversationStatusDeps, scope: ConversationScope, recordedGroupId: string | undefined): Promise<string> {
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

/**
 * The "This conversation" section of the status card: binding, install record, Graph. `admin` (a billbridge admin
 * asked) shows the organisation id; members see whether this place is linked.
 */
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
  return {
    title: kind === 'channel' ? 'This team' : 'This chat',
    items: [facts(rows.map(([k, v]) => [k, escapeMarkdown(v)]))],
    ...(summary ? { summary } : {}),
  };
}
