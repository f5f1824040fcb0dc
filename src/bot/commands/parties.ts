// `vendor <name>` / `customer <name>`: prefix search (`name:sw:`, BILL documents eq and sw on vendor and customer
// names), the best matches with their open bills or invoices and balance; several matches -> a card to pick one.
// The typed name goes into the filter through BillFilter, which refuses (FilterValueError -> a card) anything that
// could change the filter's meaning; nothing is sent then.
import { InputError } from '../../errors.js';
import { BillFilter } from '../../bill/filters.js';
import type { Customer, Invoice, Vendor } from '../../bill/types.js';
import { queryKey } from '../../cache/index.js';
import { amountDue } from '../cards/bills.js';
import { sum } from '../cards/format.js';
import { customerCard, partyMatchesCard, vendorCard, type PartyKind, type PartyMatch } from '../cards/parties.js';
import { unpaidBills } from './bills.js';
import type { CommandContext, CommandDefinition } from './types.js';
import { boundOrg, cachedAnswer, demoNote, formatOf, orgClient, partiesOf, shorten, textArgument, todayOf } from './finance.js';

/** Matches read per search; more are reported as "100+". */
export const MAX_MATCHES = 100;

interface Search<T> {
  items: T[];
  more: boolean;
}

/** Exact name first (any case), then shorter names, then alphabetical: "Acme" before "Acme Office Supplies". */
export function rankMatches<T extends { name: string; id: string }>(typed: string, items: T[]): T[] {
  const t = typed.trim().toLocaleLowerCase();
  return [...items].sort((a, b) => {
    const ea = (a.name ?? '').trim().toLocaleLowerCase() === t ? 0 : 1;
    const eb = (b.name ?? '').trim().toLocaleLowerCase() === t ? 0 : 1;
    return ea - eb || (a.name ?? '').length - (b.name ?? '').length || (a.name ?? '').localeCompare(b.name ?? '') || a.id.localeCompare(b.id);
  });
}

function parseName(ctx: CommandContext, kind: PartyKind): string {
  const typed = textArgument(ctx);
  const example = kind === 'vendor' ? 'vendor Acme' : 'customer Contoso';
  if (typed === '') throw new InputError(`Which ${kind}?`, `Type **${kind}** and the first letters of the name, e.g. **${example}**.`);
  return typed;
}

async function search<T extends Vendor | Customer>(ctx: CommandContext, orgId: string, kind: PartyKind, typed: string): Promise<{ search: Search<T>; fetchedAt: number }> {
  // Built before the cache is consulted, so a refused name never reaches BILL (or the cache).
  new BillFilter().sw('name', typed);
  const got = await cachedAnswer(
    ctx,
    orgId,
    'list',
    queryKey(`${kind}s.sw`, { prefix: typed }),
    async (): Promise<Search<T>> => {
      const org = orgClient(ctx, orgId);
      const list = kind === 'vendor' ? org.vendors.list({ nameStartsWith: typed, archived: false, pageSize: MAX_MATCHES, maxPages: 1 }) : org.customers.list({ nameStartsWith: typed, archived: false, pageSize: MAX_MATCHES, maxPages: 1 });
      const { items, truncated } = await list.all();
      return { items: items as T[], more: truncated };
    },
    [kind],
  );
  partiesOf(ctx).remember(orgId, kind, got.value.items);
  return { search: got.value, fetchedAt: got.fetchedAt };
}

function pick<T extends { name: string; id: string }>(typed: string, items: T[]): { one: T | undefined; ranked: T[] } {
  const ranked = rankMatches(typed, items);
  const exact = ranked[0] && ranked[0].name.trim().toLocaleLowerCase() === typed.trim().toLocaleLowerCase();
  return { one: ranked.length === 1 || exact ? ranked[0] : undefined, ranked };
}

function noMatch(kind: PartyKind, typed: string): InputError {
  return new InputError(`No ${kind} starts with "${shorten(typed)}"`, `Check the spelling, or type fewer letters of the name, e.g. **${kind} ${shorten(typed.slice(0, 3), 20)}**.`, `${kind} ${typed}`);
}

export const vendorCommand: CommandDefinition = {
  name: 'vendor',
  usage: 'vendor <name>',
  description: 'Vendors whose name starts with what you type, with open bills and balance',
  examples: ['vendor Acme'],
  upstream: true,
  rank: 30,
  async run(ctx) {
    const typed = parseName(ctx, 'vendor');
    const orgId = boundOrg(ctx);
    const fmt = formatOf(ctx);
    const today = todayOf(ctx);
    const note = demoNote(ctx);
    const found = await search<Vendor>(ctx, orgId, 'vendor', typed);
    const { one, ranked } = pick(typed, found.search.items);
    if (ranked.length === 0) throw noMatch('vendor', typed);
    const ids = one ? [one.id] : ranked.map((v) => v.id);
    const open = await cachedAnswer(ctx, orgId, 'list', queryKey('bills.open', { vendors: ids.join(',') }), () => unpaidBills(ctx, orgId, {}, ids.length === 1 ? ids[0] : ids), ['bill', 'vendor']);
    const asOf = Math.min(found.fetchedAt, open.fetchedAt);
    if (one) {
      return vendorCard({ vendor: one, openBills: open.value.items, others: ranked.length - 1 + (found.search.more ? 1 : 0), typed, today, fmt, asOf, page: ctx.input.page, command: `vendor ${typed}`, note });
    }
    const matches: PartyMatch[] = ranked.map((v) => {
      const bills = open.value.items.filter((b) => b.vendorId === v.id);
      return { party: v, open: bills.length, openAmount: sum(bills.map(amountDue)) };
    });
    return partyMatchesCard({ kind: 'vendor', typed, matches, more: found.search.more, today, fmt, asOf, page: ctx.input.page, command: `vendor ${typed}`, note });
  },
};

/** Unpaid, non-archived invoices of these customers: BILL filters customerId and archived; paid ones are dropped here. */
async function openInvoices(ctx: CommandContext, orgId: string, customerIds: string[]): Promise<Invoice[]> {
  const { items } = await orgClient(ctx, orgId)
    .invoices.list({ customerId: customerIds.length === 1 ? customerIds[0] : customerIds, archived: false, sort: [{ field: 'dueDate', order: 'asc' }] })
    .all();
  return items.filter((i) => i.status !== 'PAID' && (i.dueAmount ?? 0) > 0).map(({ invoiceLineItems: _dropped, ...rest }) => rest as Invoice);
}

export const customerCommand: CommandDefinition = {
  name: 'customer',
  usage: 'customer <name>',
  description: 'Customers whose name starts with what you type, with open invoices and balance',
  examples: ['customer Contoso'],
  upstream: true,
  rank: 50,
  async run(ctx) {
    const typed = parseName(ctx, 'customer');
    const orgId = boundOrg(ctx);
    const fmt = formatOf(ctx);
    const today = todayOf(ctx);
    const note = demoNote(ctx);
    const found = await search<Customer>(ctx, orgId, 'customer', typed);
    const { one, ranked } = pick(typed, found.search.items);
    if (ranked.length === 0) throw noMatch('customer', typed);
    const ids = one ? [one.id] : ranked.map((c) => c.id);
    const open = await cachedAnswer(ctx, orgId, 'list', queryKey('invoices.open', { customers: ids.join(',') }), () => openInvoices(ctx, orgId, ids), ['invoice', 'customer']);
    const asOf = Math.min(found.fetchedAt, open.fetchedAt);
    if (one) {
      return customerCard({ customer: one, openInvoices: open.value, others: ranked.length - 1 + (found.search.more ? 1 : 0), typed, today, fmt, asOf, page: ctx.input.page, command: `customer ${typed}`, note });
    }
    const matches: PartyMatch[] = ranked.map((c) => {
      const invoices = open.value.filter((i) => i.customerId === c.id);
      return { party: c, open: invoices.length, openAmount: sum(invoices.map((i) => i.dueAmount)) };
    });
    return partyMatchesCard({ kind: 'customer', typed, matches, more: found.search.more, today, fmt, asOf, page: ctx.input.page, command: `customer ${typed}`, note });
  },
};
