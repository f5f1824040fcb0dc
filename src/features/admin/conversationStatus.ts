// What `status` says about the conversation it is typed in: its BILL binding, its install record, and Graph's view of the team.
import { GraphApiError } from '../../graph/errors.js';
import type { BindingMode, BindingState } from '../../state/bindings.js';
import { escapeMarkdown, facts } from '../../cards/card.js';
import { dateTime, type FormatOptions } from '../../cards/format.js';
import type { StatusSection } from './statusCards.js';
import type { CommandContext, ConversationScope } from '../types.js';
import type { BotServices } from '../../bot/services.js';

export type GraphTeamStatus =
  /** Local mode (no MicrosoftAppId), a managed identity, or no client secret: Graph is never called. */
  | { state: 'skipped'; reason: string }
  /** Group and personal chats have no team. */
  | { state: 'notTeam' }
  /** Neither the activity nor the install record carries the team's Entra group id (installed before billbridge recorded it). */
  | { state: 'noGroupId' }
  | { state: 'ok'; displayName: string; description: string | null; isArchived: boolean | null; fetchedAt: number }
  | { state: 'error'; category: GraphApiError['category'] | 'unknown'; code: string; status: number };

export interface ConversationStatus {
  mode: BindingMode;
  binding: BindingState;
  /** The stored install record (conversation reference present), when the bot saw itself being added. */
  install: { recorded: false } | { recorded: true; installedAt: number; name: string | undefined; aadGroupId: string | undefined };
  graph: GraphTeamStatus;
}

/** Why Graph is not used by this deployment, or undefined when it is. */
export function graphSkippedReason(services: BotServices): string | undefined {
  if (services.graph) return undefined;
  const { bot } = services.config;
  if (bot.appId === '') return 'local mode: no MicrosoftAppId, so Graph is not called';
  if (bot.appType === 'UserAssignedMSI') return 'managed identity: Graph lookups need a client secret';
  return 'no MicrosoftAppPassword: Graph is not called';
}

/**
 * Binding, install record and Graph team for the conversation of `scope`. Graph answers come from the cache
 * when fresh (team names are kept CACHE_TTL_NAMES_S); a Graph failure is reported, never thrown.
 */
export async function conversationStatus(services: BotServices, scope: ConversationScope): Promise<ConversationStatus> {
  const bindings = services.orgBindings;
  const binding: BindingState = bindings
    ? await bindings.describe(scope)
    : (await services.bindings.resolve(scope).then((orgId) => (orgId ? ({ state: 'bound', orgId, source: 'deployment' } as const) : ({ state: 'unbound', reason: 'notLinked' } as const))));
  const record = await services.installs?.forScope(scope);
  const install: ConversationStatus['install'] = record
    ? { recorded: true, installedAt: record.installedAt, name: record.graph?.displayName || record.name, aadGroupId: record.aadGroupId }
    : { recorded: false };
  return { mode: bindings?.mode ?? 'single', binding, install, graph: await graphStatus(services, scope, record?.aadGroupId) };
}

async function graphStatus(services: BotServices, scope: ConversationScope, recordedGroupId: string | undefined): Promise<GraphTeamStatus> {
  const skipped = graphSkippedReason(services);
  if (skipped !== undefined) return { state: 'skipped', reason: skipped };
  if (scope.kind !== 'channel') return { state: 'notTeam' };
  const aadGroupId = scope.aadGroupId ?? recordedGroupId;
  if (!aadGroupId || !scope.tenantId) return { state: 'noGroupId' };
  try {
    const team = await services.graph!.getTeam(scope.tenantId, aadGroupId, { priority: 'interactive' });
    return { state: 'ok', displayName: team.displayName, description: team.description, isArchived: team.isArchived, fetchedAt: team.fetchedAt };
  } catch (err) {
    if (err instanceof GraphApiError) return { state: 'error', category: err.category, code: err.code, status: err.status };
    return { state: 'error', category: 'unknown', code: err instanceof Error ? err.name : 'Error', status: 0 };
  }
}

/**
 * The same as label/value pairs for a status card's FactSet (plain text; escape before rendering as markdown).
 * `admin: false` (a member) leaves out the BILL organisation id: members see whether this place is linked.
 */
export function conversationStatusFacts(s: ConversationStatus, formatTime: (ms: number) => string, opts: { admin: boolean } = { admin: true }): Array<[string, string]> {
  const b = s.binding;
  const id = (orgId: string) => (opts.admin ? `${orgId} ` : '');
  const org =
    b.state === 'bound'
      ? opts.admin
        ? `${b.orgId} (${b.source === 'link' ? 'linked by an admin' : 'the deployment\'s organisation'})`
        : `linked (${b.source === 'link' ? 'by an admin' : 'the deployment\'s organisation'})`
      : b.state === 'orgNotAllowed'
        ? `${id(b.orgId)}no longer allowed; an admin links it again`
        : b.state === 'tenantNotAllowed'
          ? 'tenant not allowed'
          : b.reason === 'noOrgConfigured'
            ? 'none configured'
            : 'not linked — an admin types "link {BILL organisation id}"';
  const facts: Array<[string, string]> = [
    ['Organisations', s.mode === 'single' ? 'one per deployment (every team uses it)' : 'linked per team (BILL_ALLOWED_ORG_IDS)'],
    ['BILL organisation', org],
    ['Installed', s.install.recorded ? `${formatTime(s.install.installedAt)}${s.install.name ? ` in ${s.install.name}` : ''}` : 'no install record (added before billbridge recorded installs, or not seen)'],
  ];
  const g = s.graph;
  const graph =
    g.state === 'skipped'
      ? `skipped — ${g.reason}`
      : g.state === 'notTeam'
        ? 'not a team'
        : g.state === 'noGroupId'
          ? 'team group id unknown (re-add the app to record it)'
          : g.state === 'ok'
            ? `${g.displayName}${g.isArchived ? ' (archived)' : ''} · as of ${formatTime(g.fetchedAt)}`
            : `failed: ${g.code} (${g.category}${g.status ? `, HTTP ${g.status}` : ''})`;
  facts.push(['Microsoft Graph', graph]);
  return facts;
}

/**
 * The "This conversation" section of the status card: binding, install record, Graph. For the status command's
 * STATUS_SECTIONS: `(ctx, opts) => conversationSection(ctx, opts)`.
 */
export async function conversationSection(ctx: CommandContext, opts: FormatOptions): Promise<StatusSection> {
  const status = await conversationStatus(ctx.services, ctx.scope);
  const rows = conversationStatusFacts(status, (ms) => dateTime(ms, opts), { admin: ctx.services.access.isAdmin(ctx.caller) }).map(([k, v]) => [k, escapeMarkdown(v)] as [string, string]);
  const b = status.binding;
  const summary = b.state === 'bound' ? undefined : b.state === 'tenantNotAllowed' ? 'Tenant not allowed.' : 'Not linked to a BILL organisation.';
  return { title: ctx.scope.kind === 'channel' ? 'This team' : 'This chat', items: [facts(rows)], ...(summary ? { summary } : {}) };
}
