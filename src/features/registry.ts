// The one list of commands: it feeds the router, the help card and the Teams manifest's commandLists.
import { kept } from '../infra/bounded.js';
import { parseCommandLine, type ParseResult } from './parse.js';
import type { CommandDefinition, CommandInfo, ConversationKind } from './types.js';

/** Holds bound commands (CommandDefinition) for the bot, or their static info (CommandInfo) for the manifest. */
export class CommandRegistry<C extends CommandInfo = CommandDefinition> {
  private readonly commands = new Map<string, C>();
  /** list() and forScope() answers, made once: the help command keeps its cards by the list's identity. */
  private ranked: readonly C[] = [];
  private readonly byScope = new Map<string, readonly C[]>();
  /** The names parse() matches, listed once (it runs on every turn). */
  private names: readonly string[] = [];

  register(...defs: C[]): this {
    for (const def of defs) {
      const name = def.name.trim().toLowerCase();
      if (name !== def.name || !/^[a-z]+( [a-z]+)*$/.test(name)) {
        throw new Error(`Command name "${def.name}" must be lower-case words separated by single spaces`);
      }
      if (this.commands.has(name)) throw new Error(`Command "${name}" is registered twice`);
      this.commands.set(name, def);
    }
    // Array sort is stable: registration order breaks ties of rank.
    this.ranked = [...this.commands.values()].sort((a, b) => (a.rank ?? 100) - (b.rank ?? 100));
    this.names = [...this.commands.keys()];
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
    return kept(this.byScope, kind, () => this.ranked.filter((def) => !def.scopes || def.scopes.includes(kind)));
  }

  parse(text: string): ParseResult {
    return parseCommandLine(text, this.names);
  }
}
