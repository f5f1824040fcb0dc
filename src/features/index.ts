// Every feature billbridge ships and its commands, listed once: the router, help card, parser and manifest read them.
import { CommandRegistry } from './registry.js';
import { bindCommands, type Command, type CommandInfo } from './types.js';
import { helpCommand, type HelpDeps } from './admin/help.js';
import { linkCommand, unlinkCommand, type LinkDeps } from './admin/link.js';
import { statusCommand, type StatusDeps } from './admin/status.js';
import { payablesCommands, type PayablesDeps } from './payables/commands.js';
import { receivablesCommands, type ReceivablesDeps } from './receivables/commands.js';
import { partiesCommands, type PartiesDeps } from './parties/commands.js';
import { paymentsCommand, type PaymentsDeps } from './payments/commands.js';
import { spendCommand, type SpendDeps } from './spend/commands.js';
import { notificationsCommands, type NotificationsDeps } from './notifications/commands.js';
import { approvalsCommand, approvalsDigestCommand, connectCommand, disconnectCommand, type ApprovalsDeps } from './approvals/commands.js';
import { networkCommand, type NetworkDeps } from './network/commands.js';

/** The parts each feature declares, wired in app.ts. `help` gets the registry it belongs to from createRegistry. */
export interface FeatureDeps {
  help: Omit<HelpDeps, 'registry'>;
  link: LinkDeps;
  status: StatusDeps;
  payables: PayablesDeps;
  receivables: ReceivablesDeps;
  parties: PartiesDeps;
  network: NetworkDeps;
  payments: PaymentsDeps;
  spend: SpendDeps;
  notifications: NotificationsDeps;
  approvals: ApprovalsDeps;
}

/** The parts each feature's commands run with: help's with the registry it belongs to. */
type BoundDeps = Omit<FeatureDeps, 'help'> & { help: HelpDeps };

/** Each feature's commands, in registration order (which breaks ties of rank). */
const FEATURES: { [K in keyof BoundDeps]: ReadonlyArray<Command<BoundDeps[K]>> } = {
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

/** The registry the bot runs: every feature's commands bound to the parts it declared. */
export function createRegistry(deps: FeatureDeps): CommandRegistry {
  const registry = new CommandRegistry();
  const bound: BoundDeps = { ...deps, help: { ...deps.help, registry } };
  // Generic, so each feature's commands are checked against that feature's parts.
  const bind = <K extends keyof BoundDeps>(feature: K, parts: BoundDeps[K]) => bindCommands(FEATURES[feature], parts);
  return registry.register(...(Object.keys(FEATURES) as Array<keyof BoundDeps>).flatMap((feature) => bind(feature, bound[feature])));
}

/** The same commands without their parts, for what only reads names and usage: the Teams manifest, the card gallery. */
export function commandCatalogue(): CommandRegistry<CommandInfo> {
  return new CommandRegistry<CommandInfo>().register(...Object.values(FEATURES).flat());
}
