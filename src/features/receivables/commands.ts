// `invoice <number>` and `invoices overdue`: accounts receivable from the org's mirror of invoices, since BILL cannot
// filter invoices by invoiceNumber, status or dueDate.
import { InputError } from '../../errors.js';
import { shorten } from '../../cards/card.js';
import { indexBuildingCard } from '../../cards/list.js';
import { invoiceCard, invoicesOverdueCard, isOverdue } from './cards.js';
import type { Mirror } from '../../mirror/mirror.js';
import type { Command, CommandContext } from '../types.js';
import { boundOrg, listContext, mirrorRead, noArguments, resolveParties, numberArgument, todayOf, type WithSettings } from '../finance.js';

/** What accounts receivable reads: the org's mirror of invoices and customer names (no other BILL call). */
export interface ReceivablesDeps extends WithSettings {
  mirror: Pick<Mirror, 'rows' | 'lookup' | 'names'>;
}

const INVOICE_HINT =
  "Type **invoice** and the invoice number, e.g. **invoice 1042**. To see a customer's open invoices, type **customer {name}**.";

export const invoiceCommand: Command<ReceivablesDeps> = {
  name: 'invoice',
  usage: 'invoice <number>',
  description: 'An invoice you sent: customer, dates, total, amount due, status and payments received',
  examples: ['invoice 1042'],
  upstream: true,
  rank: 20,
  async run(ctx, deps) {
    const typed = numberArgument(ctx, 'invoice', INVOICE_HINT);
    const orgId = boundOrg(ctx);
    const command = `invoice ${typed}`;
    const result = await deps.mirror.lookup(orgId, 'invoice', typed, mirrorRead(ctx, deps, 'invoice'));
    if ('building' in result)
      return indexBuildingCard({ ...listContext(ctx, deps, command, ctx.now.getTime()), what: 'invoices', indexed: result.building });
    // Numbers are unique in BILL (a duplicate is refused); if history left two, the live one wins.
    const [invoice] = [...result.rows].sort(
      (a, b) => Number(a.archived) - Number(b.archived) || b.updatedTime.localeCompare(a.updatedTime),
    );
    if (!invoice)
      throw new InputError(
        `No invoice ${shorten(typed)}`,
        "Check the number on the invoice. To see a customer's open invoices, type **customer {name}**.",
        command,
      );
    const customers = await resolveParties(deps, orgId, 'customer', [invoice.customerId]);
    return invoiceCard({
      ...listContext(ctx, deps, command, result.refreshedAt),
      invoice,
      today: todayOf(ctx, deps),
      customerOf: (id) => customers.get(id),
    });
  },
};

/** What `invoices overdue` shows (the card and the dashboard tab), or how many are indexed while the mirror is first built. */
export async function overdueInvoices(ctx: CommandContext, deps: ReceivablesDeps) {
  const orgId = boundOrg(ctx);
  const today = todayOf(ctx, deps);
  const answer = await deps.mirror.rows(orgId, 'invoice', { ...mirrorRead(ctx, deps, 'invoice'), where: (i) => isOverdue(i, today) });
  if ('building' in answer) return answer;
  const customers = await resolveParties(deps, orgId, 'customer', new Set(answer.rows.map((i) => i.customerId)));
  return { today, invoices: answer.rows, asOf: answer.refreshedAt, customerOf: (id: string) => customers.get(id) };
}

export const invoicesOverdueCommand: Command<ReceivablesDeps> = {
  name: 'invoices overdue',
  usage: 'invoices overdue',
  description: 'Overdue receivables by customer, aged 1–30, 31–60, 61–90 and 90+ days, with totals',
  examples: ['invoices overdue'],
  upstream: true,
  rank: 40,
  async run(ctx, deps) {
    noArguments(ctx, 'Type **invoices overdue** on its own; for one customer type **customer {name}**.');
    const found = await overdueInvoices(ctx, deps);
    const command = 'invoices overdue';
    if ('building' in found)
      return indexBuildingCard({ ...listContext(ctx, deps, command, ctx.now.getTime()), what: 'invoices', indexed: found.building });
    return invoicesOverdueCard({ ...listContext(ctx, deps, command, found.asOf), ...found });
  },
};

export const receivablesCommands = [invoiceCommand, invoicesOverdueCommand];
