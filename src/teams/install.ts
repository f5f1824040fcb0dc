// Install lifecycle: the bot added to (or removed from) a team, group chat or personal chat; the records are bindings/'s.
import { TeamsInfo, TurnContext, type Activity, type TeamsChannelData } from 'botbuilder';
import { errorMessage } from '../errors.js';
import { GraphApiError, type GraphTeams } from '../graph/teams.js';
import { bindingTarget, type BindingTarget, type OrgBindings } from '../bindings/bindings.js';
import type { InstallRecord, Installations } from '../bindings/installations.js';
import { welcomeCard } from '../cards/welcome.js';
import type { CommandRegistry } from '../features/registry.js';
import { conversationOf } from '../features/types.js';
import { cardActivity, nonEmptyString, type Turn } from './routes.js';

export interface InstallParts {
  installs: Pick<Installations, 'recordInstall' | 'get' | 'update' | 'remove'>;
  /** The welcome says which BILL organisation the conversation uses, or how to link one. */
  orgBindings: Pick<OrgBindings, 'describe'>;
  registry: Pick<CommandRegistry, 'forScope'>;
  /** Graph GET /teams/{id}; undefined in local mode (no app id) or without a client secret. */
  graph: Pick<GraphTeams, 'getTeam' | 'forget'> | undefined;
  /** BILL is the embedded sandbox (the welcome says so). */
  sandbox: boolean;
  version: string;
  /** The bot's app id, to post the welcome in the channel Teams says was selected; '' in local mode. */
  appId: string;
}

/** The bot arrived (Teams sends both installationUpdate add and a conversationUpdate): recorded and welcomed once. */
export async function botArrived(parts: InstallParts, turn: Turn, upgrade: boolean): Promise<undefined> {
  const { activity, scope, caller, log } = turn;
  const target = bindingTarget(scope);
  if (!target) {
    log.warn({ kind: scope.kind }, 'install event without a team or chat to record');
    return;
  }
  const channelData = (activity.channelData ?? {}) as TeamsChannelData;
  const selectedChannel = nonEmptyString(channelData.settings?.selectedChannel?.id);
  const reference = JSON.parse(JSON.stringify(TurnContext.getConversationReference(activity))) as Record<string, unknown>;
  const { created, record } = await parts.installs.recordInstall({
    ...target,
    conversationType: scope.kind,
    aadGroupId: scope.aadGroupId,
    name: teamName(channelData),
    channelId: scope.kind === 'channel' ? (selectedChannel ?? conversationOf(scope.conversationId)) : undefined,
    reference,
    installedBy: caller.aadObjectId,
  });
  log.info({ target: target.kind, conversationType: scope.kind, created, upgrade }, created ? 'bot installed' : 'install record refreshed');
  if (created && !upgrade) await welcome(parts, turn, record);
  if (scope.kind === 'channel') await readTeam(parts, target, turn);
}

/** The bot left (uninstalled, removed from the team, or the team was deleted): nothing about it is kept. */
export async function botLeft({ installs, graph }: InstallParts, { scope, log }: Turn, why: string): Promise<undefined> {
  const target = bindingTarget(scope);
  if (!target) return;
  const record = await installs.get(target);
  const report = await installs.remove(target);
  const aadGroupId = scope.aadGroupId ?? record?.aadGroupId;
  if (aadGroupId && scope.tenantId) graph?.forget(scope.tenantId, aadGroupId);
  log.info(
    { why, target: target.kind, hadRecord: report.record, hadBinding: !!report.bindingOrgId, removed: report.removed },
    'bot removed; its state is deleted',
  );
}

/** The team's name as Teams sent it: text, at most as long as Teams allows (256), or none. */
function teamName(channelData: TeamsChannelData | undefined): string | undefined {
  const name: unknown = channelData?.team?.name;
  return typeof name === 'string' ? name.trim().slice(0, 256) || undefined : undefined;
}

/** Team renamed: keep the stored name current (status, notifications). */
export async function teamRenamed({ installs }: InstallParts, { scope, activity }: Turn): Promise<undefined> {
  const name = teamName(activity.channelData as TeamsChannelData | undefined);
  const target = bindingTarget(scope);
  if (!target || !name) return;
  await installs.update(target, { name });
}

async function welcome(
  { orgBindings, registry, sandbox, version, appId }: InstallParts,
  { context, scope, log }: Turn,
  record: InstallRecord,
): Promise<void> {
  const binding = await orgBindings.describe(scope);
  const reply = welcomeCard({
    kind: scope.kind,
    teamName: record.name,
    binding,
    sandbox,
    commands: registry.forScope(scope.kind),
    version,
  });
  const activity = cardActivity(reply);
  // Teams may say the bot was set up for a channel other than the one the event came through (the record keeps it).
  if (record.channelId && record.channelId !== conversationOf(scope.conversationId) && appId) {
    try {
      await TeamsInfo.sendMessageToTeamsChannel(context, activity as Activity, record.channelId, appId);
      return;
    } catch (err) {
      log.warn({ err: errorMessage(err) }, 'welcome to the selected channel failed; posting where the event came from');
    }
  }
  await context.sendActivity(activity);
}

async function readTeam({ graph, installs }: InstallParts, target: BindingTarget, { scope, log }: Turn): Promise<void> {
  if (!graph || !scope.aadGroupId || !scope.tenantId) return;
  try {
    const team = await graph.getTeam(scope.tenantId, scope.aadGroupId);
    if (team.tenantId && team.tenantId.toLowerCase() !== scope.tenantId.toLowerCase()) {
      log.warn({ aadGroupId: scope.aadGroupId }, 'Graph reports the team in another tenant than the activity; not recorded');
      return;
    }
    await installs.update(target, { ...(team.displayName ? { name: team.displayName } : {}), graph: team });
  } catch (err) {
    const e =
      err instanceof GraphApiError
        ? { code: err.code, category: err.category, status: err.status, requestId: err.requestId }
        : { err: String(err) };
    log.warn(e, 'Graph team lookup failed; the install is recorded without it');
  }
}
