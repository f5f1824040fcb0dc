// The help card (every registered command with usage and an example) and the unknown-command card.
import type { CommandInfo, ConversationKind } from '../features/types.js';
import { adaptiveCard, escapeMarkdown, executeAction, footer, shorten, subtitle, table, text, title, type CardReply } from './card.js';

/** A usage as Teams can show it: Teams drops `<number>` as markup (and shows `&lt;` literally), so it becomes `{number}`. */
export function usageText(usage: string): string {
  return usage.replace(/<([^<>]*)>/g, '{$1}');
}

/** How to type a command where the person is: "@billbridge bills due" in a channel or group chat, "bills due" in a personal chat. */
export function typed(command: string, kind: ConversationKind = 'channel'): string {
  return kind === 'personal' ? command : `@billbridge ${command}`;
}

/** "Type **help** to see every command." in the words that fit the conversation. */
function helpHint(kind?: ConversationKind): string {
  return `Type **${typed('help', kind)}** to see every command.`;
}

/** "Demo organisation — simulated data · billbridge 1.2.3": the footer of the help, welcome and status cards. */
export function versionFooter(note: string | undefined, version: string) {
  return footer([note, `billbridge ${version}`].filter(Boolean).join(' · '));
}

/** Where help is asked for (`kind`) says how to type a command; `note` (the sandbox's) goes in the footer. */
export function helpCard(commands: readonly CommandInfo[], opts: { note?: string; version: string; kind?: ConversationKind }): CardReply {
  // Command texts are ours (the registry), shown exactly as people should type them.
  // The example leads the row's second line: at a line's end the browser breaks it at a hyphen (bill ACM- / 12345).
  const rows = commands.map((c) => [usageText(c.usage), c.examples[0] ?? c.name, c.description]);
  const how = opts.kind === 'personal' ? 'Type a command here, e.g. bills due' : 'Mention me with a command, e.g. @billbridge bills due';
  const body = [
    title('billbridge commands'),
    subtitle(how),
    table([{ header: 'Command' }, { header: 'Example' }, { header: 'What it does', plain: true }], rows),
    versionFooter(opts.note, opts.version),
  ];
  return adaptiveCard(body, { summary: `billbridge: ${commands.length} commands — ${commands.map((c) => c.name).join(', ')}` });
}

/** `args`: what was typed after the suggestion's words ("14" of "bils due 14"), which its button runs with. */
export function unknownCommandCard(
  typedText: string,
  suggestion: CommandInfo | undefined,
  opts: { kind?: ConversationKind; args?: string; note?: string } = {},
): CardReply {
  const body = [title("I didn't understand that"), text(`You typed: ${escapeMarkdown(shorten(typedText, 80))}`, { subtle: true })];
  const actions = [executeAction('Show all commands', { verb: 'run', command: 'help' })];
  if (suggestion) {
    body.push(text(`Did you mean **${usageText(suggestion.usage)}**? ${suggestion.description}`));
    body.push(text(`Example: ${suggestion.examples[0] ?? suggestion.name}`, { subtle: true }));
    // Runs as is without arguments: optional ones take their default, a missing required one gets "which one?".
    const args = (opts.args ?? '').trim().slice(0, 200);
    const line = args ? `${suggestion.name} ${args}` : suggestion.name;
    actions.unshift(executeAction(`Run "${shorten(line, 40)}"`, { verb: 'run', command: line }));
  } else {
    body.push(text(helpHint(opts.kind)));
  }
  if (opts.note) body.push(text(opts.note, { subtle: true }));
  return adaptiveCard(body, {
    summary: suggestion
      ? `Unknown command. Did you mean "${suggestion.name}"? Type help for all commands.`
      : 'Unknown command. Type help for all commands.',
    actions,
  });
}

export function tooLongCard(length: number, max: number, kind?: ConversationKind): CardReply {
  return adaptiveCard(
    [
      title('That message is too long for a command'),
      text(`Commands are short (at most ${max} characters; this one had ${length}). ${helpHint(kind)}`),
    ],
    { summary: 'That message is too long for a command. Type help to see the commands.' },
  );
}
