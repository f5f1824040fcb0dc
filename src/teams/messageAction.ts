// The "Look up in BILL" message action (an action-based message extension on a message, command id lookUp):
// composeExtension/fetchTask answers a dialog listing what the message names in the org's mirror, each with Insert;
// composeExtension/submitAction (an Insert) answers that record's card, its command's, for the person's compose box.
// The bot posts nothing: the card reaches the conversation only if the person sends it.
import type { Activity, InvokeResponse } from 'botbuilder';
import { NotBound } from '../errors.js';
import type { OrgBindings } from '../bindings/bindings.js';
import { adaptiveCard, text, title, type CardReply } from '../cards/card.js';
import type { CommandLine, Dispatcher, TurnResult } from '../features/dispatch.js';
import { lookUpDialogCard } from '../features/lookup/cards.js';
import type { Picked, TextLookup } from '../features/lookup/lookup.js';
import { isObject, type Route, type Step, type Turn } from './routes.js';

/** The command id the manifest declares for the message action. */
const LOOK_UP_COMMAND = 'lookUp';
/** Teams' limit for a card a message extension inserts. */
const MAX_INSERTED_CARD_BYTES = 28 * 1024;
const CARD = 'application/vnd.microsoft.card.adaptive';

export interface MessageActionParts {
  dispatcher: Pick<Dispatcher, 'parse' | 'run' | 'errorCard'>;
  orgBindings: Pick<OrgBindings, 'forExtension'>;
  lookup: TextLookup;
}

const lookUpInvoke = (name: string) => (a: Activity) =>
  a.type === 'invoke' && a.name === name && isObject(a.value) && a.value.commandId === LOOK_UP_COMMAND;

/** The audit record names no command for the dialog (the message's text is not a command line, and is not recorded). */
const LOOK_UP_LINE: CommandLine = {
  parsed: { kind: 'unknown', text: 'Look up in BILL', suggestion: undefined, suggestionArgs: '' },
  command: undefined,
};

const dialog = (reply: CardReply): InvokeResponse => ({
  status: 200,
  body: {
    task: { type: 'continue', value: { title: 'Look up in BILL', width: 'medium', card: { contentType: CARD, content: reply.card } } },
  },
});
const composeText = (line: string): InvokeResponse => ({ status: 200, body: { composeExtension: { type: 'message', text: line } } });

/** The two routes, with the steps commands have (`asCommand`: the tenant allow-list, the audit record and the person's rate). */
export function messageActionRoutes(parts: MessageActionParts, asCommand: readonly Step[]): Route[] {
  /** What the rest came to (a refusal included) becomes the invoke's answer: the dialog, or (Insert) a line. */
  const answer =
    (shape: (result: TurnResult) => InvokeResponse): Step =>
    async (turn, next) => {
      turn.line = LOOK_UP_LINE;
      const result = await next();
      if (result && !turn.answer) turn.answer = shape(result);
      return result;
    };
  return [
    {
      name: 'message action: look up',
      select: lookUpInvoke('composeExtension/fetchTask'),
      steps: [answer((r) => dialog(r.reply)), ...asCommand],
      run: (t) => lookUp(parts, t),
    },
    {
      name: 'message action: insert',
      select: lookUpInvoke('composeExtension/submitAction'),
      steps: [answer((r) => composeText(r.reply.summary)), ...asCommand],
      run: (t) => insert(parts, t),
    },
  ];
}

/** The organisation to look in, or the refusal to show. */
async function orgOf(parts: MessageActionParts, turn: Turn): Promise<{ orgId: string } | { refused: TurnResult }> {
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

async function lookUp(parts: MessageActionParts, turn: Turn): Promise<TurnResult> {
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

async function insert(parts: MessageActionParts, turn: Turn): Promise<TurnResult> {
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
  const result = await parts.dispatcher.run(
    { text: command, locale: turn.activity.locale, scope: turn.scope, caller: turn.caller, correlationId: turn.correlationId },
    line,
  );
  const card = result.reply.card;
  if (result.outcome === 'ok' && Buffer.byteLength(JSON.stringify(card)) <= MAX_INSERTED_CARD_BYTES) {
    turn.answer = {
      status: 200,
      body: { composeExtension: { type: 'result', attachmentLayout: 'list', attachments: [{ contentType: CARD, content: card }] } },
    };
  } else if (result.outcome === 'ok') {
    turn.answer = composeText(`That card is too large to insert; type @billbridge ${command} in a channel instead.`);
  }
  return result;
}
