// TeamsActivityHandler: turns Teams activities into commands and card actions, nothing else.
import {
  ActivityTypes,
  CardFactory,
  MessageFactory,
  TeamsActivityHandler,
  type Activity,
  type AdaptiveCardInvokeResponse,
  type AdaptiveCardInvokeValue,
  TurnContext,
} from 'botbuilder';
import type { Logger } from '../log.js';
import { TenantNotAllowed, errorMessage } from '../errors.js';
import { NS, type Claim } from '../state/types.js';
import type { ActionData, CardReply } from './cards/card.js';
import { errorReply } from './cards/errorCards.js';
import type { Caller, ConversationKind, ConversationScope } from './commands/types.js';
import { newCorrelationId, type Dispatcher } from './dispatch.js';
import { InstallLifecycle } from './install.js';
import type { BotServices } from './services.js';

/** Teams re-sends an activity it thinks went unanswered; one answer per id within this window. */
export const DUPLICATE_WINDOW_MS = 10 * 60_000;

export const CORRELATION_ID = Symbol('correlationId');

/** A card button other than "run a command" (approve, deny...). Returns the card that replaces the clicked one. */
export type CardActionHandler = (ctx: CardActionContext) => Promise<CardActionReply>;

/**
 * What a card action answers. Action.Execute: the card goes back to the person who clicked (Teams shows an invoke
 * answer only on their client). `everyone` also edits the card message for the whole conversation (a message edit;
 * Teams then refreshes every user-specific view). Action.Submit: the message is edited to `everyone`, else to the
 * card — unless `privateReply`, which answers with a new message and leaves the clicked card as it was.
 */
export interface CardActionReply extends CardReply {
  everyone?: CardReply;
  privateReply?: boolean;
}

export interface CardActionContext {
  data: ActionData;
  scope: ConversationScope;
  caller: Caller;
  correlationId: string;
  services: BotServices;
  log: Logger;
  /** True when the click came through Universal Actions (Action.Execute), false for the Action.Submit fallback. */
  universal: boolean;
  /** The raw Bot Framework activity id of the card message, when known. */
  cardActivityId: string | undefined;
  /** The conversation reference of this turn (JSON, no secrets), for later proactive sends to the same chat. */
  reference: Record<string, unknown>;
}

export function correlationIdOf(context: TurnContext): string {
  let id = context.turnState.get(CORRELATION_ID) as string | undefined;
  if (!id) {
    id = newCorrelationId();
    context.turnState.set(CORRELATION_ID, id);
  }
  return id;
}

export function scopeOf(activity: Activity): ConversationScope {
  const channelData = (activity.channelData ?? {}) as {
    team?: { id?: string; aadGroupId?: string };
    channel?: { id?: string };
    tenant?: { id?: string };
  };
  const type = activity.conversation?.conversationType;
  const kind: ConversationKind = type === 'channel' ? 'channel' : type === 'groupChat' ? 'groupChat' : 'personal';
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  return {
    kind,
    tenantId: str(channelData.tenant?.id) ?? str(activity.conversation?.tenantId),
    teamId: str(channelData.team?.id),
    aadGroupId: str(channelData.team?.aadGroupId),
    channelId: str(channelData.channel?.id),
    conversationId: activity.conversation?.id ?? '',
    serviceUrl: activity.serviceUrl ?? '',
  };
}

export function callerOf(activity: Activity): Caller {
  return {
    id: activity.from?.id ?? '',
    aadObjectId: typeof activity.from?.aadObjectId === 'string' ? activity.from.aadObjectId : undefined,
    name: typeof activity.from?.name === 'string' ? activity.from.name : undefined,
  };
}

export function cardActivity(reply: CardReply): Partial<Activity> {
  const activity = MessageFactory.attachment(CardFactory.adaptiveCard(reply.card));
  activity.summary = reply.summary;
  return activity;
}

export class BillbridgeBot extends TeamsActivityHandler {
  private readonly actions = new Map<string, CardActionHandler>();

  constructor(
    private readonly services: BotServices,
    private readonly dispatcher: Dispatcher,
    private readonly log: Logger,
  ) {
    super();
    this.onMessage(async (context, next) => {
      await this.handleMessage(context);
      await next();
    });
    this.registerInstallLifecycle(new InstallLifecycle(services, log));
  }

  /**
   * Install lifecycle (src/bot/install.ts): Teams sends installationUpdate and a conversationUpdate naming the bot
   * on arrival and on removal; both are handled, and the install record makes the welcome go out once.
   * MembersAdded (not TeamsMembersAdded) is used on purpose: the Teams variant fetches every added person from the connector.
   */
  private registerInstallLifecycle(install: InstallLifecycle): void {
    const isBot = (members: Array<{ id?: string }> | undefined, activity: Activity) => (members ?? []).some((m) => m.id !== undefined && m.id === activity.recipient?.id);
    this.onInstallationUpdateAdd(async (context, next) => {
      await install.added(context, scopeOf(context.activity), correlationIdOf(context), { upgrade: context.activity.action === 'add-upgrade', via: 'installationUpdate' });
      await next();
    });
    this.onInstallationUpdateRemove(async (context, next) => {
      if (context.activity.action !== 'remove-upgrade') await install.removed(scopeOf(context.activity), correlationIdOf(context), 'uninstalled');
      await next();
    });
    this.onMembersAdded(async (context, next) => {
      if (isBot(context.activity.membersAdded, context.activity)) await install.added(context, scopeOf(context.activity), correlationIdOf(context), { via: 'membersAdded' });
      await next();
    });
    this.onMembersRemoved(async (context, next) => {
      if (isBot(context.activity.membersRemoved, context.activity)) await install.removed(scopeOf(context.activity), correlationIdOf(context), 'removed from the conversation');
      await next();
    });
    this.onTeamsTeamDeletedEvent(async (_team, context, next) => {
      await install.removed(scopeOf(context.activity), correlationIdOf(context), 'team deleted');
      await next();
    });
    this.onTeamsTeamHardDeletedEvent(async (_team, context, next) => {
      await install.removed(scopeOf(context.activity), correlationIdOf(context), 'team deleted');
      await next();
    });
    this.onTeamsTeamRenamedEvent(async (team, context, next) => {
      await install.renamed(scopeOf(context.activity), team?.name);
      await next();
    });
  }

  /** Registers a card button verb ("approve", "deny"...); "run" is built in. */
  onCardAction(verb: string, handler: CardActionHandler): this {
    if (verb === 'run' || this.actions.has(verb)) throw new Error(`Card action "${verb}" is already handled`);
    this.actions.set(verb, handler);
    return this;
  }

  /** Activities from tenants outside ALLOWED_TENANT_IDS get a refusal and touch nothing else. */
  private admitted(context: TurnContext): boolean {
    const ok = this.services.access.tenantAllowed(scopeOf(context.activity).tenantId);
    if (!ok) this.log.warn({ correlationId: correlationIdOf(context), tenantId: scopeOf(context.activity).tenantId }, 'activity from a tenant that is not allowed');
    return ok;
  }

  /**
   * Has this activity id been answered in the last ten minutes? Marks it as answered if not. The command may start at
   * once; its answer waits for `durable` (the mark kept on disk or in Redis), so a redelivery after a crash is never
   * answered twice.
   */
  private async firstDelivery(context: TurnContext): Promise<Claim> {
    const a = context.activity;
    if (!a.id) return { created: true, durable: Promise.resolve() };
    const key = `${a.conversation?.id ?? ''}|${a.id}`;
    return this.services.state.claim(NS.seenActivities, key, this.services.clock.now(), { ttlMs: DUPLICATE_WINDOW_MS });
  }

  private async handleMessage(context: TurnContext): Promise<void> {
    const activity = context.activity;
    const correlationId = correlationIdOf(context);
    if (!this.admitted(context)) {
      await context.sendActivity(cardActivity(errorReply(new TenantNotAllowed(), { correlationId })));
      return;
    }
    const delivery = await this.firstDelivery(context);
    if (!delivery.created) {
      this.log.info({ correlationId, activityId: activity.id }, 'duplicate delivery ignored');
      return;
    }
    const value = activity.value as Partial<ActionData> | undefined;
    if (value && typeof value === 'object' && typeof value.verb === 'string') {
      // Action.Submit fallback of a card button: answer by updating the card that was clicked. Clicks change things
      // (approvals): the mark is kept before anything is done.
      await delivery.durable;
      const reply = await this.cardAction(context, value as ActionData, false);
      if (reply.privateReply) await context.sendActivity(cardActivity(reply));
      else await this.replaceCard(context, reply.everyone ?? reply);
      return;
    }
    const result = await this.dispatcher.run({
      text: typeof activity.text === 'string' ? activity.text : '',
      locale: activity.locale,
      scope: scopeOf(activity),
      caller: callerOf(activity),
      correlationId,
      working: async () => {
        await context.sendActivity({ type: ActivityTypes.Typing });
      },
      kept: delivery.durable,
    });
    await context.sendActivity(cardActivity(result.reply));
  }

  protected override async onAdaptiveCardInvoke(context: TurnContext, invokeValue: AdaptiveCardInvokeValue): Promise<AdaptiveCardInvokeResponse> {
    if (!this.admitted(context)) {
      const reply = errorReply(new TenantNotAllowed(), { correlationId: correlationIdOf(context) });
      return { statusCode: 200, type: 'application/vnd.microsoft.card.adaptive', value: reply.card as never };
    }
    const delivery = await this.firstDelivery(context);
    if (!delivery.created) {
      return { statusCode: 200, type: 'application/vnd.microsoft.activity.message', value: 'Already handled' as never };
    }
    // Card clicks change things (approvals): the mark is kept before anything is done.
    await delivery.durable;
    const action = invokeValue?.action;
    const data = (action?.data ?? {}) as Partial<ActionData>;
    const verb = typeof action?.verb === 'string' ? action.verb : data.verb;
    if (typeof verb !== 'string') {
      return { statusCode: 400, type: 'application/vnd.microsoft.error', value: { code: 'BadRequest', message: 'Missing verb' } as never };
    }
    const reply = await this.cardAction(context, { ...data, verb }, true);
    if (reply.everyone) await this.editCard(context, reply.everyone);
    return { statusCode: 200, type: 'application/vnd.microsoft.card.adaptive', value: reply.card as never };
  }

  private async cardAction(context: TurnContext, data: ActionData, universal: boolean): Promise<CardActionReply> {
    const activity = context.activity;
    const correlationId = correlationIdOf(context);
    const scope = scopeOf(activity);
    const caller = callerOf(activity);
    if (data.verb === 'run') {
      const command = typeof data.command === 'string' ? data.command : '';
      const page = typeof data.page === 'number' && Number.isFinite(data.page) ? data.page : 0;
      const result = await this.dispatcher.run({ text: command, page, refresh: data.refresh === true, locale: activity.locale, scope, caller, correlationId });
      return result.reply;
    }
    const handler = this.actions.get(data.verb);
    if (!handler) {
      this.log.info({ correlationId, verb: data.verb.slice(0, 40) }, 'unknown card action');
      return errorReply(new Error('unknown card action'), { correlationId });
    }
    try {
      return await handler({
        data,
        scope,
        caller,
        correlationId,
        services: this.services,
        log: this.log.child({ correlationId }),
        universal,
        cardActivityId: activity.replyToId,
        reference: JSON.parse(JSON.stringify(TurnContext.getConversationReference(activity))) as Record<string, unknown>,
      });
    } catch (err) {
      this.log.warn({ correlationId, verb: data.verb, err: errorMessage(err) }, 'card action failed');
      return errorReply(err, { correlationId, formatTime: this.dispatcher.formatTime });
    }
  }

  /** Universal Actions: edit the card message for everyone (the invoke answer reaches only the clicker's client). */
  private async editCard(context: TurnContext, reply: CardReply): Promise<void> {
    const replyToId = context.activity.replyToId;
    if (!replyToId) return;
    try {
      await context.updateActivity({ ...cardActivity(reply), id: replyToId });
    } catch (err) {
      this.log.warn({ correlationId: correlationIdOf(context), err: errorMessage(err) }, 'card edit for everyone failed');
    }
  }

  /** Action.Submit: replace the clicked card in place when Teams told us which one it was. */
  private async replaceCard(context: TurnContext, reply: CardReply): Promise<void> {
    const replyToId = context.activity.replyToId;
    if (replyToId) {
      try {
        await context.updateActivity({ ...cardActivity(reply), id: replyToId });
        return;
      } catch (err) {
        this.log.info({ correlationId: correlationIdOf(context), err: errorMessage(err) }, 'card update failed; sending a new card');
      }
    }
    await context.sendActivity(cardActivity(reply));
  }
}
