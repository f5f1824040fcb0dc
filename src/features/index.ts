// Every command billbridge ships, registered once; the router, help card and manifest read this registry.
import { CommandRegistry } from './registry.js';
import { helpCommand } from './admin/help.js';
import { linkCommand, unlinkCommand } from './admin/link.js';
import { statusCommand } from './admin/status.js';
import { billCommand, billsDueCommand, billsOverdueCommand } from './payables/commands.js';
import { invoiceCommand, invoicesOverdueCommand } from './receivables/commands.js';
import { customerCommand, vendorCommand } from './parties/commands.js';
import { paymentsCommand } from './payments/commands.js';
import { spendCommand } from './spend/commands.js';
import { NOTIFY_COMMANDS } from './notifications/commands.js';
import { connectCommand, disconnectCommand } from './approvals/connect.js';
import { approvalsCommand, approvalsDigestCommand } from './approvals/commands.js';

export function createRegistry(): CommandRegistry {
  return new CommandRegistry()
    .register(helpCommand)
    .register(linkCommand, unlinkCommand)
    .register(statusCommand)
    .register(billsDueCommand, billsOverdueCommand, billCommand, invoiceCommand, invoicesOverdueCommand, vendorCommand, customerCommand, paymentsCommand, spendCommand)
    .register(...NOTIFY_COMMANDS)
    .register(approvalsCommand, approvalsDigestCommand, connectCommand, disconnectCommand);
}
