// The route table: every inbound kind (typed commands, card actions, install events, invokes) is one route of
// `select` (which activities), `steps` (small middleware, run in the order listed) and `run` (the handler).
import {
  ActivityTypes,
  CardFactory,
  MessageFactory,
  type Activity,
  type ChannelAccount,
  type InvokeResponse,
  type TeamsChannelData,
  type TurnContext,
} from 'botbuilder';
import type { Logger } from '../infra/log.js';
import { errorMessage, errorName } from '../errors.js';
import type { CardReply } from '../cards/card.js';
import { errorReply } from '../cards/errorCards.js';
import type { Caller, ConversationScope } from '../features/types.js';
import { newCorrelationId, type CommandLine, type TurnResult } from '../features/dispatch.js';

export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** Channel data comes from the sender unchecked: a field is text only if it is a non-empty string. */
export const nonEmptyString = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** One inbound activity as the steps and handlers of its route see it. */
export interface Turn {
  context: TurnContext;
  activity: Activity;
  scope: ConversationScope;
  caller: Caller;
  correlationId: string;
  log: Logger;
  /** The command line a typed message or a run button carries, read once (audit, typing and the handler use it). */
  line?: CommandLine;
  /** The invoke answer (HTTP status and body) an invoke route gives; invokes without one get 501. */
  answer?: InvokeResponse;
}

/** A step around the rest of its route: `next` runs the rest and gives what it came to; not calling `next` stops the turn. */
export type Step = (turn: Turn, next: () => Promise<TurnResult | undefined>) => Promise<TurnResult | undefined>;

export interface Route {
  name: string;
  select(activity: Activity): boolean;
  steps: readonly Step[];
  run(turn: Turn): Promise<TurnResult | undefined>;
  /** An invoke's answer when its turn fails (the store down, the disk full): the error card in its shape; by default as a click's answer. */
  failed?(reply: CardReply): InvokeResponse;
}

/** An invoke answer in Universal Actions' shape: a card, a line of text, or an error (400). */
export const invokeAnswer = (type: 'card.adaptive' | 'activity.message' | 'error', value: unknown, status = 200): InvokeResponse => ({
  status,
  body: { statusCode: status, type: `application/vnd.microsoft.${type}`, value },
});

/** A card reply as a message activity (its summary is what notifications and chat lists show). */
export function cardActivity(reply: CardReply): Partial<Activity> {
  const activity = MessageFactory.attachment(CardFactory.adaptiveCard(reply.card));
  activity.summary = reply.summary;
  return activity;
}

function scopeOf(activity: Activity): ConversationScope {
  const channelData = (activity.channelData ?? {}) as TeamsChannelData;
  const type = activity.conversation.conversationType;
  return {
    kind: type === 'channel' || type === 'groupChat' ? type : 'personal',
    tenantId: nonEmptyString(channelData.tenant?.id) ?? nonEmptyString(activity.conversation.tenantId),
    teamId: nonEmptyString(channelData.team?.id),
    aadGroupId: nonEmptyString(channelData.team?.aadGroupId),
    channelId: nonEmptyString(channelData.channel?.id),
    // The envelope check (adapter.ts) has made sure of both.
    conversationId: activity.conversation.id,
    serviceUrl: activity.serviceUrl,
  };
}

function callerOf(activity: Activity): Caller {
  // The envelope check (adapter.ts) lets an activity come without a sender, whatever botbuilder's type says.
  const from = activity.from as Partial<ChannelAccount> | undefined;
  return {
    id: from?.id ?? '',
    aadObjectId: typeof from?.aadObjectId === 'string' ? from.aadObjectId : undefined,
    name: typeof from?.name === 'string' ? from.name : undefined,
  };
}

/** What the adapter runs for each authenticated turn. */
export type TurnLogic = (context: TurnContext) => Promise<void>;

/** The route table as a turn's logic: the first route whose `select` takes an activity handles it. */
export function routeTable(log: Logger, routes: readonly Route[]): TurnLogic {
  routes.forEach((route, i) => {
    if (routes.findIndex((r) => r.name === route.name) !== i) throw new Error(`Route "${route.name}" is already registered`);
  });
  return async (context) => {
    const activity = context.activity;
    const route = routes.find((r) => r.select(activity));
    let answer: InvokeResponse | undefined;
    if (route) {
      const correlationId = newCorrelationId();
      const turn: Turn = {
        context,
        activity,
        scope: scopeOf(activity),
        caller: callerOf(activity),
        correlationId,
        log: log.child({ correlationId }),
      };
      const step = (i: number): Promise<TurnResult | undefined> => {
        const next = route.steps[i];
        return next ? next(turn, () => step(i + 1)) : route.run(turn);
      };
      try {
        await step(0);
        answer = turn.answer;
      } catch (err) {
        const failure = { err: errorMessage(err), errName: errorName(err), route: route.name };
        const reply = errorReply(err, { correlationId });
        if (activity.type === 'invoke') {
          turn.log.error(failure, 'invoke failed; answered with the error card');
          // A click's failed turn: the error card replaces the clicked card on the clicker's client, as a failed click's reply does.
          answer = route.failed ? route.failed(reply) : invokeAnswer('card.adaptive', reply.card);
        } else {
          // A message's failure: the error card in the conversation, unless something was sent already.
          const stack = err instanceof Error ? err.stack : undefined;
          turn.log.error({ ...failure, stack, activityType: activity.type }, 'unhandled error in turn');
          if (activity.type === 'message' && !context.responded)
            await context
              .sendActivity(cardActivity(reply))
              .catch((sendErr: unknown) => turn.log.warn({ err: errorMessage(sendErr) }, 'could not send the error card'));
        }
      }
    }
    // An invoke with no route or no answer (task/fetch, signin...): 501, as botbuilder answers it.
    if (activity.type === 'invoke') await context.sendActivity({ type: ActivityTypes.InvokeResponse, value: answer ?? { status: 501 } });
  };
}
