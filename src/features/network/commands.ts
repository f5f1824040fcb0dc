// `network <name>`: the BILL payment network and RPPS searched by name (two reads), which businesses found are already
// the org's vendors or customers (by name, in the mirror), and invite buttons; text that is no business name is refused.
import { InputError } from '../../errors.js';
import type { BillGateway } from '../../bill/gateway.js';
import type { NetworkOrganization } from '../../bill/types.js';
import type { Mirror } from '../../mirror/mirror.js';
import { foldName } from '../../mirror/records.js';
import type { Command } from '../types.js';
import { boundOrg, listContext, mirrorRead, orgClient, textArgument, type FinanceSettings } from '../finance.js';
import { shorten } from '../../cards/card.js';
import { invitable, networkCard, type NetworkRow } from './cards.js';
import type { NetworkInvites } from './invite.js';

/** What `network` uses: BILL (search), the org's mirror (which businesses are yours), the invite buttons when on. */
export interface NetworkDeps {
  bill: Pick<BillGateway, 'org'>;
  mirror: Pick<Mirror, 'rows'>;
  /** Undefined without SECRETS_KEY: invitations run as the person, whose BILL sign-in needs it. */
  invites: Pick<NetworkInvites, 'button'> | undefined;
  settings: FinanceSettings;
}

/** Longest name searched; BILL business names are shorter. */
const MAX_NAME = 80;
/** Letters, digits, spaces and the punctuation of business names; no markup, links or control characters. */
const BUSINESS_NAME = /^[\p{L}\p{N}][\p{L}\p{N} .,&'’()/-]*$/u;

function parseName(typed: string): string {
  const example = 'e.g. **network Acme Office Supplies**';
  if (typed === '') throw new InputError('Which business?', `Type **network** and the business's name, ${example}.`);
  if (typed.length > MAX_NAME)
    throw new InputError(
      `That name is too long (${typed.length} characters)`,
      `Business names are at most ${MAX_NAME} characters; ${example}.`,
    );
  if (!BUSINESS_NAME.test(typed))
    throw new InputError(
      `I can't search the network for "${shorten(typed)}"`,
      `Type the business name with letters, digits, spaces and . , & ' ( ) / - only, ${example}.`,
      `network ${typed}`,
    );
  if (typed.replace(/\s/g, '').length < 3)
    throw new InputError('Type at least 3 letters', `BILL matches whole words of 3 letters or more, ${example}.`, `network ${typed}`);
  return typed.replace(/\s+/g, ' ');
}

function placeOf(o: NetworkOrganization): string | undefined {
  const a = Array.isArray(o.addresses) ? o.addresses[0] : undefined;
  const place = [a?.city, a?.stateOrProvince].filter((s): s is string => typeof s === 'string' && s !== '').join(', ');
  return place ? place.slice(0, 60) : undefined;
}

export const networkCommand: Command<NetworkDeps> = {
  name: 'network',
  usage: 'network <name>',
  description: 'Businesses in the BILL payment network with that name, and which are already your vendors or customers',
  examples: ['network Acme Office Supplies'],
  upstream: true,
  rank: 60,
  async run(ctx, deps) {
    const name = parseName(textArgument(ctx));
    const orgId = boundOrg(ctx);
    const org = orgClient(deps, orgId);
    const [bill, rpps] = await Promise.all([org.network.search(name, 'BILL'), org.network.search(name, 'RPPS')]);
    const found = [...bill.map((o) => ({ o, scope: 'BILL' as const })), ...rpps.map((o) => ({ o, scope: 'RPPS' as const }))].filter(
      ({ o }) => typeof o.id === 'string' && o.id !== '' && typeof o.name === 'string',
    );
    // The org's vendors and customers of the same names, from its mirror (no call once built; its first build is waited
    // for as long as a command waits).
    const names = new Set(found.map(({ o }) => foldName(o.name)));
    const read = { ...mirrorRead(ctx, deps, 'vendor'), confirm: false };
    const [vendors, customers] = await Promise.all([
      deps.mirror.rows(orgId, 'vendor', { ...read, where: (v) => !v.archived && names.has(foldName(v.name)) }),
      deps.mirror.rows(orgId, 'customer', { ...read, where: (c) => !c.archived && names.has(foldName(c.name)) }),
    ]);
    const unmatched = 'building' in vendors || 'building' in customers;
    const mine = new Map<string, NonNullable<NetworkRow['yours']>>();
    if (!('building' in customers))
      for (const c of customers.rows) mine.set(foldName(c.name), { kind: 'customer', id: c.id, name: c.name });
    if (!('building' in vendors))
      for (const v of vendors.rows) mine.set(foldName(v.name), { kind: 'vendor', id: v.id, name: v.name, status: v.networkStatus });
    const { invites } = deps;
    const rows: NetworkRow[] = found.map(({ o, scope }) => {
      const yours = mine.get(foldName(o.name));
      const invite =
        yours && invites && invitable(yours.status) && (scope === 'BILL' || yours.kind === 'vendor')
          ? invites.button(
              orgId,
              { kind: yours.kind, id: yours.id, networkId: o.id, networkType: scope },
              `Invite ${shorten(yours.name, 24)}`,
            )
          : undefined;
      return { id: o.id, name: o.name, scope, place: placeOf(o), yours, invite };
    });
    return networkCard({ ...listContext(ctx, deps, `network ${name}`, ctx.now.getTime()), typed: name, rows, unmatched });
  },
};
