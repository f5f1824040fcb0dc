// Turns the bot starts itself in a stored conversation (continueConversationAsync, never Graph): channel notifications
// and the team roster check of the dashboard tab. The connector's HTTP client (connectorLimits.ts) puts each attempt
// under the connector.thread budget, at background priority for notifications, and honours Retry-After.
import { dropOldest } from '../infra/bounded.js';
import { TeamsInfo, type CloudAdapter, type ConversationReference, type TurnContext } from 'botbuilder';
import type { Clock } from '../infra/clock.js';
import type { Logger } from '../infra/log.js';
import { DependencyUnavailable, errorMessage } from '../errors.js';
import type { ChannelSender, SendOutcome } from '../notify/types.js';
import { connectorPriority, retryAfterMs } from './connectorLimits.js';
import { cardActivity } from './routes.js';
import type { CardReply } from '../cards/card.js';
import type { CardMessages } from './cardMessages.js';

/** What @azure/core-rest-pipeline's RestError (thrown by the connector client) carries that we read. */
interface ConnectorError {
  statusCode?: unknown;
  response?: { status?: unknown; bodyAsText?: unknown; headers?: { get(name: string): string | undefined } };
  body?: unknown;
}

/** The HTTP status a connector call failed with; 0 when there was no answer. */
function statusOf(err: ConnectorError | undefined): number {
  const status = err?.statusCode ?? err?.response?.status;
  return typeof status === 'number' ? status : 0;
}

/** The Bot Framework ErrorResponse code, e.g. BotNotInConversationRoster, from whatever shape the error has. */
function errorCode(err: ConnectorError): string | undefined {
  const codeIn = (body: unknown) => (body as { error?: { code?: unknown } } | undefined)?.error?.code;
  let code = codeIn(err.body);
  const text = err.response?.bodyAsText;
  try {
    if (typeof code !== 'string' && typeof text === 'string' && text.length < 10_000) code = codeIn(JSON.parse(text));
  } catch {
    return undefined;
  }
  return typeof code === 'string' ? code.slice(0, 80) : undefined;
}

/**
 * Runs `fn` in a turn of the stored conversation, as the bot; what it throws comes back here, also from an adapter with
 * an onTurnError (botbuilder would hand the error to it and resolve: a refused roster call read as a member).
 */
async function inConversation<T>(
  adapter: CloudAdapter,
  appId: string,
  reference: Partial<ConversationReference>,
  fn: (context: TurnContext) => Promise<T>,
): Promise<T> {
  let turn: Promise<T> | undefined;
  await adapter.continueConversationAsync(appId, reference, async (context) => {
    turn = fn(context);
    await turn.catch(() => undefined);
  });
  if (!turn) throw new Error('the proactive turn ended without sending');
  return turn;
}

/** Sends each card as the bot and records the buttons it carries, so a click on one may edit that message. */
export function botFrameworkSender(adapter: CloudAdapter, appId: string, log: Logger, cardMessages: CardMessages): ChannelSender {
  return {
    async send(reference, message): Promise<SendOutcome> {
      const reply = message as CardReply;
      try {
        const sent = await connectorPriority.run('background', () =>
          inConversation(adapter, appId, reference, (context) => context.sendActivity(cardActivity(reply))),
        );
        const conversation = (reference as Partial<ConversationReference>).conversation;
        const where = { tenantId: conversation?.tenantId, conversationId: conversation?.id ?? '' };
        await cardMessages
          .posted(where, sent?.id, reply.card, 'new')
          .catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'card message record failed'));
        return { ok: true };
      } catch (err) {
        // The HTTP status (0 = no answer), Bot Framework code and Retry-After the notification worker decides on.
        const e = (err ?? {}) as ConnectorError;
        const headers = e.response?.headers;
        const after = headers && typeof headers.get === 'function' ? retryAfterMs(headers) : undefined;
        const failed = { ok: false as const, status: statusOf(e), code: errorCode(e) };
        log.debug({ status: failed.status, code: failed.code }, 'proactive send failed');
        return { ...failed, retryAfterMs: after, message: errorMessage(err).slice(0, 300) };
      }
    },
  };
}

/** A person removed from the team still sees the tab this long at most. */
const MEMBER_TTL_MS = 5 * 60_000;
/** A person just added waits this long at most for the tab to open. */
const NOT_MEMBER_TTL_MS = 60_000;
const MAX_ROSTER_ENTRIES = 10_000;

/**
 * Is a person a member of a team? The bot's own roster call (TeamsInfo.getTeamMember) in the team's stored conversation,
 * answered from a short, bounded cache: the dashboard tab asks on every load.
 */
export function teamRoster(adapter: CloudAdapter, appId: string, clock: Clock) {
  const cache = new Map<string, { member: boolean; until: number }>();
  return async function isMember(reference: Record<string, unknown>, teamId: string, aadObjectId: string): Promise<boolean> {
    const key = `${teamId}|${aadObjectId.toLowerCase()}`;
    const now = clock.now();
    const kept = cache.get(key);
    if (kept && kept.until > now) return kept.member;
    let member = true;
    try {
      await inConversation(adapter, appId, reference, (context) => TeamsInfo.getTeamMember(context, teamId, aadObjectId));
    } catch (err) {
      // The connector's answer for someone outside the team (404 MemberNotFoundInConversation) or a bot no longer in it (403).
      const status = statusOf(err as ConnectorError | undefined);
      if (status !== 404 && status !== 403) throw new DependencyUnavailable('Teams roster', err);
      member = false;
    }
    cache.delete(key);
    if (cache.size >= MAX_ROSTER_ENTRIES) dropOldest(cache);
    cache.set(key, { member, until: now + (member ? MEMBER_TTL_MS : NOT_MEMBER_TTL_MS) });
    return member;
  };
}
