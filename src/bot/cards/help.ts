// The help card (every registered command with usage and an example) and the unknown-command card.
import type { CommandDefinition } from '../commands/types.js';
import { adaptiveCard, escapeMarkdown, executeAction, footer, subtitle, table, text, title, type CardReply } from './card.js';

export interface HelpOptions {
  /** Footer note, e.g. "Demo organisation — simulated data". */
  note?: string;
  version: string;
}

export function helpCard(commands: readonly CommandDefinition[], opts: HelpOptions): CardReply {
  // Command texts are ours (the registry), shown exactly as people should type them.
  // The example leads the row's second line: at a line's end the browser breaks it at a hyphen (bill ACM- / 12345).
  const rows = commands.map((c) => [c.usage, c.examples[0] ?? c.name, c.description]);
  const body = [
    title('billbridge commands'),
    subtitle('Mention me with a command, e.g. @billbridge bills due'),
    table(
      [
        { header: 'Command', width: 3 },
        { header: 'Example', width: 3 },
        { header: 'What it does', width: 5, plain: true },
      ],
      rows,
    ),
    footer([opts.note, `billbridge ${opts.version}`].filter(Boolean).join(' · ')),
  ];
  return adaptiveCard(body, { summary: `billbridge: ${commands.length} commands — ${commands.map((c) => c.name).join(', ')}` });
}

export function unknownCommandCard(typed: string, suggestion: CommandDefinition | undefined): CardReply {
  const shown = typed.length > 80 ? typed.slice(0, 79) + '…' : typed;
  const body = [
    title("I didn't understand that"),
    text(`You typed: ${escapeMarkdown(shown)}`, { subtle: true }),
  ];
  const actions = [executeAction('Show all commands', { verb: 'run', command: 'help' })];
  if (suggestion) {
    body.push(text(`Did you mean **${suggestion.usage}**? ${suggestion.description}`));
    body.push(text(`Example: ${suggestion.examples[0] ?? suggestion.name}`, { subtle: true }));
    if (!/[<[]/.test(suggestion.usage)) {
      actions.unshift(executeAction(`Run "${suggestion.name}"`, { verb: 'run', command: suggestion.name }));
    }
  } else {
    body.push(text('Type **help** to see every command.'));
  }
  return adaptiveCard(body, {
    summary: suggestion ? `Unknown command. Did you mean "${suggestion.name}"? Type help for all commands.` : 'Unknown command. Type help for all commands.',
    actions,
  });
}

export function tooLongCard(length: number, max: number): CardReply {
  return adaptiveCard(
    [title('That message is too long for a command'), text(`Commands are short (at most ${max} characters; this one had ${length}). Type **help** to see them.`)],
    { summary: 'That message is too long for a command. Type help to see the commands.' },
  );
}
