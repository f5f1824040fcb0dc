// Every feature billbridge ships and its commands, listed once: the router, help card, parser and manifest read them.
import { CommandRegistry } from './registry.js';
import type { Command, CommandDefinition, CommandInfo } from './types.js';
import { helpCommand, type HelpDeps } from './admin/help.js';
import { linkCommand, unlinkCommand } from './admin/link.js';
import { statusCommand } from './admin/status.js';
import { payablesCommands } from './payables/commands.js';
import { receivablesCommands } from './receivables/commands.js';
import { partiesCommands } from './parties/commands.js';
import { paymentsCommand } from './payments/commands.js';
import { spendCommand } from './spend/commands.js';
import { notificationsCommands } from './notifications/commands.js';
import { approvalsCommand, approvalsDigestCommand, connectCommand, disconnectCommand } from './approvals/commands.js';
import { networkCommand } from './network/commands.js';

/** Each feature's commands, in registration order (which breaks ties of rank). */
const FEATURES = {
  help: [helpCommand],
  link: [linkCommand, unlinkCommand],
  status: [statusCommand],
  payables: payablesCommands,
  receivables: receivablesCommands,
  parties: partiesCommands,
  network: [networkCommand],
  payments: [paymentsCommand],
  spend: [spendCommand],
  notifications: notificationsCommands,
  approvals: [approvalsCommand, approvalsDigestCommand, connectCommand, disconnectCommand],
};

/** The parts each feature's commands run with, as its commands declare them: help's with the registry it belongs to. */
type BoundDeps = { [K in keyof typeof FEATURES]: (typeof FEATURES)[K] extends ReadonlyArray<Command<infer D>> ? D : never };

/** The parts each feature declares, wired in app.ts. `help` gets the registry it belongs to from createRegistry. */
export type FeatureDeps = Omit<BoundDeps, 'help'> & { help: Omit<HelpDeps, 'registry'> };

/** The registry the bot runs: every feature's commands bound to the parts it declared. */
export function createRegistry(deps: FeatureDeps): CommandRegistry {
  const registry = new CommandRegistry();
  const bound: BoundDeps = { ...deps, help: { ...deps.help, registry } };
  // BoundDeps[K] is read off FEATURES[K]'s commands; TypeScript cannot relate the two through K by itself.
  const bind = <K extends keyof BoundDeps>(feature: K, parts: BoundDeps[K]): CommandDefinition[] =>
    (FEATURES[feature] as ReadonlyArray<Command<BoundDeps[K]>>).map((command) => ({ ...command, run: (ctx) => command.run(ctx, parts) }));
  return registry.register(...(Object.keys(FEATURES) as Array<keyof BoundDeps>).flatMap((feature) => bind(feature, bound[feature])));
}

/** The same commands without their parts, for what only reads names and usage: the Teams manifest, the card gallery. */
export function commandCatalogue(): CommandRegistry<CommandInfo> {
  return new CommandRegistry<CommandInfo>().register(...Object.values(FEATURES).flat());
}
