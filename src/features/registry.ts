// The one list of commands: it feeds the router, the help card and the Teams manifest's commandLists.
import { parseCommandLine, type CommandName, type ParseResult } from './parse.js';
import type { CommandDefinition, CommandInfo, ConversationKind } from './types.js';

/** Holds bound commands (CommandDefinition) for the bot, or their static info (CommandInfo) for the manifest. */
export class CommandRegistry<C extends CommandInfo = CommandDefinition> {
  private readonly commands = new Map<string, C>();
  private nameIndex: CommandName[] = [];
  /** list() and forScope() answers, made once: the help command keeps its cards by the list's identity. */
  private ranked: readonly C[] = [];
  private readonly byScope = new Map<ConversationKind, readonly C[]>();

  register(...defs: C[]): this {
    for (const def of defs) {
      const name = def.name.trim().toLowerCase();
      if (name !== def.name || !/^[a-z]+( [a-z]+)*$/.test(name)) {
        throw new Error(`Command name "${def.name}" must be lower-case words separated by single spaces`);
      }
      if (this.commands.has(name)) throw new Error(`Command "${name}" is registered twice`);
      this.commands.set(name, def);
    }
    this.nameIndex = [...this.commands.keys()].map((n) => ({ name: n, words: n.split(' ') }));
    // Array sort is stable: registration order breaks ties of rank.
    this.ranked = [...this.commands.values()].sort((a, b) => (a.rank ?? 100) - (b.rank ?? 100));
    this.byScope.clear();
    return this;
  }

  get(name: string): C | undefined {
    return this.commands.get(name);
  }

  /** All commands, most useful first (rank, then registration order). */
  list(): readonly C[] {
    return this.ranked;
  }

  forScope(kind: ConversationKind): readonly C[] {
    let commands = this.byScope.get(kind);
    if (!commands) this.byScope.set(kind, (commands = this.ranked.filter((def) => !def.scopes || def.scopes.includes(kind))));
    return commands;
  }

  parse(text: string): ParseResult {
    return parseCommandLine(text, this.nameIndex);
  }
}
