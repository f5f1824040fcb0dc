// "What does this text name?": bill and invoice numbers and vendor and customer names in the org's mirror, matched in
// memory. Nothing from the text reaches BILL: the mirror is read as the commands read it, never a call per token.
import type { Vendor } from '../../bill/types.js';
import type { Mirror } from '../../mirror/mirror.js';
import { normalizeNumber, type Kind, type Records } from '../../mirror/records.js';
import { mirrorFreshness, type WithSettings } from '../finance.js';
import { matchName, readText, type Wanted } from './match.js';
import { partyArgument } from '../payables/cards.js';

/** What the lookup reads: the org's mirror, fresh as the commands keep it. */
export interface LookupDeps extends WithSettings {
  mirror: Pick<Mirror, 'rows'>;
}

/** Matches returned at most: a list to pick from stays short. */
const MAX_MATCHES = 8;

/** One record the text names, and the command line that shows it. */
export interface Named {
  kind: Kind;
  /** The number (bills: the vendor's invoice number) or the name, as BILL has it. */
  label: string;
  /** BILL id of a vendor or customer; the number of a bill or invoice. */
  key: string;
  /** "bill ACM-95303", "vendor Acme Office Supplies". */
  command: string;
}

export interface Found {
  matches: Named[];
  /** What was looked for: the number-like tokens and whether names were looked for at all. */
  lookedFor: { numbers: string[]; names: boolean };
  /** Kinds whose mirror is still being built (first use in an org): they may hold a match not found yet. */
  building: Kind[];
}

/** A record an Insert button names (its data, checked): a bill or invoice by number, a vendor or customer by BILL id. */
export type Picked = { kind: 'bill' | 'invoice'; number: string } | { kind: 'vendor' | 'customer'; id: string };

/** What the two doors (a typed line, the "Look up in BILL" message action) use, bound to its parts in app.ts. */
export type TextLookup = ReturnType<typeof textLookup>;

export function textLookup(deps: LookupDeps) {
  /** As fresh as the commands ask, without confirming balances (none is shown). */
  const read = (orgId: string, kind: Kind) => ({ ...mirrorFreshness(deps, orgId, kind), confirm: false });
  return {
    async find(orgId: string, text: string): Promise<Found> {
      const wanted = readText(text);
      const numbers = wanted.numberKeys.size > 0;
      const names = wanted.words.length > 0;
      const building: Kind[] = [];
      /** The records of a kind looked for that `where` keeps, or none while that kind is still being built. */
      const rowsOf = async <K extends Kind>(kind: K, wantedHere: boolean, where: (r: Records[K]) => boolean) => {
        const got = wantedHere ? await deps.mirror.rows(orgId, kind, { ...read(orgId, kind), where }) : { rows: [] };
        if ('rows' in got) return got.rows;
        building.push(kind);
        return [];
      };
      /** The bills or invoices the text names: each number once, as its first record has it, in the text's order. */
      const numberedOf = async <K extends 'bill' | 'invoice'>(kind: K, numberOf: (r: Records[K]) => string): Promise<Named[]> => {
        const held = (await rowsOf(kind, numbers, (r) => wanted.numberKeys.has(normalizeNumber(numberOf(r))))).map(numberOf);
        return [...wanted.numberKeys].flatMap((key) => {
          const number = held.find((n) => normalizeNumber(n) === key);
          return number === undefined ? [] : [{ kind, label: number, key: number, command: `${kind} ${number}` }];
        });
      };
      const namedOf = async (kind: 'vendor' | 'customer') => {
        const rows = await rowsOf(kind, names, (p) => !p.archived && matchName(p.name, wanted) !== undefined);
        return rows.map((p) => ({ ...p, kind }));
      };
      const [bills, invoices, vendors, customers] = await Promise.all([
        numberedOf('bill', (b) => b.invoice?.invoiceNumber ?? ''),
        numberedOf('invoice', (i) => i.invoiceNumber),
        namedOf('vendor'),
        namedOf('customer'),
      ]);
      const matches = [...bills, ...invoices, ...named(wanted, [...vendors, ...customers])];
      return { matches: matches.slice(0, MAX_MATCHES), lookedFor: { numbers: wanted.numbers, names }, building };
    },
    /** The command line that shows a picked record; undefined for a vendor or customer the mirror does not hold. */
    async commandFor(orgId: string, picked: Picked): Promise<string | undefined> {
      if (!('id' in picked)) return `${picked.kind} ${picked.number}`;
      // The name comes from the mirror, never from the button's data: the command then searches for BILL's own name.
      const { kind, id } = picked;
      const got = await deps.mirror.rows(orgId, kind, { ...read(orgId, kind), where: (p) => p.id === id });
      const party = 'rows' in got ? got.rows[0] : undefined;
      return party ? `${kind} ${partyArgument(party)}` : undefined;
    },
  };
}

/** Whole names before first-word matches, then shorter names: "Acme" finds "Acme Office Supplies" first. */
function named(wanted: Wanted, parties: Array<Pick<Vendor, 'id' | 'name'> & { kind: 'vendor' | 'customer' }>): Named[] {
  return parties
    .map((p) => ({ p, word: Number(matchName(p.name, wanted) !== 'whole') }))
    .sort((a, b) => a.word - b.word || a.p.name.length - b.p.name.length || a.p.name.localeCompare(b.p.name))
    .map(({ p }) => ({ kind: p.kind, label: p.name, key: p.id, command: `${p.kind} ${partyArgument(p)}` }));
}
