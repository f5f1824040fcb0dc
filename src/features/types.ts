// What a command is and what a turn gives it (its feature's parts come as `deps`); no botbuilder types leak into handlers.
import type { Logger } from '../infra/log.js';
import type { CardReply } from '../cards/card.js';

export type ConversationKind = 'channel' | 'groupChat' | 'personal';

/** Where a turn happens, read from the activity (never from text the person typed). */
export interface ConversationScope {
  kind: ConversationKind;
  tenantId: string | undefined;
  /** Teams thread id of the team (19:...@thread.tacv2), channels only. */
  teamId: string | undefined;
  /** Entra group id of the team, when the activity carries it (install events). */
  aadGroupId: string | undefined;
  /** Teams channel id, channels only. */
  channelId: string | undefined;
  conversationId: string;
  serviceUrl: string;
}

export interface Caller {
  /** Bot Framework user id (29:...). */
  id: string;
  aadObjectId: string | undefined;
  name: string | undefined;
}

/** A parsed command line: the registry name, the arguments after it (original case) split on white space and as typed. */
export interface CommandInput {
  name: string;
  args: string[];
  argText: string;
  /** Zero-based page of a long list (Show more). */
  page: number;
  /** True when a card's Refresh button asked for it: answer from BILL, not from a cached answer. */
  refresh?: boolean;
}

export interface CommandContext {
  input: CommandInput;
  scope: ConversationScope;
  caller: Caller;
  /** BILL organisation this conversation is bound to, resolved from tenant and team ids; undefined when unbound. */
  orgId: string | undefined;
  correlationId: string;
  now: Date;
  /** The conversation's locale (the activity's, when valid), else BOT_LOCALE: numbers and dates on cards. */
  locale?: string;
  log: Logger;
}

/** What a command is, apart from running it: the registry, help card, parser and manifest read only this. */
export interface CommandInfo {
  /** One or more words, lower case: "help", "bills due". */
  name: string;
  /** How to type it: "bills due [days]". */
  usage: string;
  description: string;
  examples: string[];
  /** Where it may be used; default everywhere. */
  scopes?: ConversationKind[];
  /** True when it calls BILL or another upstream (a typing indicator goes first). */
  upstream: boolean;
  /** Ranking for lists with limited room (Teams manifest commandLists, welcome card); lower first. */
  rank?: number;
  /** True when the arguments carry a secret (e.g. `connect <token>`): the audit trail records the command without them. */
  secretArgs?: boolean;
}

/** A feature's command: it runs with the parts its feature declares (`deps`), built once in app.ts. */
export interface Command<Deps> extends CommandInfo {
  run(ctx: CommandContext, deps: Deps): Promise<CardReply>;
}

/** A command bound to its feature's parts: what the registry holds and the dispatcher runs. */
export type CommandDefinition = Command<void>;

/** The conversation a message, click or card belongs to: a channel thread counts as its channel ("19:x;messageid=1" -> "19:x"). */
export function conversationOf(conversationId: string): string {
  return conversationId.split(';')[0] ?? conversationId;
}
