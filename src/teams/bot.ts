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
import type { ActionData, CardReply } from '../bot/cards/card.js';
import { errorReply, notYourRetryReply } from '../bot/cards/errorCards.js';
import { CardMessages } from '../bot/cardMessages.js';
import type { Caller, ConversationKind, ConversationScope } from '../bot/commands/types.js';
import { newCorrelationId, retryOwnerOf, type CardActionHandler, type CardActionReply, type Dispatcher } from '../bot/dispatch.js';
import { InstallLifecycle } from './install.js';
import type { BotServices } from '../bot/services.js';

/** Teams re-sends an activity it thinks went unanswered; one answer per id within this window. */
export const DUPLICATE_WINDOW_MS = 10 * 60_000;

export const CORRELATION_ID = Symbol('correlationId');

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
  /** Which buttons each card message carries: a click edits only the message that carries its button. */
  readonly cardMessages: CardMessages;

  constructor(
    private readonly services: BotServices,
    private readonly dispatcher: Dispatcher,
    private readonly log: Logger,
  ) {
    super();
    this.cardMessages = new CardMessages(services.state);
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
    if (value && typeof value === 'object' && !Array.isArray(value) && typeof value.verb === 'string') {
      // Action.Submit fallback of a card button: answer by updating the card that was clicked. Clicks change things
      // (approvals): the mark is kept before anything is done.
      await delivery.durable;
      const data = value as ActionData;
      const reply = await this.cardAction(context, data, false);
      if (reply.privateReply) await this.post(context, reply);
      else if (reply.newReply || !(await this.carries(context, data))) await this.post(context, reply.everyone ?? reply);
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
    await this.post(context, result.reply);
  }

  /** Sends a card as a new message in this turn's conversation (thread) and records the buttons it carries. */
  private async post(context: TurnContext, reply: CardReply): Promise<void> {
    const sent = await context.sendActivity(cardActivity(reply));
    await this.recordCard(context, sent?.id, reply, 'new');
  }

  /** Records the buttons a message now carries; a failure only means its buttons answer with new replies. */
  private async recordCard(context: TurnContext, activityId: string | undefined, reply: CardReply, how: 'new' | 'edited' | 'shown'): Promise<void> {
    const scope = scopeOf(context.activity);
    await this.cardMessages.posted({ tenantId: scope.tenantId, conversationId: scope.conversationId }, activityId, reply.card, how).catch((err: unknown) => {
      this.log.warn({ correlationId: correlationIdOf(context), err: errorMessage(err) }, 'card message record failed');
    });
  }

  /**
   * Does the message Teams says was clicked (replyToId) carry the clicked button? Nothing in the card data names a
   * message: a crafted click naming another of the bot's messages does not get to edit it.
   */
  private async carries(context: TurnContext, data: Record<string, unknown>): Promise<boolean> {
    const scope = scopeOf(context.activity);
    try {
      return await this.cardMessages.carries({ tenantId: scope.tenantId, conversationId: scope.conversationId }, context.activity.replyToId, data);
    } catch (err) {
      this.log.warn({ correlationId: correlationIdOf(context), err: errorMessage(err) }, 'card message record unreadable');
      return false;
    }
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
    const raw: unknown = action?.data ?? {};
    const data = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Partial<ActionData>;
    const verb = typeof action?.verb === 'string' ? action.verb : data.verb;
    if (typeof verb !== 'string') {
      return { statusCode: 400, type: 'application/vnd.microsoft.error', value: { code: 'BadRequest', message: 'Missing verb' } as never };
    }
    const reply = await this.cardAction(context, { ...data, verb }, true);
    if (reply.newReply) {
      // Another view: a new reply in the thread; the clicked card stays as it was (a message answer leaves it alone).
      await this.post(context, reply);
      return { statusCode: 200, type: 'application/vnd.microsoft.activity.message', value: reply.summary as never };
    }
    const carried = await this.carries(context, data);
    if (reply.everyone && carried) await this.editCard(context, reply.everyone);
    // The answer replaces the card on the clicker's client: its buttons may edit this message too.
    if (carried && !reply.privateReply) await this.recordCard(context, context.activity.replyToId, reply, 'shown');
    return { statusCode: 200, type: 'application/vnd.microsoft.card.adaptive', value: reply.card as never };
  }

  private async cardAction(context: TurnContext, data: ActionData, universal: boolean): Promise<CardActionReply> {
    const activity = context.activity;
    const correlationId = correlationIdOf(context);
    const scope = scopeOf(activity);
    const caller = callerOf(activity);
    if (data.verb === 'run') {
      // A Try again belongs to the person whose command failed: anyone else pressing it runs nothing (their own
      // authority would otherwise run someone else's text). Who clicked comes from Teams, never from the card.
      if (data.by !== undefined && data.by !== retryOwnerOf({ scope, caller })) {
        this.log.info({ correlationId }, 'Try again pressed by someone other than its author; nothing run');
        return { ...notYourRetryReply(), privateReply: true };
      }
      const command = typeof data.command === 'string' ? data.command : '';
      const page = typeof data.page === 'number' && Number.isFinite(data.page) ? data.page : undefined;
      const result = await this.dispatcher.run({ text: command, page: page ?? 0, refresh: data.refresh === true, locale: activity.locale, scope, caller, correlationId });
      // Refused (the person's rate) or failed (BILL down, an admin-only command): said to the clicker, and the card
      // everyone sees stays as it was.
      if (result.outcome !== 'ok') return { ...result.reply, privateReply: true };
      // Refresh, paging and a retry redraw the same view in place; any other button opens another view.
      const sameView = data.refresh === true || page !== undefined || data.by !== undefined;
      return sameView ? result.reply : { ...result.reply, newReply: true };
    }
    const handler = this.actions.get(data.verb);
    if (!handler) {
      this.log.info({ correlationId, verb: data.verb.slice(0, 40) }, 'unknown card action');
      return errorReply(new Error('unknown card action'), { correlationId });
    }
    // Every button counts against the clicker's rate like a typed command (USER_COMMANDS_PER_MINUTE): a refusal
    // is said to them alone and nothing reaches BILL.
    try {
      await this.dispatcher.admit({ text: '', scope, caller, correlationId });
    } catch (err) {
      return { ...errorReply(err, { correlationId, formatTime: this.dispatcher.formatTime }), privateReply: true };
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
      await this.recordCard(context, replyToId, reply, 'edited');
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
        await this.recordCard(context, replyToId, reply, 'edited');
        return;
      } catch (err) {
        this.log.info({ correlationId: correlationIdOf(context), err: errorMessage(err) }, 'card update failed; sending a new card');
      }
    }
    await this.post(context, reply);
  }
}
