// Message-extension invokes as Teams posts them: a search typed in the compose box (composeExtension/query), from a
// team's channel, a group chat or the command box.
import { randomUUID } from 'node:crypto';
import { BOT, DEFAULT_USER, TENANT, teamIds, type Who } from './activities.js';

type ComposeWhere = 'channel' | 'groupChat' | 'commandBox';

export interface ComposeOpts {
  serviceUrl: string;
  where?: ComposeWhere;
  /** Team name for a channel (teamIds). */
  team?: string;
  tenant?: string;
  from?: Who;
  /** The person's Teams locale (default en-US). */
  locale?: string;
}

function invokeIn(name: string, value: unknown, opts: ComposeOpts) {
  const tenant = opts.tenant ?? TENANT;
  const from = { ...DEFAULT_USER, ...opts.from };
  const where = opts.where ?? 'channel';
  const ids = teamIds(opts.team);
  const conversation =
    where === 'channel'
      ? { id: ids.channel, conversationType: 'channel', isGroup: true, tenantId: tenant }
      : where === 'groupChat'
        ? { id: '19:groupchat-1@thread.v2', conversationType: 'groupChat', isGroup: true, tenantId: tenant }
        : { id: `a:personal-${from.aadObjectId}`, conversationType: 'personal', tenantId: tenant };
  const channelData =
    where === 'channel'
      ? { team: { id: ids.team }, channel: { id: ids.channel }, tenant: { id: tenant }, source: { name: 'compose' } }
      : { tenant: { id: tenant }, source: { name: where === 'commandBox' ? 'commandbox' : 'compose' } };
  return {
    type: 'invoke',
    name,
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl: opts.serviceUrl,
    from,
    recipient: BOT,
    conversation,
    channelData,
    locale: opts.locale ?? 'en-US',
    value,
  };
}

/** A search: `text` typed in the command's box, or (undefined) the initial run Teams makes when the search opens. */
export function composeQuery(commandId: string, text: string | undefined, opts: ComposeOpts & { skip?: number; count?: number }) {
  const parameters = text === undefined ? [{ name: 'initialRun', value: 'true' }] : [{ name: 'query', value: text }];
  return invokeIn(
    'composeExtension/query',
    { commandId, parameters, queryOptions: { skip: opts.skip ?? 0, count: opts.count ?? 25 } },
    opts,
  );
}

interface Attachment {
  contentType: string;
  content: Record<string, unknown>;
  preview?: { contentType: string; content: { title: string; subtitle?: string; text: string; tap?: unknown } };
}

/** The composeExtension body of an invoke answer. */
export interface ComposeAnswer {
  composeExtension: { type: 'result' | 'message'; attachmentLayout?: string; attachments?: Attachment[]; text?: string };
}
