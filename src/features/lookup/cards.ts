// The lookup's own cards: several records a typed line names (buttons run their commands), and the "Look up in BILL"
// dialog (an Insert button per record, or what was looked for when nothing matched). A record's card is its command's.
import { adaptiveCard, escapeMarkdown, executeAction, shorten, submitAction, text, title, type CardReply } from '../../cards/card.js';
import type { Kind } from '../../mirror/records.js';
import type { Found, Named } from './lookup.js';

const KIND_WORD: Record<Kind, string> = { bill: 'Bill', invoice: 'Invoice', vendor: 'Vendor', customer: 'Customer' };

const buttonTitle = (m: Named) => `${KIND_WORD[m.kind]} ${shorten(m.label, 36)}`;

/** "Still reading this organisation's vendors and customers from BILL…" when a kind was not built within the wait. */
export function buildingNote(building: readonly Kind[]): string | undefined {
  if (building.length === 0) return undefined;
  const list = new Intl.ListFormat('en-GB').format(building.map((k) => `${k}s`));
  return `billbridge is still reading this organisation's ${list} from BILL (once per organisation); try again in a minute.`;
}

/** A typed line that names several records: one button each, running the command that shows it. */
export function matchesCard(typedText: string, found: Found): CardReply {
  const actions = found.matches.map((m) => executeAction(buttonTitle(m), { verb: 'run', command: m.command }));
  return adaptiveCard(
    [
      title('Which one do you mean?'),
      text(`You typed: ${escapeMarkdown(shorten(typedText, 80))}`, { subtle: true }),
      text(`That names ${found.matches.length} records in BILL. Pick one:`),
    ],
    { summary: `That names ${found.matches.length} records in BILL: ${found.matches.map(buttonTitle).join(', ')}.`, actions },
  );
}

/** The "Look up in BILL" dialog: the records the message names, each with Insert; or what was looked for. */
export function lookUpDialogCard(found: Found): CardReply {
  const note = buildingNote(found.building);
  if (found.matches.length === 0) return nothingFoundCard(found, note);
  // Insert's data names the record ({kind, number} or {kind, id}), never a command line.
  const actions = found.matches.map((m) =>
    submitAction(`Insert ${buttonTitle(m)}`, {
      verb: 'insert',
      kind: m.kind,
      ...(m.kind === 'vendor' || m.kind === 'customer' ? { id: m.key } : { number: m.key }),
    }),
  );
  const body = [
    title(found.matches.length === 1 ? 'Found in BILL' : `Found ${found.matches.length} records in BILL`),
    ...found.matches.map((m) => text(`**${KIND_WORD[m.kind]}** ${escapeMarkdown(m.label)}`)),
    text('Insert puts its card in your message box; nothing is posted until you send it.', { subtle: true }),
  ];
  if (note) body.push(text(note, { subtle: true }));
  return adaptiveCard(body, { summary: `Found in BILL: ${found.matches.map(buttonTitle).join(', ')}.`, actions });
}

function nothingFoundCard(found: Found, note: string | undefined): CardReply {
  const { numbers, names } = found.lookedFor;
  const what: string[] = [];
  if (numbers.length > 0) {
    const list = numbers.slice(0, 10).map((n) => escapeMarkdown(shorten(n, 30)));
    what.push(`bill and invoice numbers (${list.join(', ')}${numbers.length > 10 ? ', …' : ''})`);
  }
  if (names) what.push('vendor and customer names');
  const body = [
    title('Nothing found in BILL'),
    text(
      what.length > 0
        ? `I looked in this message for ${what.join(' and ')}; none of them is in this organisation's BILL records.`
        : 'This message has no numbers or names to look up.',
    ),
  ];
  if (note) body.push(text(note, { subtle: true }));
  return adaptiveCard(body, { summary: 'Nothing in this message names a bill, invoice, vendor or customer in BILL.' });
}
