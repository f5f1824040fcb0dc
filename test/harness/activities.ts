// Teams-shaped activity factories: what Teams posts to /api/messages for channel, group and personal turns.
import { randomUUID } from 'node:crypto';

export const BOT = { id: '28:bot-app-id', name: 'billbridge' };
export const TENANT = 'aaaaaaaa-0000-4000-8000-000000000001';
export const OTHER_TENANT = 'bbbbbbbb-0000-4000-8000-000000000002';

export interface Who {
  id?: string;
  name?: string;
  aadObjectId?: string;
}

export interface ChannelOpts {
  serviceUrl: string;
  team?: string;
  teamName?: string;
  aadGroupId?: string;
  channel?: string;
  tenant?: string;
  from?: Who;
  id?: string;
  /** Root message id of the thread; a new thread per message by default. */
  threadId?: string;
  /** Leave the <at> mention out of the text. */
  noMention?: boolean;
  value?: unknown;
  replyToId?: string;
}

export const DEFAULT_USER: Required<Who> = { id: '29:user-dana', name: 'Dana Lee', aadObjectId: '11111111-0000-4000-8000-00000000d0d0' };

function who(w: Who | undefined) {
  return { ...DEFAULT_USER, ...w };
}

export function teamIds(name = 'finance') {
  return {
    team: `19:team-${name}@thread.tacv2`,
    channel: `19:channel-${name}@thread.tacv2`,
    aadGroupId: `0000${name.length.toString(16).padStart(4, '0')}-0000-4000-8000-${Buffer.from(name).toString('hex').padEnd(12, '0').slice(0, 12)}`,
  };
}

export function channelMessage(text: string, opts: ChannelOpts) {
  const ids = teamIds();
  const team = opts.team ?? ids.team;
  const channel = opts.channel ?? ids.channel;
  const tenant = opts.tenant ?? TENANT;
  const id = opts.id ?? `${Date.now()}${Math.floor(Math.random() * 1e6)}`;
  const thread = opts.threadId ?? id;
  const mention = `<at>${BOT.name}</at>`;
  return {
    type: 'message',
    id,
    timestamp: new Date().toISOString(),
    localTimestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: opts.serviceUrl,
    from: who(opts.from),
    recipient: BOT,
    conversation: { id: `${channel};messageid=${thread}`, conversationType: 'channel', isGroup: true, tenantId: tenant },
    text: opts.noMention ? text : `${mention} ${text}`,
    textFormat: 'plain',
    ...(opts.value !== undefined ? { value: opts.value } : {}),
    ...(opts.replyToId ? { replyToId: opts.replyToId } : {}),
    entities: opts.noMention ? [] : [{ type: 'mention', mentioned: BOT, text: mention }],
    channelData: {
      teamsChannelId: channel,
      teamsTeamId: team,
      channel: { id: channel },
      team: { id: team, ...(opts.teamName ? { name: opts.teamName } : {}), ...(opts.aadGroupId ? { aadGroupId: opts.aadGroupId } : {}) },
      tenant: { id: tenant },
    },
    locale: 'en-US',
  };
}

export function personalMessage(
  text: string,
  opts: { serviceUrl: string; from?: Who; tenant?: string; id?: string; value?: unknown; replyToId?: string },
) {
  const user = who(opts.from);
  const tenant = opts.tenant ?? TENANT;
  return {
    type: 'message',
    id: opts.id ?? randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: opts.serviceUrl,
    from: user,
    recipient: BOT,
    conversation: { id: `a:personal-${user.aadObjectId}`, conversationType: 'personal', tenantId: tenant },
    text,
    textFormat: 'plain',
    ...(opts.value !== undefined ? { value: opts.value } : {}),
    ...(opts.replyToId ? { replyToId: opts.replyToId } : {}),
    channelData: { tenant: { id: tenant } },
    locale: 'en-US',
  };
}

export function groupChatMessage(text: string, opts: { serviceUrl: string; from?: Who; tenant?: string; chat?: string }) {
  const tenant = opts.tenant ?? TENANT;
  const mention = `<at>${BOT.name}</at>`;
  return {
    type: 'message',
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: opts.serviceUrl,
    from: who(opts.from),
    recipient: BOT,
    conversation: { id: opts.chat ?? '19:groupchat-1@thread.v2', conversationType: 'groupChat', isGroup: true, tenantId: tenant },
    text: `${mention} ${text}`,
    entities: [{ type: 'mention', mentioned: BOT, text: mention }],
    channelData: { tenant: { id: tenant } },
  };
}

/** The turn an invoke answers to: its conversation, sender and ids are reused. */
export interface InvokeBase {
  from?: Who;
  replyToId?: string;
  [key: string]: unknown;
}

/** An Action.Execute click: invoke adaptiveCard/action. */
export function executeInvoke(data: Record<string, unknown>, base: InvokeBase, opts: { from?: Who; replyToId?: string } = {}) {
  return {
    ...base,
    type: 'invoke',
    name: 'adaptiveCard/action',
    id: randomUUID(),
    from: who(opts.from ?? base.from),
    text: undefined,
    entities: undefined,
    replyToId: opts.replyToId ?? base.replyToId,
    value: { action: { type: 'Action.Execute', verb: data.verb, data }, trigger: 'manual' },
  };
}

/** The bot being added to a team (installationUpdate add), as Teams sends it. */
export function installationUpdate(action: 'add' | 'remove', opts: { serviceUrl: string; name?: string; tenant?: string; from?: Who }) {
  const ids = teamIds(opts.name);
  const tenant = opts.tenant ?? TENANT;
  return {
    type: 'installationUpdate',
    action,
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: opts.serviceUrl,
    from: who(opts.from),
    recipient: BOT,
    conversation: { id: ids.team, conversationType: 'channel', isGroup: true, tenantId: tenant },
    channelData: {
      settings: { selectedChannel: { id: ids.team } },
      channel: { id: ids.team },
      team: { id: ids.team, name: opts.name ?? 'finance', aadGroupId: ids.aadGroupId },
      tenant: { id: tenant },
      source: null,
    },
  };
}

/** conversationUpdate naming the bot among membersAdded/membersRemoved of a team (Teams sends it with installationUpdate). */
export function botMembership(change: 'added' | 'removed', opts: { serviceUrl: string; name?: string; tenant?: string; from?: Who }) {
  const ids = teamIds(opts.name);
  const tenant = opts.tenant ?? TENANT;
  return {
    type: 'conversationUpdate',
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: opts.serviceUrl,
    from: who(opts.from),
    recipient: BOT,
    conversation: { id: ids.team, conversationType: 'channel', isGroup: true, tenantId: tenant },
    ...(change === 'added' ? { membersAdded: [{ id: BOT.id }] } : { membersRemoved: [{ id: BOT.id }] }),
    channelData: {
      eventType: change === 'added' ? 'teamMemberAdded' : 'teamMemberRemoved',
      team: { id: ids.team, name: opts.name ?? 'finance', aadGroupId: ids.aadGroupId },
      tenant: { id: tenant },
    },
  };
}

/** The bot installed in (or removed from) a person's personal scope, as Teams sends it. */
export function personalInstallation(action: 'add' | 'remove', opts: { serviceUrl: string; from?: Who; tenant?: string }) {
  const user = who(opts.from);
  const tenant = opts.tenant ?? TENANT;
  return {
    type: 'installationUpdate',
    action,
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: opts.serviceUrl,
    from: user,
    recipient: BOT,
    conversation: { id: `a:personal-${user.aadObjectId}`, conversationType: 'personal', tenantId: tenant },
    channelData: { tenant: { id: tenant }, source: null },
  };
}

/**
 * A message action invoke as Teams sends it (composeExtension/fetchTask when the person picks the action on a message,
 * composeExtension/submitAction when they press a button of its dialog), on a channel, group chat or personal turn.
 */
export function messageActionInvoke(
  name: 'composeExtension/fetchTask' | 'composeExtension/submitAction',
  base: { conversation: unknown; channelData: unknown; serviceUrl: string; from: unknown; [key: string]: unknown },
  opts: { commandId?: string; content?: string; data?: Record<string, unknown> },
) {
  return {
    type: 'invoke',
    name,
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: base.serviceUrl,
    from: base.from,
    recipient: BOT,
    conversation: base.conversation,
    channelData: base.channelData,
    locale: 'en-US',
    value: {
      commandId: opts.commandId ?? 'lookUp',
      commandContext: 'message',
      context: { theme: 'default' },
      ...(opts.data ? { data: opts.data } : {}),
      messagePayload: {
        id: '1700000000000',
        createdDateTime: new Date().toISOString(),
        importance: 'normal',
        locale: 'en-us',
        body: { contentType: 'html', content: opts.content ?? '' },
        from: { user: { id: DEFAULT_USER.aadObjectId, displayName: DEFAULT_USER.name, userIdentityType: 'aadUser' } },
        attachments: [],
        mentions: [],
        reactions: [],
      },
    },
  };
}
