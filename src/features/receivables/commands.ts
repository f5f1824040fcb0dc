// `invoice <number>` and `invoices overdue`: accounts receivable from the org's mirror of invoices.
//
// BILL cannot filter invoices by invoiceNumber, status or dueDate (the filterable fields are id, archived, customerId,
// createdTime, updatedTime), so both answers come from the org's mirror of invoices (src/mirror), whose records
// carry what the cards show: a warm answer costs no call, or the one incremental refresh per interval the org's
// commands share, whatever the organisation's size.
import { InputError } from '../../errors.js';
import { indexBuildingCard, invoiceCard, invoicesOverdueCard, isOverdue } from './cards.js';
import type { CommandDefinition } from '../types.js';
import { boundOrg, demoNote, formatOf, mirrorRead, noArguments, resolveParties, shorten, textArgument, todayOf } from '../finance.js';

const INVOICE_HINT = 'Type **invoice** and the invoice number, e.g. **invoice 1042**. To see a customer\'s open invoices, type **customer {name}**.';

export const invoiceCommand: CommandDefinition = {
  name: 'invoice',
  usage: 'invoice <number>',
  description: 'An invoice you sent: customer, dates, total, amount due, status and payments received',
  examples: ['invoice 1042'],
  upstream: true,
  rank: 20,
  async run(ctx) {
    const typed = textArgument(ctx);
    if (typed === '') throw new InputError('Which invoice?', INVOICE_HINT);
    if (typed.length > 100) throw new InputError('That is too long for an invoice number', INVOICE_HINT, `invoice ${shorten(typed)}`);
    const orgId = boundOrg(ctx);
    const fmt = formatOf(ctx);
    const note = demoNote(ctx);
    const result = await ctx.services.mirror.lookup(orgId, 'invoice', typed, mirrorRead(ctx, 'invoice'));
    if (result.state === 'building') return indexBuildingCard({ what: 'invoices', indexed: result.indexed, command: `invoice ${typed}`, fmt, asOf: ctx.now.getTime(), note });
    if (result.state === 'missing') throw new InputError(`No invoice ${shorten(typed)}`, 'Check the number on the invoice. To see a customer\'s open invoices, type **customer {name}**.', `invoice ${typed}`);
    // Numbers are unique in BILL (a duplicate is refused); if history left two, the live one wins.
    const invoice = [...result.rows].sort((a, b) => Number(a.archived) - Number(b.archived) || b.updatedTime.localeCompare(a.updatedTime))[0]!;
    const asOf = result.refreshedAt;
    const customers = await resolveParties(ctx, orgId, 'customer', [invoice.customerId]);
    return invoiceCard({
      invoice,
      command: `invoice ${typed}`,
      today: todayOf(ctx),
      fmt,
      asOf,
      customerOf: (id) => customers.get(id),
      note,
    });
  },
};

export const invoicesOverdueCommand: CommandDefinition = {
  name: 'invoices overdue',
  usage: 'invoices overdue',
  description: 'Overdue receivables by customer, aged 1–30, 31–60, 61–90 and 90+ days, with totals',
  examples: ['invoices overdue'],
  upstream: true,
  rank: 40,
  async run(ctx) {
    noArguments(ctx, 'Type **invoices overdue** on its own; for one customer type **customer {name}**.');
    const orgId = boundOrg(ctx);
    const fmt = formatOf(ctx);
    const note = demoNote(ctx);
    const today = todayOf(ctx);
    const answer = await ctx.services.mirror.rows(orgId, 'invoice', { ...mirrorRead(ctx, 'invoice'), where: (i) => isOverdue(i, today) });
    if ('building' in answer) return indexBuildingCard({ what: 'invoices', indexed: answer.building, command: 'invoices overdue', fmt, asOf: ctx.now.getTime(), note });
    const overdue = answer.rows;
    const customers = await resolveParties(ctx, orgId, 'customer', overdue.map((i) => i.customerId));
    return invoicesOverdueCard({
      invoices: overdue,
      today,
      fmt,
      asOf: answer.refreshedAt,
      customerOf: (id) => customers.get(id),
      page: ctx.input.page,
      command: 'invoices overdue',
      note,
    });
  },
};
