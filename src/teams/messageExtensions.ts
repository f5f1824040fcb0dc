// Message extensions, each an invoke route with a typed command's steps: search BILL from the compose box, and the "Look
// up in BILL" message action (a dialog of what the message names in the org's mirror; Insert answers that record's card
// for the person's compose box). The bot posts nothing: a card reaches the conversation only if the person sends it.
import { CardFactory, type Activity, type InvokeResponse, type MessagingExtensionAttachment } from 'botbuilder';
import { NotBound, errorMessage, errorName } from '../errors.js';
import type { OrgBindings } from '../bindings/bindings.js';
import { adaptiveCard, escapeMarkdown, MAX_LINE, shorten, text, title, type CardReply } from '../cards/card.js';
import type { CommandLine, Dispatcher, TurnResult } from '../features/dispatch.js';
import { lookUpDialogCard } from '../features/lookup/cards.js';
import type { Picked, TextLookup } from '../features/lookup/lookup.js';
import { searchCommand } from '../features/search/commands.js';
import { MAX_EXTENSION_CARD_BYTES, type ComposeSearch, type SearchResult } from '../features/search/search.js';
import { isObject, type Route, type Step, type Turn } from './routes.js';

/** The command id the manifest declares for the message action. */
const LOOK_UP_COMMAND = 'lookUp';

export interface MessageExtensionParts {
  search: Pick<ComposeSearch, 'query'>;
  dispatcher: Pick<Dispatcher, 'parse' | 'run' | 'errorCard'>;
  orgBindings: Pick<OrgBindings, 'forExtension'>;
  lookup: TextLookup;
}

/** The audit record names no command for the dialog (the message's text is not a command line, and is not recorded). */
const LOOK_UP_LINE: CommandLine = {
  parsed: { kind: 'unknown', text: 'Look up in BILL', suggestion: undefined, suggestionArgs: '' },
  command: undefined,
};

const composeMessage = (line: string): InvokeResponse => ({ status: 200, body: { composeExtension: { type: 'message', text: line } } });
const summaryMessage = (reply: CardReply): InvokeResponse => composeMessage(reply.summary);
const composeResults = (attachments: MessagingExtensionAttachment[]): InvokeResponse => ({
  status: 200,
  body: { composeExtension: { type: 'result', attachmentLayout: 'list', attachments } },
});
const dialog = (reply: CardReply): InvokeResponse => ({
  status: 200,
  body: { task: { type: 'continue', value: { title: 'Look up in BILL', width: 'medium', card: CardFactory.adaptiveCard(reply.card) } } },
});

export function messageExtensionRoutes(parts: MessageExtensionParts, asCommand: readonly Step[]): Route[] {
  const route = (
    name: string,
    select: Route['select'],
    lineOf: (turn: Turn) => CommandLine,
    shape: (reply: CardReply) => InvokeResponse,
    handler: (parts: MessageExtensionParts, turn: Turn) => Promise<TurnResult>,
  ): Route => {
    // The first step sets the command line the audit step records, and (last to finish) gives what the rest came to as
    // the invoke's answer when the handler gave none, so a later step's refusal is shown in the invoke's own shape.
    const answering: Step = async (turn, next) => {
      turn.line = lineOf(turn);
      const result = await next();
      if (result) turn.answer ??= shape(result.reply);
      return result;
    };
    // A failing handler (BILL down while a cold mirror is read, the store unreachable) answers with the error card in
    // the invoke's own shape, audited as an error as a command is: not a 501 from the turn.
    const run = async (turn: Turn): Promise<TurnResult> => {
      try {
        return await handler(parts, turn);
      } catch (err) {
        turn.log.warn({ err: errorMessage(err), errName: errorName(err) }, 'message extension failed');
        return { outcome: 'error', reply: parts.dispatcher.errorCard(err, turn), error: err };
      }
    };
    return { name, select, steps: [answering, ...asCommand], run, failed: shape };
  };
  const lookUpInvoke = (name: string) => (a: Activity) =>
    a.type === 'invoke' && a.name === name && isObject(a.value) && a.value.commandId === LOOK_UP_COMMAND;
  const isSearch = (a: Activity) => a.type === 'invoke' && a.name === 'composeExtension/query';
  return [
    route('compose: search', isSearch, searchLine, summaryMessage, search),
    route('message action: look up', lookUpInvoke('composeExtension/fetchTask'), () => LOOK_UP_LINE, dialog, lookUp),
    route('message action: insert', lookUpInvoke('composeExtension/submitAction'), () => LOOK_UP_LINE, summaryMessage, insert),
  ];
}

/** The query of a composeExtension/query: its command, the typed text (none on Teams' initial run) and the page asked for. */
function queryOf(activity: Activity): { commandId: unknown; text: string | undefined; skip: number; count: number } {
  const value = isObject(activity.value) ? activity.value : {};
  const parameters = Array.isArray(value.parameters) ? value.parameters.filter(isObject) : [];
  const typed = parameters.find((p) => p.name !== 'initialRun');
  const initialRun = parameters.some((p) => p.name === 'initialRun') && typed === undefined;
  const options = isObject(value.queryOptions) ? value.queryOptions : {};
  const num = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
  return {
    commandId: value.commandId,
    text: initialRun ? undefined : typeof typed?.value === 'string' ? typed.value : '',
    skip: num(options.skip, 0),
    count: num(options.count, 25),
  };
}

/** What the audit step records of a search: "search <kind>" and the typed text. */
function searchLine(turn: Turn): CommandLine {
  const { commandId, text: typed } = queryOf(turn.activity);
  const name = `search ${searchCommand(commandId)?.id ?? 'unknown'}`;
  const args = typed ? [typed] : [];
  return { parsed: { kind: 'command', name, args, argText: args.join(' ') }, command: undefined };
}

/** A thumbnail card's text, which Teams renders as its XML subset (<a href>, <b>…; title and subtitle take none). */
const escapeRichText = (value: string): string => value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A result row: the card inserted when picked, and a preview with no tap (Teams would ask again with selectItem, and the
 * Agents Playground lists no result whose preview has one). */
function attachment(result: SearchResult): MessagingExtensionAttachment {
  // Shortened as card text is (a BILL name can be thousands of characters; Teams shows a line or two of each).
  const { title, subtitle, text: line } = result.preview;
  const preview = CardFactory.thumbnailCard(shorten(title, MAX_LINE), escapeRichText(shorten(line, MAX_LINE)), [], [], {
    subtitle: shorten(subtitle, MAX_LINE),
  });
  return { ...CardFactory.adaptiveCard(result.card.card), preview };
}

async function search(parts: MessageExtensionParts, turn: Turn): Promise<TurnResult> {
  const { scope, caller, correlationId, log } = turn;
  const got = await parts.search.query({ scope, caller, locale: turn.activity.locale, correlationId, log, ...queryOf(turn.activity) });
  turn.answer = got.message !== undefined ? composeMessage(got.message) : composeResults(got.results.map(attachment));
  // What the audit step records of the search's outcome.
  const summary = got.message ?? `${got.results.length} results`;
  const reply = got.results[0]?.card ?? adaptiveCard([text(escapeMarkdown(summary))], { summary });
  return { reply, outcome: got.outcome, orgId: got.orgId, error: got.error };
}

/** The organisation to look in, or the refusal to show. */
async function orgOf(parts: MessageExtensionParts, turn: Turn): Promise<{ orgId: string } | { refused: TurnResult }> {
  const org = await parts.orgBindings.forExtension(turn.scope);
  if ('orgId' in org) return org;
  // A chat has no team binding: in multi-org mode only a linked team's channel names the organisation to look in.
  if (org.refused === 'chat in multi-org') {
    const body = [
      title('Use Look up in BILL from a channel of a linked team'),
      text("Each team here is linked to its own BILL organisation, and a chat isn't. Use it on a message in a channel of a linked team."),
    ];
    const summary = 'Look up in BILL works on messages in a channel of a linked team.';
    return { refused: { outcome: 'refused', reply: adaptiveCard(body, { summary }) } };
  }
  return { refused: { outcome: 'refused', reply: parts.dispatcher.errorCard(new NotBound(), turn), error: new NotBound() } };
}

async function lookUp(parts: MessageExtensionParts, turn: Turn): Promise<TurnResult> {
  const org = await orgOf(parts, turn);
  if ('refused' in org) return org.refused;
  const value = turn.activity.value as { messagePayload?: { body?: { content?: unknown } } };
  const content = value.messagePayload?.body?.content;
  const found = await parts.lookup.find(org.orgId, typeof content === 'string' ? content : '');
  return { outcome: 'ok', orgId: org.orgId, reply: lookUpDialogCard(found) };
}

/** The Insert button's data, checked: it comes back from the client, so it is read like typed text. */
function pickedOf(data: unknown): Picked | undefined {
  if (!isObject(data)) return undefined;
  const { kind, number, id } = data;
  if ((kind === 'bill' || kind === 'invoice') && typeof number === 'string' && /^[^\s]{1,100}$/.test(number)) return { kind, number };
  if ((kind === 'vendor' || kind === 'customer') && typeof id === 'string' && /^[A-Za-z0-9]{1,64}$/.test(id)) return { kind, id };
  return undefined;
}

async function insert(parts: MessageExtensionParts, turn: Turn): Promise<TurnResult> {
  const org = await orgOf(parts, turn);
  if ('refused' in org) return org.refused;
  const picked = pickedOf((turn.activity.value as { data?: unknown }).data);
  const command = picked && (await parts.lookup.commandFor(org.orgId, picked));
  if (!command) {
    const gone = 'That record is no longer in BILL.';
    return { outcome: 'unknown', orgId: org.orgId, reply: adaptiveCard([text(gone)], { summary: gone }) };
  }
  const line = parts.dispatcher.parse(command);
  turn.line = line;
  const { scope, caller, correlationId } = turn;
  const result = await parts.dispatcher.run({ text: command, locale: turn.activity.locale, scope, caller, correlationId }, line);
  const card = result.reply.card;
  if (result.outcome === 'ok' && Buffer.byteLength(JSON.stringify(card)) <= MAX_EXTENSION_CARD_BYTES)
    turn.answer = composeResults([CardFactory.adaptiveCard(card)]);
  else if (result.outcome === 'ok')
    turn.answer = composeMessage(`That card is too large to insert; type @billbridge ${command} in a channel instead.`);
  return result;
}
