// `help`: every command usable here, with usage and an example.
import { helpCard } from '../../cards/help.js';
import type { CardReply } from '../../cards/card.js';
import type { CommandRegistry } from '../registry.js';
import type { Command, CommandInfo } from '../types.js';

export interface HelpDeps {
  registry: Pick<CommandRegistry<CommandInfo>, 'forScope'>;
  note: string | undefined;
  version: string;
}

/** Freezes a card and everything in it: a card handed to many turns must never be changed by one of them. */
function frozen<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) frozen(v);
  }
  return value;
}

/**
 * The help card depends only on the commands usable here (the registry hands out one list per kind of conversation
 * until a command is registered), the kind of conversation (its wording), the demo note and the version: it is built
 * once per combination, not per turn. Built per turn, the overhead bench's `help` read 1.17-1.33x the echo bot against
 * 1.08-1.16x (`npm run bench -- --only overhead`, three runs each, 2026-11-27).
 */
const built = new Map<string, { commands: readonly CommandInfo[]; card: CardReply }>();

export const helpCommand: Command<HelpDeps> = {
  name: 'help',
  usage: 'help',
  description: 'List every command with an example',
  examples: ['help'],
  upstream: false,
  rank: 0,
  run(ctx, { registry, note, version }) {
    const kind = ctx.scope.kind;
    const commands = registry.forScope(kind);
    const key = `${kind}\n${note ?? ''}\n${version}`;
    let made = built.get(key);
    if (made?.commands !== commands) built.set(key, (made = { commands, card: frozen(helpCard(commands, { note, version, kind })) }));
    return Promise.resolve(made.card);
  },
};
