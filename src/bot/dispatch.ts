// Command routing: a command line (typed, or from a card button) -> guards -> handler -> one card. No transport here.
import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from '../log.js';
import { errorMessage } from '../errors.js';
import type { ActionData, CardReply } from '../cards/card.js';
import { errorReply } from '../cards/errorCards.js';
import { tooLongCard, unknownCommandCard, usageText } from '../cards/help.js';
import { MAX_COMMAND_LENGTH } from '../features/parse.js';
import type { Caller, CommandDefinition, CommandInput, ConversationScope } from '../features/types.js';
import type { BotServices } from './services.js';
import { adaptiveCard, text, title } from '../cards/card.js';

export interface CommandRequest {
  /** The command line as typed (or carried by a card button). */
  text: string;
  page?: number;
  /** A card's Refresh button: answer from BILL rather than from a cached answer. */
  refresh?: boolean;
  /** The activity's locale (e.g. "de-DE"); used for numbers and dates when valid. */
  locale?: string;
  scope: ConversationScope;
  caller: Caller;
  correlationId: string;
  /** Called once before a command that needs upstream work (typing indicator). */
  working?: () => Promise<void>;
  /**
   * Resolves once the activity's duplicate-delivery mark is kept (on disk or in Redis). A command that needs upstream
   * work starts at once (its BILL calls do not wait for the disk); the others start after it (they are quick, and an
   * answer made early would only be held in memory meanwhile). Either way the result comes after it.
   */
  kept?: Promise<void>;
}

export type Outcome = 'ok' | 'unknown' | 'empty' | 'refused' | 'error';

export interface DispatchResult {
  reply: CardReply;
  outcome: Outcome;
  command: string | undefined;
  args: string[];
  orgId: string | undefined;
  error?: unknown;
}

/** A card button other than "run a command" (approve, deny...). Returns the card that replaces the clicked one. */
export type CardActionHandler = (ctx: CardActionContext) => Promise<CardActionReply>;

/**
 * What a card action answers. Action.Execute: the card goes back to the person who clicked (Teams shows an invoke
 * answer only on their client). `everyone` also edits the card message for the whole conversation (a message edit;
 * Teams then refreshes every user-specific view). Action.Submit: the message is edited to `everyone`, else to the
 * card — unless `privateReply`, which answers with a new message and leaves the clicked card as it was.
 * `newReply`: another view (e.g. "Show overdue bills"), posted as a new reply in the thread whichever the action type;
 * the clicked card stays as it was, so the answer it showed is not lost.
 * Edits go only to the message Teams says was clicked, and only when that message carries the clicked button
 * (src/bot/cardMessages.ts); otherwise the answer comes as a new reply.
 */
export interface CardActionReply extends CardReply {
  everyone?: CardReply;
  privateReply?: boolean;
  newReply?: boolean;
}

export interface CardActionContext {
  data: ActionData;
  scope: ConversationScope;
  caller: Caller;
  correlationId: string;
  log: Logger;
  /** True when the click came through Universal Actions (Action.Execute), false for the Action.Submit fallback. */
  universal: boolean;
  /** The conversation reference of this turn (JSON, no secrets), for later proactive sends to the same chat. */
  reference: Record<string, unknown>;
}

/** Runs before every command; throws a typed error (TenantNotAllowed, LimitExceeded...) to refuse. */
export type CommandGuard = (req: CommandRequest, command: CommandDefinition | undefined) => Promise<void>;

/** Sees every result (audit trail, metrics). Must not throw. */
export type DispatchObserver = (req: CommandRequest, result: DispatchResult, durationMs: number) => void | Promise<void>;

/** The activity's locale when it is a well-formed tag Intl supports (Teams sends e.g. "en-US"), else the fallback. */
export function conversationLocale(requested: unknown, fallback: string): string {
  if (typeof requested !== 'string' || requested.length === 0 || requested.length > 35 || !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(requested)) return fallback;
  let supported = supportedLocales.get(requested);
  if (supported === undefined) {
    try {
      supported = Intl.NumberFormat.supportedLocalesOf([requested]).length > 0;
    } catch {
      supported = false;
    }
    // Asking Intl costs more than the rest of a help turn; the answers are few and never change.
    if (supportedLocales.size >= 256) supportedLocales.clear();
    supportedLocales.set(requested, supported);
  }
  return supported ? requested : fallback;
}

const supportedLocales = new Map<string, boolean>();

/**
 * Who a Try again belongs to: a digest of the person's tenant and Entra id (as userRateKey), so the button can name its
 * author without carrying their ids. It only ever refuses: a click runs as the person Teams says clicked.
 */
export function retryOwnerOf(req: Pick<CommandRequest, 'scope' | 'caller'>): string {
  const who = (req.caller.aadObjectId || req.caller.id || 'anonymous').toLowerCase();
  return createHash('sha256').update(`retry|${(req.scope.tenantId ?? '').toLowerCase()}|${who}`).digest('base64url').slice(0, 16);
}

export function newCorrelationId(): string {
  return randomUUID().replace(/-/g, '').slice(0, 12);
}

export class Dispatcher {
  private readonly guards: CommandGuard[] = [];
  private readonly observers: DispatchObserver[] = [];

  constructor(
    private readonly services: BotServices,
    private readonly log: Logger,
  ) {}

  addGuard(guard: CommandGuard): this {
    this.guards.push(guard);
    return this;
  }

  addObserver(observer: DispatchObserver): this {
    this.observers.push(observer);
    return this;
  }

  /**
   * The guards (the person's rate...) for a turn that is not a command: a card button with its own handler. Throws the
   * guard's typed error to refuse.
   */
  async admit(req: CommandRequest): Promise<void> {
    for (const guard of this.guards) await guard(req, undefined);
  }

  /** Formats an instant in the bot's time zone, for "resets at 11:00" and "as of 10:42". */
  /** Built on first use and kept: locale and time zone are the bot's own, and a formatter costs tens of microseconds. */
  private timeFormat: Intl.DateTimeFormat | undefined;

  formatTime = (ms: number): string =>
    (this.timeFormat ??= new Intl.DateTimeFormat(this.services.config.locale, {
      hour: '2-digit',
      minute: '2-digit',
      timeZone: this.services.config.timeZone,
    })).format(new Date(ms));

  async run(req: CommandRequest): Promise<DispatchResult> {
    const started = performance.now();
    const result = await this.execute(req);
    await req.kept;
    for (const observer of this.observers) {
      try {
        await observer(req, result, performance.now() - started);
      } catch (err) {
        this.log.warn({ correlationId: req.correlationId, err: errorMessage(err) }, 'dispatch observer failed');
      }
    }
    return result;
  }

  private async execute(req: CommandRequest): Promise<DispatchResult> {
    const { registry } = this.services;
    const parsed = registry.parse(req.text);
    const base = { command: undefined, args: [] as string[], orgId: undefined };
    const log = this.log.child({ correlationId: req.correlationId });

    const command = parsed.kind === 'command' ? registry.get(parsed.name) : undefined;
    if (command?.upstream !== true) await req.kept;
    try {
      for (const guard of this.guards) await guard(req, command);
    } catch (err) {
      return { ...base, command: command?.name, reply: this.errorCard(err, req), outcome: 'refused', error: err };
    }

    switch (parsed.kind) {
      case 'empty': {
        const help = registry.get('help');
        if (!help) return { ...base, reply: unknownCommandCard('', undefined, { kind: req.scope.kind }), outcome: 'empty' };
        return this.invoke(help, { name: 'help', args: [], argText: '', page: 0 }, req, log, 'empty');
      }
      case 'tooLong':
        return { ...base, reply: tooLongCard(parsed.length, MAX_COMMAND_LENGTH, req.scope.kind), outcome: 'unknown' };
      case 'unknown': {
        const suggestion = parsed.suggestion ? registry.get(parsed.suggestion) : undefined;
        // "conect <token>": the card (seen by the conversation, kept by Teams) neither repeats nor runs the secret.
        if (suggestion?.secretArgs && parsed.suggestionArgs !== '') {
          const typed = parsed.text.split(/\s+/).slice(0, suggestion.name.split(' ').length).join(' ');
          return { ...base, reply: unknownCommandCard(`${typed} …`, suggestion, { kind: req.scope.kind }), outcome: 'unknown' };
        }
        return {
          ...base,
          reply: unknownCommandCard(parsed.text, suggestion, { kind: req.scope.kind, args: parsed.suggestionArgs }),
          outcome: 'unknown',
        };
      }
      case 'command': {
        if (!command) throw new Error(`parser returned unregistered command ${parsed.name}`);
        const input: CommandInput = { name: command.name, args: parsed.args, argText: parsed.argText, page: Math.max(0, Math.floor(req.page ?? 0)), refresh: req.refresh === true };
        return this.invoke(command, input, req, log, 'ok');
      }
    }
  }

  private async invoke(command: CommandDefinition, input: CommandInput, req: CommandRequest, log: Logger, okOutcome: Outcome): Promise<DispatchResult> {
    const result = { command: command.name, args: input.args };
    if (command.scopes && !command.scopes.includes(req.scope.kind)) {
      const where = command.scopes.map((s) => ({ channel: 'a team channel', groupChat: 'a group chat', personal: 'a personal chat with me' })[s]).join(' or ');
      return {
        ...result,
        orgId: undefined,
        outcome: 'refused',
        reply: adaptiveCard([title(`"${command.name}" works in ${where}`), text(`Open ${where} and type **${usageText(command.usage)}** there.`)], {
          summary: `"${command.name}" works in ${where}.`,
        }),
      };
    }
    let orgId: string | undefined;
    // The typing indicator goes out while the command works (not before it: its round trip to the Bot Connector
    // would hold up the BILL calls), and is on its way before the answer is returned, so it never follows it.
    let typing: Promise<void> | undefined;
    try {
      orgId = await this.services.orgBindings.resolve(req.scope);
      if (command.upstream && req.working) typing = req.working().catch((err) => log.debug({ err: errorMessage(err) }, 'typing indicator failed'));
      const reply = await command.run({
        input,
        scope: req.scope,
        caller: req.caller,
        orgId,
        correlationId: req.correlationId,
        now: new Date(this.services.clock.now()),
        locale: conversationLocale(req.locale, this.services.config.locale),
        log,
      });
      await typing;
      // Written out, not spread from `result`: every command returns through here (see AuditTrail.command).
      return { command: result.command, args: result.args, orgId, reply, outcome: okOutcome };
    } catch (err) {
      log.warn({ command: command.name, err: errorMessage(err), errName: err instanceof Error ? err.name : typeof err }, 'command failed');
      // A Try again carries its command line in the card, which the whole conversation sees and Teams keeps: a
      // command whose arguments may be a secret ("connect <token>") is retried without them.
      const retryCommand = command.secretArgs ? command.name : [command.name, input.argText].filter(Boolean).join(' ');
      await typing;
      return { ...result, orgId, reply: this.errorCard(err, req, retryCommand), outcome: 'error', error: err };
    }
  }

  private errorCard(err: unknown, req: CommandRequest, retryCommand?: string): CardReply {
    return errorReply(err, { correlationId: req.correlationId, kind: req.scope.kind, retryCommand, retryBy: retryOwnerOf(req), formatTime: this.formatTime, now: () => this.services.clock.now() });
  }
}
