// The bot's route table: typed commands, card actions (Action.Submit and Action.Execute) and install events, each with
// its steps in the order they run. Handlers get plain data (scope, caller, card data), never a botbuilder type.
import { ActivityTypes, TurnContext, type Activity, type ChannelAccount, type TeamsChannelData } from 'botbuilder';
import type { Logger } from '../infra/log.js';
import { LimitExceeded, TenantNotAllowed, errorMessage } from '../errors.js';
import { NS, type StateStore } from '../infra/state/types.js';
import type { AuditTrail } from '../infra/audit.js';
import type { UpstreamCallCounter } from '../infra/upstreamCalls.js';
import type { ActionData, CardReply } from '../cards/card.js';
import { notYourRetryReply } from '../cards/errorCards.js';
import type { CardMessages } from './cardMessages.js';
import { commandAudit } from '../features/audit.js';
import { userRateKey, type UserCommandRate } from './userRate.js';
import {
  retryOwnerOf,
  type CardActionHandler,
  type CardActionReply,
  type CommandLine,
  type CommandRequest,
  type Dispatcher,
  type TurnResult,
} from '../features/dispatch.js';
import type { AccessPolicy } from '../features/access.js';
import type { Clock } from '../infra/clock.js';
import { botArrived, botLeft, teamRenamed, type InstallParts } from './install.js';
import { normalizeCommandText } from '../features/parse.js';
import { messageExtensionRoutes, type MessageExtensionParts } from './messageExtensions.js';
import { cardActivity, invokeAnswer, isObject, routeTable, type Route, type Step, type Turn, type TurnLogic } from './routes.js';

/** Teams re-sends an activity it thinks went unanswered; one answer per id within this window. */
export const DUPLICATE_WINDOW_MS = 10 * 60_000;

/** Gives the invoke's protocol error and no card. */
const invokeError = (turn: Turn, code: string, message: string) => {
  turn.answer = invokeAnswer('error', { code, message }, 400);
  return Promise.resolve(undefined);
};

/** A card click: Action.Submit (a message whose value names a verb) or Action.Execute (an adaptiveCard/action invoke). */
function clickOf(activity: Activity): { data: Partial<ActionData>; verb: unknown; universal: boolean } | undefined {
  if (activity.type === 'message') {
    const value: unknown = activity.value;
    return isObject(value) && typeof value.verb === 'string'
      ? { data: value as Partial<ActionData>, verb: value.verb, universal: false }
      : undefined;
  }
  if (activity.type !== 'invoke' || activity.name !== 'adaptiveCard/action') return undefined;
  // The envelope check (adapter.ts) makes sure value.action is an object with a type.
  const action = (activity.value as { action: { type: string; verb?: unknown; data?: unknown } }).action;
  const data = (isObject(action.data) ? action.data : {}) as Partial<ActionData>;
  return { data, verb: typeof action.verb === 'string' ? action.verb : data.verb, universal: true };
}

/** The command line of a typed message, or of a card's run button (Refresh, Show more, Try again). */
function commandText(activity: Activity): string {
  const click = clickOf(activity);
  const text: unknown = click ? click.data.command : activity.text;
  return typeof text === 'string' ? text : '';
}

/** The click a card route selected (its select checked there is one). */
function clickIn(activity: Activity): NonNullable<ReturnType<typeof clickOf>> {
  const click = clickOf(activity);
  if (!click) throw new Error('a card route ran for an activity that is not a card click');
  return click;
}

const clickWithVerb = (verb: string) => (activity: Activity) => clickOf(activity)?.verb === verb;
const installation = (action: string) => (a: Activity) => a.type === 'installationUpdate' && a.action === action;
const isBotAmong = (members: Array<{ id?: string }> | undefined, activity: Activity) => {
  // The envelope check (adapter.ts) lets an activity come without a recipient, whatever botbuilder's type says.
  const bot = activity.recipient as Partial<ChannelAccount> | undefined;
  return (members ?? []).some((m) => m.id !== undefined && m.id === bot?.id);
};
const nonEmpty = (list: unknown[] | undefined) => (list?.length ?? 0) > 0;
/** A message that carries a card and no command text (mentions, markup and spaces aside). */
const isSharedCard = (a: Activity) =>
  (a.attachments ?? []).some((x) => {
    const type: unknown = x.contentType; // from the sender: the envelope check only makes each attachment an object
    return typeof type === 'string' && type.startsWith('application/vnd.microsoft.card.');
  }) && normalizeCommandText(typeof a.text === 'string' ? a.text : '') === '';
const isConversationUpdate = (a: Activity) => a.type === 'conversationUpdate';
const botAdded = (a: Activity) => isConversationUpdate(a) && isBotAmong(a.membersAdded, a);
const botRemoved = (a: Activity) => isConversationUpdate(a) && !nonEmpty(a.membersAdded) && isBotAmong(a.membersRemoved, a);
/** Team events come on a conversationUpdate that adds or removes nobody (as botbuilder's Teams handler reads them). */
const teamEvent =
  (...names: string[]) =>
  (a: Activity): boolean =>
    isConversationUpdate(a) &&
    a.channelId === 'msteams' &&
    !nonEmpty(a.membersAdded) &&
    !nonEmpty(a.membersRemoved) &&
    names.includes((a.channelData as TeamsChannelData | undefined)?.eventType ?? '');

export interface BotParts extends MessageExtensionParts {
  dispatcher: Dispatcher;
  install: InstallParts;
  access: Pick<AccessPolicy, 'tenantAllowed'>;
  /** Where the duplicate-delivery marks are kept. */
  state: Pick<StateStore, 'setIfAbsent'>;
  clock: Clock;
  rate: UserCommandRate;
  audit: Pick<AuditTrail, 'command'>;
  upstreamCalls: Pick<UpstreamCallCounter, 'scope'>;
  log: Logger;
  cardMessages: Pick<CardMessages, 'posted' | 'carries'>;
  /** Card button verbs other than "run" (refresh, approve, deny...) and their handlers. */
  cardActions: Record<string, CardActionHandler>;
}

/** The route table with the bot's steps and handlers: what the adapter runs for each authenticated activity. */
export function billbridgeBot(parts: BotParts): TurnLogic {
  const { dispatcher, install } = parts;
  const lineOf = (turn: Turn): CommandLine => (turn.line ??= dispatcher.parse(commandText(turn.activity)));

  // --- Steps ---

  /** Shows what the rest came to, last: a new message for a typed command (or an install's refusal), showClick for a click. */
  const reply: Step = async (turn, next) => {
    const result = await next();
    if (result && clickOf(turn.activity)) await showClick(turn, result.reply);
    else if (result) await postCard(turn, result.reply);
    return result;
  };

  /** Activities from tenants outside ALLOWED_TENANT_IDS touch nothing else; the route's answer says why, if it has one. */
  const tenant: Step = async (turn, next) => {
    if (parts.access.tenantAllowed(turn.scope.tenantId)) return next();
    turn.log.warn({ tenantId: turn.scope.tenantId, kind: turn.scope.kind }, 'activity from a tenant that is not allowed; nothing done');
    return dispatcher.refused(new TenantNotAllowed(), turn);
  };

  /** One answer per activity id in ten minutes; the mark is committed first, so a redelivery after a crash is not answered twice. */
  const dedupe: Step = async (turn, next) => {
    const { id, type } = turn.activity;
    if (!id) return next();
    const key = `${turn.scope.conversationId}|${id}`;
    if (await parts.state.setIfAbsent(NS.seenActivities, key, parts.clock.now(), { ttlMs: DUPLICATE_WINDOW_MS })) return next();
    turn.log.info({ activityId: id }, 'duplicate delivery ignored');
    if (type === 'invoke') turn.answer = invokeAnswer('activity.message', 'Already handled');
    return undefined;
  };

  /** The command line's audit record (what, who, how it went, the BILL calls made), written before the answer goes out. */
  const audit: Step = async (turn, next) => {
    const started = performance.now();
    const result = await next();
    if (result)
      await parts.audit.command(
        commandAudit(turn, result.ran ?? lineOf(turn), result, { ...parts.upstreamCalls.scope()?.counts }, performance.now() - started),
      );
    return result;
  };

  /** USER_COMMANDS_PER_MINUTE: beyond it (or with the shared counter unreachable) the person alone is told to wait. */
  const rate: Step = async (turn, next) => {
    try {
      const decision = await parts.rate.take(userRateKey(turn));
      if (!decision.allowed) throw new LimitExceeded('user.commands', decision.retryInMs, 'userRate');
    } catch (err) {
      return dispatcher.refused(err, turn);
    }
    return next();
  };

  /** A command that calls BILL shows typing: not awaited first (it would hold up the BILL calls), but sent before the answer. */
  const typing: Step = async (turn, next) => {
    const command = lineOf(turn).command;
    const works = command?.upstream === true && (!command.scopes || command.scopes.includes(turn.scope.kind));
    const typing = works
      ? turn.context
          .sendActivity({ type: ActivityTypes.Typing })
          .catch((err: unknown) => turn.log.debug({ err: errorMessage(err) }, 'typing indicator failed'))
      : undefined;
    const result = await next();
    await typing;
    return result;
  };

  // --- Handlers ---

  function command(turn: Turn, more?: Pick<CommandRequest, 'page' | 'refresh'>): Promise<TurnResult> {
    const { activity, scope, caller, correlationId } = turn;
    const request = { text: commandText(activity), locale: activity.locale, scope, caller, correlationId, ...more };
    return dispatcher.run(request, lineOf(turn));
  }

  async function runFromCard(turn: Turn): Promise<TurnResult> {
    const { data } = clickIn(turn.activity);
    // A Try again belongs to the person whose command failed: anyone else pressing it runs nothing (their own
    // authority would otherwise run someone else's text). Who clicked comes from Teams, never from the card.
    if (data.by !== undefined && data.by !== retryOwnerOf(turn)) {
      turn.log.info('Try again pressed by someone other than its author; nothing run');
      return { reply: { ...notYourRetryReply(), privateReply: true }, outcome: 'refused' };
    }
    const page = typeof data.page === 'number' && Number.isFinite(data.page) ? data.page : undefined;
    const result = await command(turn, { page: page ?? 0, refresh: data.refresh === true });
    // Failed (BILL down, an admin-only command): said to the clicker, and the card everyone sees stays as it was.
    if (result.outcome !== 'ok') return { ...result, reply: { ...result.reply, privateReply: true } };
    // Refresh, paging and a retry redraw the same view in place; any other button opens another view.
    const sameView = data.refresh === true || page !== undefined || data.by !== undefined;
    return sameView ? result : { ...result, reply: { ...result.reply, newReply: true } };
  }

  async function cardAction(turn: Turn, verb: string, handler: CardActionHandler): Promise<TurnResult> {
    const { activity, scope, caller, correlationId, log } = turn;
    const { data, universal } = clickIn(activity);
    try {
      const reference = JSON.parse(JSON.stringify(TurnContext.getConversationReference(activity))) as Record<string, unknown>;
      const reply = await handler({ data: { ...data, verb }, scope, caller, correlationId, log, universal, reference });
      return { reply, outcome: 'ok' };
    } catch (err) {
      log.warn({ verb, err: errorMessage(err) }, 'card action failed');
      return { reply: dispatcher.errorCard(err, turn), outcome: 'error', error: err };
    }
  }

  // --- Answers ---

  /** Shows a click's reply as CardActionReply (dispatch.ts) says: an invoke answer, a message edit or a new reply. */
  async function showClick(turn: Turn, reply: CardActionReply): Promise<void> {
    const click = clickIn(turn.activity);
    if (click.universal && reply.newReply) {
      // Another view: a new reply in the thread, the clicked card left as it was; a refused post is told to the clicker.
      const refused = await postCard(turn, reply);
      turn.answer = invokeAnswer('activity.message', refused === undefined ? reply.summary : dispatcher.errorCard(refused, turn).summary);
      return;
    }
    // Does the message Teams says was clicked (replyToId) carry the clicked button? Nothing in the card data names a
    // message: a crafted click naming another of the bot's messages does not get to edit it.
    const carried =
      !reply.privateReply &&
      !reply.newReply &&
      (await parts.cardMessages.carries(turn.scope, turn.activity.replyToId, click.data).catch((err: unknown) => {
        turn.log.warn({ err: errorMessage(err) }, 'card message record unreadable');
        return false;
      }));
    if (!click.universal) {
      const shown = reply.privateReply ? reply : (reply.everyone ?? reply);
      if (!carried || !(await edit(turn, shown))) await postCard(turn, shown);
      return;
    }
    if (reply.everyone && carried) await edit(turn, reply.everyone);
    // The answer replaces the card on the clicker's client: its buttons may edit this message too.
    if (carried) await recordCard(turn, turn.activity.replyToId, reply, 'shown');
    turn.answer = invokeAnswer('card.adaptive', reply.card);
  }

  /** Posts a card in this turn's conversation and records its buttons; a refused send is returned, not thrown (no error card could go either). */
  async function postCard(turn: Turn, reply: CardReply): Promise<unknown> {
    try {
      const sent = await turn.context.sendActivity(cardActivity(reply));
      await recordCard(turn, sent?.id, reply, 'new');
      return undefined;
    } catch (err) {
      turn.log.warn({ err: errorMessage(err) }, 'the reply could not be posted');
      return err ?? new Error('the reply could not be posted');
    }
  }

  /** Edits the clicked card message (replyToId) for everyone; false when Teams named none or the edit failed. */
  async function edit(turn: Turn, reply: CardReply): Promise<boolean> {
    const replyToId = turn.activity.replyToId;
    if (!replyToId) return false;
    try {
      await turn.context.updateActivity({ ...cardActivity(reply), id: replyToId });
      await recordCard(turn, replyToId, reply, 'edited');
      return true;
    } catch (err) {
      turn.log.warn({ err: errorMessage(err) }, 'card edit failed');
      return false;
    }
  }

  /** Records the buttons a message now carries; a failure only means its buttons answer with new replies. */
  async function recordCard(turn: Turn, activityId: string | undefined, reply: CardReply, how: 'new' | 'edited' | 'shown'): Promise<void> {
    await parts.cardMessages.posted(turn.scope, activityId, reply.card, how).catch((err: unknown) => {
      turn.log.warn({ err: errorMessage(err) }, 'card message record failed');
    });
  }

  // Install lifecycle (install.ts): Teams sends installationUpdate and a conversationUpdate naming the bot on arrival
  // and on removal; both are handled, and the install record makes the welcome go out once. Another tenant's
  // events touch nothing, and only installationUpdate add (not the conversationUpdate with it) posts the refusal.
  return routeTable(parts.log, [
    { name: 'installed', select: installation('add'), steps: [reply, tenant], run: (t) => botArrived(install, t, false) },
    { name: 'upgraded', select: installation('add-upgrade'), steps: [tenant], run: (t) => botArrived(install, t, true) },
    { name: 'uninstalled', select: installation('remove'), steps: [tenant], run: (t) => botLeft(install, t, 'uninstalled') },
    { name: 'bot added', select: botAdded, steps: [tenant], run: (t) => botArrived(install, t, false) },
    { name: 'bot removed', select: botRemoved, steps: [tenant], run: (t) => botLeft(install, t, 'removed from the conversation') },
    {
      name: 'team deleted',
      select: teamEvent('teamDeleted', 'teamHardDeleted'),
      steps: [tenant],
      run: (t) => botLeft(install, t, 'team deleted'),
    },
    { name: 'team renamed', select: teamEvent('teamRenamed'), steps: [tenant], run: (t) => teamRenamed(install, t) },
    // The compose box's search and the "Look up in BILL" message action: tenant, audit and rate as for a typed command.
    ...messageExtensionRoutes(parts, [tenant, audit, rate]),
    // Typed commands and clicks; the answer step comes first, as it sends what the rest came to. A card posted from the
    // compose box with no command beside it (Teams sends its placeholder span as the text) is shared: nothing is answered.
    {
      name: 'shared card',
      select: (a) => a.type === 'message' && !clickOf(a) && isSharedCard(a),
      steps: [],
      run: () => Promise.resolve(undefined),
    },
    {
      name: 'command',
      select: (a) => a.type === 'message' && !clickOf(a),
      steps: [reply, tenant, dedupe, audit, rate, typing],
      run: (t) => command(t),
    },
    {
      name: 'card: Action.Execute only',
      select: (a) => clickOf(a)?.universal === true && (a.value as { action: { type: string } }).action.type !== 'Action.Execute',
      steps: [],
      run: (t) =>
        invokeError(t, 'NotSupported', `The action '${(t.activity.value as { action: { type: string } }).action.type}' is not supported.`),
    },
    { name: 'card: run', select: clickWithVerb('run'), steps: [reply, tenant, dedupe, audit, rate], run: runFromCard },
    ...Object.entries(parts.cardActions).map(([verb, handler]): Route => ({
      name: `card: ${verb}`,
      select: clickWithVerb(verb),
      steps: [reply, tenant, dedupe, rate],
      run: (t) => cardAction(t, verb, handler),
    })),
    {
      name: 'card: unknown verb',
      select: (a) => typeof clickOf(a)?.verb === 'string',
      steps: [reply, tenant, dedupe],
      run: (t) => {
        t.log.info({ verb: String(clickIn(t.activity).verb).slice(0, 40) }, 'unknown card action');
        return Promise.resolve({ reply: dispatcher.errorCard(new Error('unknown card action'), t), outcome: 'unknown' });
      },
    },
    {
      name: 'card: no verb',
      select: (a) => clickOf(a) !== undefined,
      steps: [reply, tenant, dedupe],
      run: (t) => invokeError(t, 'BadRequest', 'Missing verb'),
    },
  ]);
}
