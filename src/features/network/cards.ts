// BILL payment network cards: network status in words, the businesses a `network` search found, and what came of an
// invitation. Every string from BILL or the person is plain text here; the card kit escapes it.
import { adaptiveCard, clipped, escapeMarkdown, facts, footer, title, type CardAction, type CardReply } from '../../cards/card.js';
import { listCard, type ListContext } from '../../cards/list.js';
import type { PartyKind } from '../../mirror/records.js';

/** The card verb of "Invite to the BILL network" (Action.Execute; its data is signed, see invite.ts). */
export const NETWORK_INVITE_VERB = 'network.invite';

const STATUS_WORDS = new Map([
  ['CONNECTED', 'connected'],
  ['CONNECTED_RPPS', 'connected via RPPS (verified national vendor)'],
  ['PENDING', 'invited, waiting for them to accept'],
  ['NOT_CONNECTED', 'not connected'],
]);

/** A vendor's networkStatus (or a customer's connection request status) in words; undefined when BILL gave none. */
export function networkStatusWords(status: string | undefined): string | undefined {
  return status ? (STATUS_WORDS.get(status) ?? status.toLowerCase().replace(/_/g, ' ')) : undefined;
}

/** Who may be invited: not yet connected and no request pending. */
export const invitable = (status: string | undefined): boolean => status === undefined || status === 'NOT_CONNECTED';

/** One business found, with what it is to the org (matched in the mirror by name). */
export interface NetworkRow {
  id: string;
  name: string;
  scope: 'BILL' | 'RPPS';
  place?: string;
  /** The org's vendor or customer of the same name, with its status when known. */
  yours?: { kind: PartyKind; id: string; name: string; status?: string };
  invite?: CardAction;
}

/** `network <name>`: businesses found, their network ids, which are yours (`unmatched`: not known yet, first build). */
export function networkCard(input: ListContext & { typed: string; rows: NetworkRow[]; unmatched: boolean }): CardReply {
  const { rows } = input;
  const yours = rows.filter((r) => r.yours).length;
  const label = (r: NetworkRow): string => {
    if (!r.yours) return input.unmatched ? 'not checked yet' : '—';
    const words = networkStatusWords(r.yours.status);
    return `${r.yours.kind === 'vendor' ? 'Vendor' : 'Customer'}${words ? ` · ${words}` : ''}`;
  };
  return listCard({
    ...input,
    title: `BILL network: "${input.typed}"`,
    subtitle: 'Businesses in the BILL network and verified national vendors (RPPS)',
    totals: [
      ['Found', String(rows.length)],
      ['Already your vendors or customers', input.unmatched ? 'not checked yet' : String(yours)],
    ],
    notes: input.unmatched
      ? [{ text: 'Your vendors and customers are still being read from BILL; ask again in a minute to see which are yours.', subtle: true }]
      : [],
    columns: [{ header: 'Business' }, { header: 'Network' }, { header: 'Payment network id' }, { header: 'Yours' }],
    items: rows,
    row: (r) => [r.place ? `${r.name} (${r.place})` : r.name, r.scope, r.id, label(r)],
    tone: (r) => (r.yours && !invitable(r.yours.status) ? 'Good' : undefined),
    noun: 'businesses',
    empty: `Nothing in the BILL network or RPPS is called "${input.typed}". BILL matches whole words of 3 letters or more: try the business's full name.`,
    summary: `${rows.length} businesses in the BILL network match "${input.typed}"${yours ? `, ${yours} already yours` : ''}.`,
    actions: rows.flatMap((r) => (r.invite ? [r.invite] : [])).slice(0, 4),
  });
}

/** How BILL is asked: a connection request to this network id, or an email to this address. */
export type InviteRoute = { networkId: string; networkType: 'BILL' | 'RPPS' } | { email: string };

/** What an invitation came to, in place of the clicked card for the person who clicked. */
export function invitedCard(input: {
  kind: PartyKind;
  name: string;
  how: InviteRoute;
  status: string | undefined;
  byName: string;
  at: string;
  note?: string;
}): CardReply {
  const status = networkStatusWords(input.status) ?? 'not known yet';
  // BILL's name for the party, at any length: cut short as list and detail cards do.
  const name = clipped(input.name);
  const sent =
    'email' in input.how ? `BILL emailed an invitation to ${input.how.email}` : `Connection request to network id ${input.how.networkId}`;
  return adaptiveCard(
    [
      title(`${name} invited to the BILL network`),
      facts([
        [input.kind === 'vendor' ? 'Vendor' : 'Customer', name],
        ['Sent', escapeMarkdown(sent)],
        ['BILL network', escapeMarkdown(status)],
        ['By', escapeMarkdown(`${input.byName}, in BILL as themselves, at ${input.at}`)],
      ]),
      ...(input.note ? [footer(escapeMarkdown(input.note))] : []),
    ],
    { summary: `${input.name}: ${status} on the BILL network.` },
  );
}
