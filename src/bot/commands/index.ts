// Every command billbridge ships, registered once; the router, help card and manifest read this registry.
import { CommandRegistry } from './registry.js';
import { helpCommand } from './help.js';
import { linkCommand, unlinkCommand } from './link.js';
import { statusCommand } from './status.js';
import { billCommand, billsDueCommand, billsOverdueCommand } from './bills.js';
import { invoiceCommand, invoicesOverdueCommand } from './invoices.js';
import { customerCommand, vendorCommand } from './parties.js';
import { paymentsCommand } from './payments.js';
import { spendCommand } from './spend.js';
import { NOTIFY_COMMANDS } from './notify.js';
import { connectCommand, disconnectCommand } from '../../features/approvals/connect.js';
import { approvalsCommand, approvalsDigestCommand } from '../../features/approvals/commands.js';

export function createRegistry(): CommandRegistry {
  return new CommandRegistry()
    .register(helpCommand)
    .register(linkCommand, unlinkCommand)
    .register(statusCommand)
    .register(billsDueCommand, billsOverdueCommand, billCommand, invoiceCommand, invoicesOverdueCommand, vendorCommand, customerCommand, paymentsCommand, spendCommand)
    .register(...NOTIFY_COMMANDS)
    .register(approvalsCommand, approvalsDigestCommand, connectCommand, disconnectCommand);
}
