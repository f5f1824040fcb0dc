// The bot's route table: typed commands, card actions (Action.Submit and Action.Execute) and install events, each with
// its steps in the order they run. Handlers get plain data (scope, caller, card data), never a botbuilder type.
import { ActivityTypes, TurnContext, type Activity, type InvokeResponse } from 'botbuilder';
import type { Logger } from '../log.js';
import { TenantNotAllowed, errorMessage } from '../errors.js';
import { NS } from '../state/types.js';
import type { ActionData, CardReply } from '../cards/card.js';
import { errorReply, notYourRetryReply } from '../cards/errorCards.js';
import { CardMessages } from '../bot/cardMessages.js';
import { retryOwnerOf, type CardActionHandler, type CardActionReply, type Dispatcher } from '../bot/dispatch.js';
import type { BotServices } from '../bot/services.js';
import { InstallLifecycle } from './install.js';
import { cardActivity, Router, type Route, type Step, type Turn } from './routes.js';

/** Teams re-sends an activity it thinks went unanswered; one answer per id within this window. */
export const DUPLICATE_WINDOW_MS = 10 * 60_000;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Invoke answers in Universal Actions' shape (a card, a line of text, or an error). */
const answerCard = (card: unknown): InvokeResponse => ({ status: 200, body: { statusCode: 200, type: 'application/vnd.microsoft.card.adaptive', value: card } });
const answerText = (text: string): InvokeResponse => ({ status: 200, body: { statusCode: 200, type: 'application/vnd.microsoft.activity.message', value: text } });
const answerError = (code: string, message: string): InvokeResponse => ({ status: 400, body: { statusCode: 400, type: 'application/vnd.microsoft.error', value: { code, message } } });

/** A card click: Action.Submit (a message whose value names a verb) or Action.Execute (an adaptiveCard/action invoke). */
interface Click {
  data: Partial<ActionData>;
  verb: unknown;
  universal: boolean;
}

function clickOf(activity: Activity): Click | undefined {
  if (activity.type === ActivityTypes.Message) {
    const value: unknown = activity.value;
    return isObject(value) && typeof value.verb === 'string' ? { data: value as Partial<ActionData>, verb: value.verb, universal: false } : undefined;
  }
  if (activity.type !== ActivityTypes.Invoke || activity.name !== 'adaptiveCard/action') return undefined;
  // The envelope check (adapter.ts) makes sure value.action is an object with a type.
  const action = (activity.value as { action: { type: string; verb?: unknown; data?: unknown } }).action;
  const data = (isObject(action.data) ? action.data : {}) as Partial<ActionData>;
  return { data, verb: typeof action.verb === 'string' ? action.verb : data.verb, universal: true };
}

const clickWithVerb = (verb: string) => (activity: Activity) => clickOf(activity)?.verb === verb;
const isBotAmong = (members: Array<{ id?: string }> | undefined, activity: Activity) => (members ?? []).some((m) => m.id !== undefined && m.id === activity.recipient?.id);
const nonEmpty = (list: unknown[] | undefined) => (list?.length ?? 0) > 0;
const isConversationUpdate = (a: Activity) => a.type === ActivityTypes.ConversationUpdate;
/** Team events come on a conversationUpdate that adds or removes nobody (as botbuilder's Teams handler reads them). */
const teamEvent = (a: Activity, ...names: string[]) =>
  isConversationUpdate(a) && a.channelId === 'msteams' && !nonEmpty(a.membersAdded) && !nonEmpty(a.membersRemoved) && names.includes((a.channelData as { eventType?: string } | undefined)?.eventType ?? '');

export class BillbridgeBot {
  /** Which buttons each card message carries: a click edits only the message that carries its button. */
  readonly cardMessages: CardMessages;
  private readonly router: Router;

  constructor(
    private readonly services: BotServices,
    private readonly dispatcher: Dispatcher,
    private readonly log: Logger,
    /** Card button verbs other than "run" (refresh, approve, deny...) and their handlers. */
    cardActions: Record<string, CardActionHandler> = {},
  ) {
    this.cardMessages = new CardMessages(services.state);
    const install = new InstallLifecycle(services, log);
    const { tenant, dedupe, durable, rate } = this;
    const routes: Route[] = [
      // Install lifecycle (install.ts): Teams sends installationUpdate and a conversationUpdate naming the bot on arrival
      // and on removal; both are handled, and the install record makes the welcome go out once. Its tenant checks are
      // its own (silent but for one refusal), and neither dedupe nor rate applies.
      { name: 'installed', select: (a) => a.type === ActivityTypes.InstallationUpdate && (a.action === 'add' || a.action === 'add-upgrade'), steps: [], run: (t) => install.added(t.context, t.scope, t.correlationId, { upgrade: t.activity.action === 'add-upgrade', via: 'installationUpdate' }) },
      { name: 'uninstalled', select: (a) => a.type === ActivityTypes.InstallationUpdate && a.action === 'remove', steps: [], run: (t) => install.removed(t.scope, t.correlationId, 'uninstalled') },
      { name: 'bot added', select: (a) => isConversationUpdate(a) && isBotAmong(a.membersAdded, a), steps: [], run: (t) => install.added(t.context, t.scope, t.correlationId, { via: 'membersAdded' }) },
      { name: 'bot removed', select: (a) => isConversationUpdate(a) && !nonEmpty(a.membersAdded) && isBotAmong(a.membersRemoved, a), steps: [], run: (t) => install.removed(t.scope, t.correlationId, 'removed from the conversation') },
      { name: 'team deleted', select: (a) => teamEvent(a, 'teamDeleted', 'teamHardDeleted'), steps: [], run: (t) => install.removed(t.scope, t.correlationId, 'team deleted') },
      { name: 'team renamed', select: (a) => teamEvent(a, 'teamRenamed'), steps: [], run: (t) => install.renamed(t.scope, (t.activity.channelData as { team?: { name?: string } }).team?.name) },
      // Typed commands: the dispatcher runs the person's rate, the command, the typing indicator and the audit record.
      { name: 'command', select: (a) => a.type === ActivityTypes.Message && !clickOf(a), steps: [tenant, dedupe], run: (t) => this.command(t) },
      // Card clicks change things (approvals): the duplicate mark is kept before anything is done.
      { name: 'card: Action.Execute only', select: (a) => clickOf(a)?.universal === true && (a.value as { action: { type: string } }).action.type !== 'Action.Execute', steps: [], run: (t) => this.answer(t, answerError('NotSupported', `The action '${(t.activity.value as { action: { type: string } }).action.type}' is not supported.`)) },
      { name: 'card: run', select: clickWithVerb('run'), steps: [tenant, dedupe, durable], run: (t) => this.click(t, (click) => this.runFromCard(t, click)) },
      ...Object.entries(cardActions).map(([verb, handler]): Route => ({ name: `card: ${verb}`, select: clickWithVerb(verb), steps: [tenant, dedupe, durable, rate], run: (t) => this.click(t, (click) => this.cardAction(t, click, handler)) })),
      { name: 'card: unknown verb', select: (a) => typeof clickOf(a)?.verb === 'string', steps: [tenant, dedupe, durable], run: (t) => this.click(t, async () => this.unknownVerb(t)) },
      { name: 'card: no verb', select: (a) => clickOf(a) !== undefined, steps: [tenant, dedupe, durable], run: (t) => this.answer(t, answerError('BadRequest', 'Missing verb')) },
    ];
    this.router = new Router(log);
    for (const route of routes) this.router.add(route);
  }

  /** The logic the adapter runs for each authenticated activity. */
  run(context: TurnContext): Promise<void> {
    return this.router.run(context);
  }

  // --- Steps ---

  /** Activities from tenants outside ALLOWED_TENANT_IDS get a refusal and touch nothing else. */
  private readonly tenant: Step = async (turn, next) => {
    if (this.services.access.tenantAllowed(turn.scope.tenantId)) return next();
    this.log.warn({ correlationId: turn.correlationId, tenantId: turn.scope.tenantId }, 'activity from a tenant that is not allowed');
    const reply = errorReply(new TenantNotAllowed(), { correlationId: turn.correlationId });
    if (turn.activity.type === ActivityTypes.Invoke) turn.answer = answerCard(reply.card);
    else await turn.context.sendActivity(cardActivity(reply));
  };

  /**
   * One answer per activity id in ten minutes: marks it as answered, or stops a repeat. The route may start at once; its
   * answer waits for `turn.kept` (the mark kept on disk or in Redis), so a redelivery after a crash is never answered twice.
   */
  private readonly dedupe: Step = async (turn, next) => {
    const a = turn.activity;
    if (a.id) {
      const claim = await this.services.state.claim(NS.seenActivities, `${a.conversation?.id ?? ''}|${a.id}`, this.services.clock.now(), { ttlMs: DUPLICATE_WINDOW_MS });
      if (!claim.created) {
        this.log.info({ correlationId: turn.correlationId, activityId: a.id }, 'duplicate delivery ignored');
        if (a.type === ActivityTypes.Invoke) turn.answer = answerText('Already handled');
        return;
      }
      turn.kept = claim.durable;
    }
    await next();
  };

  /** Waits for the duplicate mark to be kept before the handler runs (for clicks, which change things). */
  private readonly durable: Step = async (turn, next) => {
    await turn.kept;
    await next();
  };

  /**
   * Every button counts against the clicker's rate like a typed command (USER_COMMANDS_PER_MINUTE): a refusal is said
   * to them alone and nothing reaches BILL.
   */
  private readonly rate: Step = async (turn, next) => {
    try {
      await this.dispatcher.admit({ text: '', scope: turn.scope, caller: turn.caller, correlationId: turn.correlationId });
    } catch (err) {
      return this.click(turn, async () => ({ ...errorReply(err, { correlationId: turn.correlationId, formatTime: this.dispatcher.formatTime }), privateReply: true }));
    }
    await next();
  };

  // --- Handlers ---

  private async command(turn: Turn): Promise<void> {
    const { activity, context } = turn;
    const result = await this.dispatcher.run({
      text: typeof activity.text === 'string' ? activity.text : '',
      locale: activity.locale,
      scope: turn.scope,
      caller: turn.caller,
      correlationId: turn.correlationId,
      working: async () => {
        await context.sendActivity({ type: ActivityTypes.Typing });
      },
      kept: turn.kept,
    });
    await this.post(turn, result.reply);
  }

  private async runFromCard(turn: Turn, click: Click): Promise<CardActionReply> {
    const { data } = click;
    // A Try again belongs to the person whose command failed: anyone else pressing it runs nothing (their own
    // authority would otherwise run someone else's text). Who clicked comes from Teams, never from the card.
    if (data.by !== undefined && data.by !== retryOwnerOf(turn)) {
      this.log.info({ correlationId: turn.correlationId }, 'Try again pressed by someone other than its author; nothing run');
      return { ...notYourRetryReply(), privateReply: true };
    }
    const page = typeof data.page === 'number' && Number.isFinite(data.page) ? data.page : undefined;
    const text = typeof data.command === 'string' ? data.command : '';
    const result = await this.dispatcher.run({ text, page: page ?? 0, refresh: data.refresh === true, locale: turn.activity.locale, scope: turn.scope, caller: turn.caller, correlationId: turn.correlationId });
    // Refused (the person's rate) or failed (BILL down, an admin-only command): said to the clicker, and the card
    // everyone sees stays as it was.
    if (result.outcome !== 'ok') return { ...result.reply, privateReply: true };
    // Refresh, paging and a retry redraw the same view in place; any other button opens another view.
    const sameView = data.refresh === true || page !== undefined || data.by !== undefined;
    return sameView ? result.reply : { ...result.reply, newReply: true };
  }

  private async cardAction(turn: Turn, click: Click, handler: CardActionHandler): Promise<CardActionReply> {
    const { correlationId } = turn;
    const data = { ...click.data, verb: click.verb as string };
    try {
      return await handler({
        data,
        scope: turn.scope,
        caller: turn.caller,
        correlationId,
        log: turn.log,
        universal: click.universal,
        reference: JSON.parse(JSON.stringify(TurnContext.getConversationReference(turn.activity))) as Record<string, unknown>,
      });
    } catch (err) {
      this.log.warn({ correlationId, verb: data.verb, err: errorMessage(err) }, 'card action failed');
      return errorReply(err, { correlationId, formatTime: this.dispatcher.formatTime });
    }
  }

  private unknownVerb(turn: Turn): CardActionReply {
    this.log.info({ correlationId: turn.correlationId, verb: String(clickOf(turn.activity)?.verb).slice(0, 40) }, 'unknown card action');
    return errorReply(new Error('unknown card action'), { correlationId: turn.correlationId });
  }

  // --- Answers ---

  private async answer(turn: Turn, answer: InvokeResponse): Promise<void> {
    turn.answer = answer;
  }

  /**
   * Runs a click's handler and shows its reply. Action.Execute: the card goes back to the person who clicked (Teams
   * shows an invoke answer only on their client); `everyone` also edits the card message for the whole conversation.
   * Action.Submit: the message is edited to `everyone`, else to the card, unless `privateReply` (a new message).
   * `newReply`: another view, posted as a new reply either way. Edits go only to the message Teams says was clicked,
   * and only when that message carries the clicked button (cardMessages.ts); otherwise the answer comes as a new reply.
   */
  private async click(turn: Turn, handle: (click: Click) => Promise<CardActionReply>): Promise<void> {
    const click = clickOf(turn.activity)!;
    const reply = await handle(click);
    if (!click.universal) {
      if (reply.privateReply) await this.post(turn, reply);
      else if (reply.newReply || !(await this.carries(turn, click.data))) await this.post(turn, reply.everyone ?? reply);
      else await this.replaceCard(turn, reply.everyone ?? reply);
      return;
    }
    if (reply.newReply) {
      // Another view: a new reply in the thread; the clicked card stays as it was (a message answer leaves it alone).
      await this.post(turn, reply);
      turn.answer = answerText(reply.summary);
      return;
    }
    const carried = await this.carries(turn, click.data);
    if (reply.everyone && carried) await this.editCard(turn, reply.everyone);
    // The answer replaces the card on the clicker's client: its buttons may edit this message too.
    if (carried && !reply.privateReply) await this.recordCard(turn, turn.activity.replyToId, reply, 'shown');
    turn.answer = answerCard(reply.card);
  }

  /** Sends a card as a new message in this turn's conversation (thread) and records the buttons it carries. */
  private async post(turn: Turn, reply: CardReply): Promise<void> {
    const sent = await turn.context.sendActivity(cardActivity(reply));
    await this.recordCard(turn, sent?.id, reply, 'new');
  }

  /** Records the buttons a message now carries; a failure only means its buttons answer with new replies. */
  private async recordCard(turn: Turn, activityId: string | undefined, reply: CardReply, how: 'new' | 'edited' | 'shown'): Promise<void> {
    await this.cardMessages.posted({ tenantId: turn.scope.tenantId, conversationId: turn.scope.conversationId }, activityId, reply.card, how).catch((err: unknown) => {
      this.log.warn({ correlationId: turn.correlationId, err: errorMessage(err) }, 'card message record failed');
    });
  }

  /**
   * Does the message Teams says was clicked (replyToId) carry the clicked button? Nothing in the card data names a
   * message: a crafted click naming another of the bot's messages does not get to edit it.
   */
  private async carries(turn: Turn, data: Record<string, unknown>): Promise<boolean> {
    try {
      return await this.cardMessages.carries({ tenantId: turn.scope.tenantId, conversationId: turn.scope.conversationId }, turn.activity.replyToId, data);
    } catch (err) {
      this.log.warn({ correlationId: turn.correlationId, err: errorMessage(err) }, 'card message record unreadable');
      return false;
    }
  }

  /** Universal Actions: edit the card message for everyone (the invoke answer reaches only the clicker's client). */
  private async editCard(turn: Turn, reply: CardReply): Promise<void> {
    const replyToId = turn.activity.replyToId;
    if (!replyToId) return;
    try {
      await turn.context.updateActivity({ ...cardActivity(reply), id: replyToId });
      await this.recordCard(turn, replyToId, reply, 'edited');
    } catch (err) {
      this.log.warn({ correlationId: turn.correlationId, err: errorMessage(err) }, 'card edit for everyone failed');
    }
  }

  /** Action.Submit: replace the clicked card in place when Teams told us which one it was. */
  private async replaceCard(turn: Turn, reply: CardReply): Promise<void> {
    const replyToId = turn.activity.replyToId;
    if (replyToId) {
      try {
        await turn.context.updateActivity({ ...cardActivity(reply), id: replyToId });
        await this.recordCard(turn, replyToId, reply, 'edited');
        return;
      } catch (err) {
        this.log.info({ correlationId: turn.correlationId, err: errorMessage(err) }, 'card update failed; sending a new card');
      }
    }
    await this.post(turn, reply);
  }
}
