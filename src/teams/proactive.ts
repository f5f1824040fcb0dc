// Proactive sends: a card into a channel through the Bot Framework with a stored conversation reference
// (continueConversationAsync), never Graph. The connector's HTTP client (connectorLimits.ts) puts each attempt under the
// connector.thread budget, at background priority for these sends, and honours Retry-After; this file turns what the
// connector answered into a SendOutcome the notification worker can decide on.
import type { CloudAdapter, ConversationReference } from 'botbuilder';
import type { Logger } from '../infra/log.js';
import { errorMessage } from '../errors.js';
import type { ChannelSender, ConversationRef, OutgoingMessage, SendOutcome } from '../notify/types.js';
import { connectorPriority, retryAfterMs } from './connectorLimits.js';
import { cardActivity } from './routes.js';
import type { CardReply } from '../cards/card.js';
import type { CardMessages } from './cardMessages.js';

/** What @azure/core-rest-pipeline's RestError (thrown by the connector client) carries that we read. */
interface ConnectorError {
  statusCode?: number;
  code?: string;
  message?: string;
  response?: { status?: number; bodyAsText?: string | null; headers?: { get(name: string): string | undefined } };
  body?: unknown;
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

/** A send failure as the worker sees it: HTTP status (0 = no answer), Bot Framework code, Retry-After. */
function sendFailure(err: unknown): Extract<SendOutcome, { ok: false }> {
  const e = (err ?? {}) as ConnectorError;
  const status = typeof e.statusCode === 'number' ? e.statusCode : typeof e.response?.status === 'number' ? e.response.status : 0;
  const headers = e.response?.headers;
  const after = headers && typeof headers.get === 'function' ? retryAfterMs(headers) : undefined;
  return { ok: false, status, code: errorCode(e), retryAfterMs: after, message: errorMessage(err).slice(0, 300) };
}

/** Sends each card as the bot (`appId`) and records the buttons it carries, so a click on one may edit that message. */
export function botFrameworkSender(adapter: CloudAdapter, appId: string, log: Logger, cardMessages: CardMessages): ChannelSender {
  return {
    async send(reference: ConversationRef, message: OutgoingMessage): Promise<SendOutcome> {
      let outcome: SendOutcome | undefined;
      const conversation = (reference as Partial<ConversationReference>).conversation;
      try {
        await connectorPriority.run('background', () =>
          adapter.continueConversationAsync(appId, reference, async (context) => {
            // Errors are caught here: the adapter's onTurnError would otherwise swallow them.
            try {
              const sent = await context.sendActivity(cardActivity(message as CardReply));
              outcome = { ok: true };
              const where = { tenantId: conversation?.tenantId, conversationId: conversation?.id ?? '' };
              await cardMessages
                .posted(where, sent?.id, (message as CardReply).card, 'new')
                .catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'card message record failed'));
            } catch (err) {
              outcome = sendFailure(err);
            }
          }),
        );
      } catch (err) {
        // Before the turn: the connector client or its token could not be made.
        outcome = sendFailure(err);
      }
      outcome ??= { ok: false, status: 0, message: 'the proactive turn ended without sending' };
      if (!outcome.ok) log.debug({ status: outcome.status, code: outcome.code }, 'proactive send failed');
      return outcome;
    },
  };
}
