// Command lines (typed, or from a card button): parse, run the command, turn any error into the one error card. The
// steps around a command (tenant, duplicates, the person's rate, audit, typing) are the route table's (src/teams/bot.ts).
import { kept } from '../infra/bounded.js';
import { createHash, randomUUID } from 'node:crypto';
import { withoutUrlCredentials, type Logger } from '../infra/log.js';
import { errorMessage, errorName } from '../errors.js';
import { adaptiveCard, text, title, type ActionData, type CardReply } from '../cards/card.js';
import { errorReply } from '../cards/errorCards.js';
import { tooLongCard, unknownCommandCard, usageText } from '../cards/help.js';
import { MAX_COMMAND_LENGTH, type ParseResult } from './parse.js';
import type { CommandContext, CommandDefinition, CommandInput } from './types.js';
import type { CommandRegistry } from './registry.js';
import type { OrgBindings } from '../bindings/bindings.js';
import type { Clock } from '../infra/clock.js';
import { clockTime, type FormatOptions } from '../cards/format.js';
import type { Found, TextLookup } from './lookup/lookup.js';
import { buildingNote, matchesCard } from './lookup/cards.js';

/** A command line to run, typed or carried by a card button (with its page, and Refresh: answer from BILL, not a cached answer). */
export interface CommandRequest
  extends Partial<Pick<CommandInput, 'page' | 'refresh'>>, Pick<CommandContext, 'locale' | 'scope' | 'caller' | 'correlationId'> {
  text: string;
}

/** A command line as read: the parse, and the registered command it names (help for an empty line). */
export interface CommandLine {
  parsed: ParseResult;
  command: CommandDefinition | undefined;
}

/** What a turn came to: the card to show and, for the audit record, how it went and the organisation it used. */
export interface TurnResult {
  reply: CardActionReply;
  outcome: 'ok' | 'unknown' | 'empty' | 'refused' | 'error';
  orgId?: string;
  error?: unknown;
  /** The command line that answered when it is not the one typed (a line that named one record): what the audit records. */
  ran?: CommandLine;
}

/** A card button other than "run a command" (approve, deny...). Returns the card that replaces the clicked one. */
export type CardActionHandler = (ctx: CardActionContext) => Promise<CardActionReply>;

/**
 * What a card action answers. Action.Execute: the card goes to the clicker alone (Teams shows an invoke answer only on
 * their client). Action.Submit: the clicked message is edited to `everyone`, else to the card. Edits go only to the
 * clicked message, and only when it carries the clicked button (src/teams/cardMessages.ts); else a new reply goes.
 */
export interface CardActionReply extends CardReply {
  /** Also edits the card message for the whole conversation (Teams then refreshes every user-specific view). */
  everyone?: CardReply;
  /** Action.Submit: a new message; the clicked card stays as it was. */
  privateReply?: boolean;
  /** Another view ("Show overdue bills"): a new reply in the thread, whichever the action type; the clicked card stays. */
  newReply?: boolean;
}

export interface CardActionContext extends Pick<CommandContext, 'scope' | 'caller' | 'correlationId' | 'log'> {
  data: ActionData;
  /** True when the click came through Universal Actions (Action.Execute), false for the Action.Submit fallback. */
  universal: boolean;
  /** The conversation reference of this turn (JSON, no secrets), for later proactive sends to the same chat. */
  reference: Record<string, unknown>;
}

/** The activity's locale when it is a well-formed tag Intl supports (Teams sends e.g. "en-US"), else the fallback. */
function conversationLocale(requested: unknown, fallback: string): string {
  if (typeof requested !== 'string' || requested.length > 35 || !/^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(requested)) return fallback;
  // Asking Intl costs more than the rest of a help turn; the answers are few and never change.
  const supported = kept(supportedLocales, requested, () => {
    try {
      return Intl.NumberFormat.supportedLocalesOf([requested]).length > 0;
    } catch {
      return false;
    }
  });
  return supported ? requested : fallback;
}

const supportedLocales = new Map<string, boolean>();

/** Who a Try again belongs to, as a digest (the card carries no ids). It only ever refuses: a click runs as its clicker. */
export function retryOwnerOf(req: Pick<CommandRequest, 'scope' | 'caller'>): string {
  const who = (req.caller.aadObjectId || req.caller.id || 'anonymous').toLowerCase();
  return createHash('sha256')
    .update(`retry|${(req.scope.tenantId ?? '').toLowerCase()}|${who}`)
    .digest('base64url')
    .slice(0, 16);
}

/** What a command runs with: the turn's who and where, its org, its start, and its locale (the activity's, when usable). */
export function commandContext<O extends string | undefined>(
  turn: Pick<CommandContext, 'scope' | 'caller' | 'correlationId' | 'locale' | 'log'>,
  input: CommandInput,
  orgId: O,
  bot: { clock: Clock; locale: string },
): CommandContext & { orgId: O; locale: string } {
  const { scope, caller, correlationId, log } = turn;
  const now = new Date(bot.clock.now());
  return { input, scope, caller, orgId, correlationId, now, locale: conversationLocale(turn.locale, bot.locale), log };
}

/** Does the line start with the command's name glued to more than a word would ("connect:abc", "connect=abc")? */
function gluedTo(name: string, line: string): boolean {
  // Anything but a space: a letter too ("connectABC…", a zero-width space between them dropped by the parser).
  const next = line.charAt(name.length);
  return next !== '' && line.slice(0, name.length).toLowerCase() === name && !/\s/u.test(next);
}

export function newCorrelationId(): string {
  return randomUUID().replace(/-/g, '').slice(0, 12);
}

/** Its locale and time zone (the bot's) format numbers and dates when the activity names no usable locale. */
export interface DispatcherParts extends FormatOptions {
  registry: CommandRegistry;
  /** Which BILL organisation the conversation uses (a command's `orgId`). */
  orgBindings: Pick<OrgBindings, 'resolve'>;
  clock: Clock;
  log: Logger;
  /** What a line that is not a command names in the org's mirror (src/features/lookup). */
  lookup: Pick<TextLookup, 'find'>;
}

export class Dispatcher {
  constructor(private readonly parts: DispatcherParts) {}

  parse(text: string): CommandLine {
    const parsed = this.parts.registry.parse(text);
    const name = parsed.kind === 'command' ? parsed.name : parsed.kind === 'empty' ? 'help' : undefined;
    return { parsed, command: name === undefined ? undefined : this.parts.registry.get(name) };
  }

  /** Runs the command a line names (`line`: the line already parsed); any error becomes the one error card. */
  async run(req: CommandRequest, line = this.parse(req.text)): Promise<TurnResult> {
    const { parsed, command } = line;
    switch (parsed.kind) {
      case 'empty':
        if (!command) return { reply: unknownCommandCard('', undefined, { kind: req.scope.kind }), outcome: 'empty' };
        return this.invoke(command, { name: command.name, args: [], argText: '', page: 0 }, req, 'empty');
      case 'tooLong':
        return { reply: tooLongCard(parsed.length, MAX_COMMAND_LENGTH, req.scope.kind), outcome: 'unknown' };
      case 'unknown': {
        const suggestion = parsed.suggestion ? this.parts.registry.get(parsed.suggestion) : undefined;
        // "conect <token>", or a token glued to the name ("connect:<token>"): the card (seen by the conversation, kept
        // by Teams) neither repeats nor runs the secret.
        const glued = this.parts.registry.list().find((c) => c.secretArgs && gluedTo(c.name, parsed.text));
        if (glued) return { reply: unknownCommandCard(`${glued.name} …`, glued, { kind: req.scope.kind }), outcome: 'unknown' };
        if (suggestion?.secretArgs && parsed.suggestionArgs !== '') {
          const typed = parsed.text.split(/\s+/).slice(0, suggestion.name.split(' ').length).join(' ');
          return { reply: unknownCommandCard(`${typed} …`, suggestion, { kind: req.scope.kind }), outcome: 'unknown' };
        }
        // Not a command, but it may name a bill, invoice, vendor or customer: its command answers (one match), or a
        // card to pick one (several). Unbound, or the lookup failed: answered as unknown.
        let named: { orgId: string; found: Found } | undefined;
        try {
          const orgId = await this.parts.orgBindings.resolve(req.scope);
          named = orgId ? { orgId, found: await this.parts.lookup.find(orgId, parsed.text) } : undefined;
        } catch (err) {
          const log = this.parts.log.child({ correlationId: req.correlationId });
          log.warn({ err: errorMessage(err) }, 'lookup of a line that is not a command failed; answered as unknown');
        }
        const [only, ...others] = named?.found.matches ?? [];
        if (only && others.length === 0) {
          const line = this.parse(only.command);
          return { ...(await this.run({ ...req, text: only.command }, line)), ran: line };
        }
        if (named && others.length > 0) return { reply: matchesCard(parsed.text, named.found), outcome: 'ok', orgId: named.orgId };
        return {
          reply: unknownCommandCard(parsed.text, suggestion, {
            kind: req.scope.kind,
            args: parsed.suggestionArgs,
            note: buildingNote(named?.found.building ?? []),
          }),
          outcome: 'unknown',
        };
      }
      case 'command': {
        if (!command) throw new Error(`parser returned unregistered command ${parsed.name}`);
        const page = Math.max(0, Math.floor(req.page ?? 0));
        const input = { name: parsed.name, args: parsed.args, argText: parsed.argText, page, refresh: req.refresh === true };
        return this.invoke(command, input, req, 'ok');
      }
    }
  }

  /** A turn refused before its command ran (tenant, the person's rate): said to that person alone. */
  refused(err: unknown, req: Pick<CommandRequest, 'scope' | 'caller' | 'correlationId'>): TurnResult {
    return { reply: { ...this.errorCard(err, req), privateReply: true }, outcome: 'refused', error: err };
  }

  private async invoke(command: CommandDefinition, input: CommandInput, req: CommandRequest, outcome: 'ok' | 'empty'): Promise<TurnResult> {
    const log = this.parts.log.child({ correlationId: req.correlationId });
    if (command.scopes && !command.scopes.includes(req.scope.kind)) {
      const where = command.scopes
        .map((s) => ({ channel: 'a team channel', groupChat: 'a group chat', personal: 'a personal chat with me' })[s])
        .join(' or ');
      const body = [title(`"${command.name}" works in ${where}`), text(`Open ${where} and type **${usageText(command.usage)}** there.`)];
      return { outcome: 'refused', reply: adaptiveCard(body, { summary: `"${command.name}" works in ${where}.` }) };
    }
    let orgId: string | undefined;
    try {
      orgId = await this.parts.orgBindings.resolve(req.scope);
      const reply = await command.run(commandContext({ ...req, log }, input, orgId, this.parts));
      return { orgId, reply, outcome };
    } catch (err) {
      log.warn({ command: command.name, err: errorMessage(err), errName: errorName(err) }, 'command failed');
      // A Try again carries its command line in the card, which the whole conversation sees and Teams keeps: a
      // command whose arguments may be a secret ("connect <token>", a URL with a password) is retried without them.
      const secret = command.secretArgs === true || withoutUrlCredentials(input.argText) !== input.argText;
      const retryCommand = secret ? command.name : [command.name, input.argText].filter(Boolean).join(' ');
      return { orgId, reply: this.errorCard(err, req, retryCommand), outcome: 'error', error: err };
    }
  }

  /** The one error card, with the person's Try again when `retryCommand` is given. */
  errorCard(err: unknown, req: Pick<CommandRequest, 'scope' | 'caller' | 'correlationId'>, retryCommand?: string): CardReply {
    return errorReply(err, {
      correlationId: req.correlationId,
      kind: req.scope.kind,
      retryCommand,
      retryBy: retryOwnerOf(req),
      // "resets at 11:00" in the bot's locale and time zone.
      timeIn: (ms) => clockTime(this.parts.clock.now() + ms, this.parts),
    });
  }
}
