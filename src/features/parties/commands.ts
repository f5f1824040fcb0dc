// `vendor <name>` / `customer <name>`: prefix search (`name:sw:`, documented on vendor and customer names), the best
// matches with their open bills or invoices and balance; several matches -> a card to pick one. Open items come from the
// org's mirror once built, else from a list BILL filters by vendorId / customerId. The typed name reaches the filter through
// BillFilter, which refuses (FilterValueError -> a card, nothing sent) anything that could change the filter's meaning.
import { InputError } from '../../errors.js';
import { BillFilter } from '../../bill/filters.js';
import type { Bill, Customer, Invoice, Vendor } from '../../bill/types.js';
import { answerKey } from '../../mirror/answers.js';
import { amountDue } from '../payables/cards.js';
import { isOwed } from '../receivables/cards.js';
import { escapeMarkdown, shorten, type CardReply } from '../../cards/card.js';
import { sum } from '../../cards/format.js';
import { customerCard, partyMatchesCard, vendorCard, type OneMatchBase } from './cards.js';
import { openBills, unpaidBills, withVendorNames, type PayablesDeps } from '../payables/commands.js';
import type { Mirror } from '../../mirror/mirror.js';
import type { PartyKind } from '../../mirror/records.js';
import type { Command, CommandContext } from '../types.js';
import { invitable } from '../network/cards.js';
import { customerStatusKey, type NetworkInvites } from '../network/invite.js';
import { boundOrg, cachedAnswer, listContext, mirrorRead, orgClient, findById, resolveParties, textArgument, todayOf } from '../finance.js';

/** What `vendor` and `customer` read: the org's mirror of parties, bills and invoices; BILL while it is not built. */
export interface PartiesDeps extends Pick<PayablesDeps, 'bill' | 'settings'> {
  mirror: Pick<Mirror, 'search' | 'confirm' | 'rows' | 'byId' | 'prepare' | 'names' | 'answers' | 'dropAnswer'>;
  /** The "Invite to the BILL network" button; undefined without SECRETS_KEY (invitations run as the person). */
  invites: Pick<NetworkInvites, 'button'> | undefined;
}

/** BILL vendor ids start with 009, customer ids with 0cu. */
const PARTY_ID: Record<PartyKind, RegExp> = { vendor: /^009[A-Za-z0-9]{5,61}$/, customer: /^0cu[A-Za-z0-9]{5,61}$/ };

/** Matches read per search; more are reported as "100+". */
const MAX_MATCHES = 100;

/** A name as a command line reads it, in any case: a line loses trailing punctuation and doubled spaces (parse.ts), so
 * "vendor Zeta Inc." (typed, or a button's) asks for "Zeta Inc" and must still name "Zeta Inc." exactly. */
const asTyped = (name: string) =>
  name
    .replace(/\s+/g, ' ')
    .replace(/[\s.!?,;:…]+$/u, '')
    .trim()
    .toLocaleLowerCase();

/** Exact name (in any case) first, then shorter names, then alphabetical: "Acme" before "Acme Office Supplies". */
export function rankMatches<T extends { name: string; id: string }>(typed: string, items: T[]): T[] {
  const wanted = asTyped(typed);
  const inexact = (p: T) => (asTyped(p.name) === wanted ? 0 : 1);
  return [...items].sort(
    (a, b) => inexact(a) - inexact(b) || a.name.length - b.name.length || a.name.localeCompare(b.name) || a.id.localeCompare(b.id),
  );
}

/** Vendors or customers whose name starts with `typed`: from the org's mirror when built, else one name search at BILL
 * (kept like a list) while it builds. `fromMirror`: balances that may have moved are confirmed before they are shown. */
async function search(ctx: CommandContext, deps: PartiesDeps, orgId: string, kind: PartyKind, typed: string) {
  // A BILL id (what buttons, search and look-up run for a name BILL's filter cannot carry, see partyArgument).
  const byId = PARTY_ID[kind].test(typed) ? await findById(ctx, deps, kind, typed) : undefined;
  if (byId) return { items: [byId.record], more: false, fetchedAt: byId.refreshedAt, fromMirror: byId.fromMirror };
  // Built before the mirror or a kept answer is consulted, so a refused name never reaches BILL.
  new BillFilter().add('name', 'sw', typed);
  const warm = await deps.mirror.search(orgId, kind, typed, mirrorRead(ctx, deps, kind));
  if (!('building' in warm)) {
    return { items: warm.rows.slice(0, MAX_MATCHES), more: warm.rows.length > MAX_MATCHES, fetchedAt: warm.refreshedAt, fromMirror: true };
  }
  deps.mirror.prepare(orgId, kind);
  const got = await cachedAnswer(ctx, deps, answerKey(`${kind}s.sw`, { prefix: typed }), [kind], async () => {
    const org = orgClient(deps, orgId);
    const { items, truncated } = await (kind === 'vendor' ? org.vendors : org.customers)
      .list({ nameStartsWith: typed, archived: false, pageSize: MAX_MATCHES, maxPages: 1 })
      .all();
    return { items, more: truncated };
  });
  return { ...got.value, fetchedAt: got.fetchedAt, fromMirror: false };
}

/** `vendor` or `customer`: besides its command line, the open items shown with a match, and the card of one match. */
interface PartyCommand<P extends Vendor | Customer, O> extends Command<PartiesDeps> {
  name: PartyKind;
  examples: [string];
  /** These parties' open bills or invoices: from the mirror, or (not built yet) from BILL. */
  openOf(ctx: CommandContext, deps: PartiesDeps, orgId: string, ids: string[]): Promise<{ items: O[]; asOf: number }>;
  partyIdOf(item: O): string;
  amountOf: (item: O) => number;
  card(party: P, open: O[], input: OneMatchBase): CardReply;
  /** The party's BILL network status: a vendor's own field; a customer's connection request, read apart (kept a while). */
  networkStatus(deps: PartiesDeps, orgId: string, party: P): Promise<string | undefined>;
}

/** One match's card (an exact name, or the only match) or the matches to pick from. Open items are read before balances
 * are confirmed: refreshing them is what tells which balances may have moved. */
async function runParty<P extends Vendor | Customer, O>(ctx: CommandContext, deps: PartiesDeps, path: PartyCommand<P, O>) {
  const kind = path.name;
  const typed = textArgument(ctx);
  if (typed === '')
    throw new InputError(`Which ${kind}?`, `Type **${kind}** and the first letters of the name, e.g. **${path.examples[0]}**.`);
  const orgId = boundOrg(ctx);
  const found = await search(ctx, deps, orgId, kind, typed);
  // The path's kind is the kind searched for.
  const ranked = rankMatches(typed, found.items as P[]);
  const [first] = ranked;
  if (!first) {
    throw new InputError(
      `No ${kind} starts with "${shorten(typed)}"`,
      `Check the spelling, or type fewer letters of the name, e.g. **${kind} ${escapeMarkdown(shorten(typed.slice(0, 3), 20))}**.`,
      `${kind} ${typed}`,
    );
  }
  const one = ranked.length === 1 || asTyped(first.name) === asTyped(typed);
  const shown = one ? [first] : ranked;
  const ids = shown.map((p) => p.id);
  const open = await path.openOf(ctx, deps, orgId, ids);
  // Balances read again where a bill or invoice of theirs changed since the mirror read them.
  const parties = found.fromMirror ? ((await deps.mirror.confirm(orgId, kind, shown, 'interactive')) as P[]) : shown;
  const shared = {
    // Names from the mirror are kept CACHE_TTL_NAMES_S by design; the card's time is that of the open items.
    ...listContext(ctx, deps, `${kind} ${typed}`, found.fromMirror ? open.asOf : Math.min(found.fetchedAt, open.asOf)),
    today: todayOf(ctx, deps),
  };
  const [party] = parties;
  if (one && party) {
    const status = await path.networkStatus(deps, orgId, party);
    const invite = deps.invites && !party.archived && invitable(status) ? deps.invites.button(orgId, { kind, id: party.id }) : undefined;
    return path.card(party, open.items, {
      ...shared,
      others: ranked.length - 1 + (found.more ? 1 : 0),
      typed,
      network: { status, invite },
    });
  }
  const matches = parties.map((p) => {
    const items = open.items.filter((o) => path.partyIdOf(o) === p.id);
    return { party: p, open: items.length, openAmount: sum(items.map(path.amountOf)) };
  });
  return partyMatchesCard({ ...shared, kind, typed, matches, more: found.more });
}

export const vendorCommand: PartyCommand<Vendor, Bill> = {
  name: 'vendor',
  usage: 'vendor <name>',
  description: 'Vendors whose name starts with what you type, with open bills and balance',
  examples: ['vendor Acme'],
  upstream: true,
  rank: 30,
  run: (ctx, deps) => runParty(ctx, deps, vendorCommand),
  /** These vendors' open bills: from the mirror, or (not built yet) from BILL, filtered by vendorId there. */
  openOf: async (ctx, deps, orgId, ids) => {
    const wanted = new Set(ids);
    const warm = await openBills(ctx, deps, orgId, (b) => wanted.has(b.vendorId));
    if ('rows' in warm)
      return { items: withVendorNames(warm.rows, await resolveParties(deps, orgId, 'vendor', ids)), asOf: warm.refreshedAt };
    const got = await cachedAnswer(ctx, deps, answerKey('bills.open', { vendors: ids.join(',') }), ['bill', 'vendor'], () =>
      unpaidBills(deps, orgId, {}, ids.length === 1 ? ids[0] : ids),
    );
    deps.mirror.prepare(orgId, 'bill', 'open');
    return { items: got.value.items, asOf: got.fetchedAt };
  },
  partyIdOf: (b) => b.vendorId,
  amountOf: amountDue,
  card: vendorCard,
  networkStatus: (_deps, _orgId, vendor) => Promise.resolve(vendor.networkStatus),
};

const customerCommand: PartyCommand<Customer, Invoice> = {
  name: 'customer',
  usage: 'customer <name>',
  description: 'Customers whose name starts with what you type, with open invoices and balance',
  examples: ['customer Contoso'],
  upstream: true,
  rank: 50,
  run: (ctx, deps) => runParty(ctx, deps, customerCommand),
  /** These customers' open invoices: from the mirror, or (not built yet) from BILL, filtered by customerId there. */
  openOf: async (ctx, deps, orgId, ids) => {
    const wanted = new Set(ids);
    const where = (i: Invoice) => wanted.has(i.customerId) && isOwed(i);
    const warm = await deps.mirror.rows(orgId, 'invoice', { ...mirrorRead(ctx, deps, 'invoice'), whileBuilding: 'skip', where });
    if (!('building' in warm)) return { items: warm.rows, asOf: warm.refreshedAt };
    // BILL filters customerId and archived; paid ones are dropped here.
    const key = answerKey('invoices.open', { customers: ids.join(',') });
    const got = await cachedAnswer(ctx, deps, key, ['invoice', 'customer'], async () => {
      const customerId = ids.length === 1 ? ids[0] : ids;
      const { items } = await orgClient(deps, orgId)
        .invoices.list({ customerId, archived: false, sort: [{ field: 'dueDate', order: 'asc' }] })
        .all();
      return items.filter(isOwed).map(({ invoiceLineItems: _dropped, ...rest }): Invoice => rest);
    });
    deps.mirror.prepare(orgId, 'invoice');
    return { items: got.value, asOf: got.fetchedAt };
  },
  partyIdOf: (i) => i.customerId,
  amountOf: (i) => i.dueAmount,
  card: customerCard,
  /** The connection request status kept when someone invited the customer from Teams, else undefined: BILL's customers
   * carry no networkStatus and a card makes no call for it. Invite checks it in BILL before sending anything. */
  networkStatus: async (deps, orgId, customer) => {
    // ttlS 0: only what is already kept, nothing new.
    const peek = { ttlS: 0, kinds: ['customer'] as const };
    const key = customerStatusKey(customer.id);
    return (await deps.mirror.answers.get<string | undefined>(orgId, key, peek, () => Promise.resolve(undefined))).value;
  },
};

export const partiesCommands = [vendorCommand, customerCommand];
