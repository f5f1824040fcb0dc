// Search BILL from the compose box: what was typed is matched against the org's mirror in memory (never sent to BILL as a
// filter), and each record found comes with the card its command shows — `bill <number>`, `invoice <number>`,
// `vendor <name>`, `customer <name>` run through the registry, so the inserted card and its Refresh are the command's —
// and a one-line preview for Teams' result list. Hostile or empty text gets an ordinary answer, never an error.
import type { Bill, Customer, Vendor } from '../../bill/types.js';
import type { OrgBindings } from '../../bindings/bindings.js';
import type { CardReply } from '../../cards/card.js';
import { errorReply } from '../../cards/errorCards.js';
import { calendarDate, money } from '../../cards/format.js';
import { addDays } from '../../infra/calendar.js';
import { shortId } from '../../cards/redact.js';
import { billPaymentWords, invoiceStatusWords } from '../../cards/words.js';
import { errorMessage, NotBound } from '../../errors.js';
import type { Clock } from '../../infra/clock.js';
import type { Mirror } from '../../mirror/mirror.js';
import {
  foldName,
  isOpenBill,
  normalizeNumber,
  type AnyRecord,
  type Kind,
  type PartyInfo,
  type PartyKind,
  type Records,
} from '../../mirror/records.js';
import { mirrorRead, resolveParties, todayOf, type FinanceSettings } from '../finance.js';
import { amountDue, vendorName } from '../payables/cards.js';
import { balanceOf, currencyOf } from '../parties/cards.js';
import { isOwed } from '../receivables/cards.js';
import { rankMatches } from '../parties/commands.js';
import type { CommandRegistry } from '../registry.js';
import type { CommandContext } from '../types.js';
import { searchCommand } from './commands.js';
import { conversationLocale } from '../dispatch.js';

/** What the search reads: the org's mirror, the commands whose cards it inserts, and which org a conversation uses. */
export interface SearchDeps {
  mirror: Pick<Mirror, 'rows' | 'lookup' | 'names'>;
  /** The registry holding `bill`, `invoice`, `vendor` and `customer`. */
  commands: Pick<CommandRegistry, 'get'>;
  orgs: Pick<OrgBindings, 'forExtension'>;
  settings: FinanceSettings;
  clock: Clock;
}

/** A composeExtension/query: where and by whom (read from the activity), which search, what was typed, which page. */
export interface SearchQuery extends Pick<CommandContext, 'scope' | 'caller' | 'locale' | 'correlationId' | 'log'> {
  commandId: unknown;
  /** What was typed; undefined for Teams' initial run (the search opened, nothing typed yet). */
  text: string | undefined;
  skip: number;
  count: number;
}

export interface SearchResult {
  /** The card the command shows, inserted into the conversation when the result is picked. */
  card: CardReply;
  /** The result list's row: plain text; `text` is composed of amounts, dates and status words only (no BILL text). */
  preview: { title: string; subtitle: string; text: string };
}

export interface SearchAnswer {
  results: SearchResult[];
  /** Said instead of results: a hint, nothing found, still indexing, a refusal. */
  message?: string;
  orgId?: string;
  outcome: 'ok' | 'empty' | 'unknown' | 'refused' | 'error';
  error?: unknown;
}

/** Longer text is no number or name anyone types: answered "nothing found" without a search. */
const MAX_QUERY_LENGTH = 100;
/** Teams asks for 25 a page; each result carries a whole card. */
const MAX_RESULTS = 25;
/** A vendor's or customer's card reads its open bills or invoices (all of an org's, ~10 ms for 10,000): fewer a page. */
const MAX_PARTY_RESULTS = 10;
/** "Bills due this week": the next 7 days, as `bills due` counts them. */
const WEEK_DAYS = 7;

const said = (message: string, outcome: SearchAnswer['outcome'], extra: Partial<SearchAnswer> = {}): SearchAnswer => ({
  results: [],
  message,
  outcome,
  ...extra,
});

/** What was typed, as people type numbers and names: trimmed, one space between words, outer quotes dropped. */
function cleanQuery(raw: string): string {
  const s = raw.normalize('NFKC').replace(/\s+/g, ' ').trim();
  const quoted = /^["'“‘«](.*)["'”’»]$/.exec(s);
  return (quoted?.[1] ?? s).trim();
}

/**
 * normalizeNumber, skipping its Unicode normalisation for the plain ASCII numbers nearly every record has (same
 * result: NFKC, trimming and the '#' rule change nothing there); a search compares every record's number.
 */
const numberKey = (raw: string): string => (/^[\x21\x22\x24-\x7e]*$/.test(raw) ? raw.toUpperCase() : normalizeNumber(raw));

/** Plain string order: ISO dates and ids compare as strings (localeCompare costs more over 10,000 records). */
const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The typed text, repeated in an answer only when it is a plain number or name. */
const echo = (typed: string): string => (/^[\p{L}\p{N} .,&'#/-]{1,40}$/u.test(typed) ? `"${typed}"` : 'what you typed');

/** A search's command context: a bound org always. */
type OrgContext = CommandContext & { orgId: string; locale: string };

type Found<K extends Kind> = { rows: Array<Records[K]> } | { building: number };

/** What the search does for one kind of record (method syntax: the row of one kind is read where any kind's is). */
interface KindSearch<K extends Kind> {
  /** Results a page (default MAX_RESULTS). */
  most?: number;
  /** The useful few before anything is typed; none for vendors and customers (the hint says what to type). */
  initial?(deps: SearchDeps, ctx: OrgContext): Promise<Found<K>>;
  /** Records whose number starts with what was typed, or whose vendor's or customer's name does; names for parties. */
  matching(deps: SearchDeps, ctx: OrgContext, typed: string): Promise<Found<K>>;
  /** What the record's command runs with: its number or its name. */
  argText(deps: SearchDeps, ctx: OrgContext, record: Records[K]): Promise<string> | string;
  /** Bills and invoices: whose names and currencies their previews show, as the cards read them. */
  party?: { kind: PartyKind; id(record: Records[K]): string };
  /** The result list's row: number or name, who, and "amount · due date · status". */
  preview(deps: SearchDeps, ctx: OrgContext, record: Records[K], parties: Map<string, PartyInfo>): SearchResult['preview'];
}

/** Bills or invoices by number or by their vendor's or customer's name; `numbered` says what is compared. */
async function matchingNumbered<K extends 'bill' | 'invoice'>(
  deps: SearchDeps,
  ctx: OrgContext,
  typed: string,
  [kind, partyKind]: [K, PartyKind],
  numbered: (r: Records[K]) => { number: string; partyId: string; partyName?: string; owed: boolean },
): Promise<Found<K>> {
  const name = foldName(typed);
  const number = normalizeNumber(typed);
  const parties = await deps.mirror.rows(ctx.orgId, partyKind, {
    ...mirrorRead(ctx, deps, partyKind),
    confirm: false,
    where: (p: Vendor | Customer) => foldName(p.name).startsWith(name),
  });
  const named = new Set('building' in parties ? [] : parties.rows.map((p) => p.id));
  /** 0: the number itself, 1: a number starting with it, 2: its vendor's or customer's name; undefined: no match. */
  const rank = (r: Records[K]): number | undefined => {
    const f = numbered(r);
    const n = numberKey(f.number);
    if (n === number) return 0;
    if (number !== '' && n.startsWith(number)) return 1;
    return named.has(f.partyId) || (f.partyName !== undefined && foldName(f.partyName).startsWith(name)) ? 2 : undefined;
  };
  const ranks = new Map<string, number>();
  const got = await deps.mirror.rows(ctx.orgId, kind, {
    ...mirrorRead(ctx, deps, kind),
    where: (r) => {
      const k = rank(r);
      if (k !== undefined) ranks.set(r.id, k);
      return k !== undefined;
    },
  });
  if ('building' in got) return got;
  // Best match first, then what is still owed, soonest due first.
  const order = (r: Records[K]) => (ranks.get(r.id) ?? 2) * 2 + (numbered(r).owed ? 0 : 1);
  got.rows.sort((a, b) => order(a) - order(b) || byString(a.dueDate, b.dueDate) || byString(a.id, b.id));
  return got;
}

/** Vendors or customers: found by the first letters of their names once something is typed. */
function partySearch<K extends PartyKind>(kind: K, label: 'Vendor' | 'Customer'): KindSearch<K> {
  return {
    most: MAX_PARTY_RESULTS,
    async matching(deps, ctx, typed) {
      const name = foldName(typed);
      const where = (p: Vendor | Customer) => !p.archived && foldName(p.name).startsWith(name);
      const got = await deps.mirror.rows(ctx.orgId, kind, { ...mirrorRead(ctx, deps, kind), confirm: false, where });
      return 'building' in got ? got : { rows: rankMatches(typed, got.rows) };
    },
    argText: (_deps, _ctx, p) => p.name,
    preview(_deps, ctx, p) {
      const balance = balanceOf(p);
      return {
        title: p.name || `${label} ${shortId(p.id)}`,
        subtitle: label,
        text: `Balance ${balance === undefined ? '—' : money(balance, currencyOf(kind, p), ctx.locale)}${p.archived ? ' · Archived' : ''}`,
      };
    },
  };
}

const KINDS: { [K in Kind]: KindSearch<K> } = {
  bill: {
    /** The bills due this week, soonest first. */
    async initial(deps, ctx) {
      const today = todayOf(ctx, deps);
      const to = addDays(today, WEEK_DAYS);
      const where = (b: Bill) => isOpenBill(b) && b.dueDate.slice(0, 10) >= today && b.dueDate.slice(0, 10) <= to;
      const got = await deps.mirror.rows(ctx.orgId, 'bill', { ...mirrorRead(ctx, deps, 'bill'), scope: 'open', where });
      if (!('building' in got)) got.rows.sort((a, b) => byString(a.dueDate, b.dueDate) || byString(a.id, b.id));
      return got;
    },
    matching: (deps, ctx, typed) =>
      matchingNumbered(deps, ctx, typed, ['bill', 'vendor'], (b) => ({
        number: b.invoice?.invoiceNumber ?? '',
        partyId: b.vendorId,
        partyName: b.vendorName,
        owed: isOpenBill(b),
      })),
    async argText(deps, ctx, b) {
      // `bill <number>` shows this bill only when no other bill has its number; else `bill <BILL id>` does, as the
      // command's own pick buttons run it.
      const number = b.invoice?.invoiceNumber ?? '';
      const same = number === '' ? undefined : await deps.mirror.lookup(ctx.orgId, 'bill', number, mirrorRead(ctx, deps, 'bill'));
      return same && 'rows' in same && same.rows.length === 1 && same.rows[0]?.id === b.id ? number : b.id;
    },
    party: { kind: 'vendor', id: (b) => b.vendorId },
    preview(_deps, ctx, b, vendors) {
      const vendor = vendors.get(b.vendorId);
      const open = isOpenBill(b);
      const amount = money(open ? amountDue(b) : b.amount, vendor?.currency, ctx.locale);
      return {
        title: b.invoice?.invoiceNumber || `Bill ${shortId(b.id)}`,
        subtitle: vendor?.name || vendorName(b),
        text: [open ? `${amount} due` : amount, `due ${calendarDate(b.dueDate, ctx.locale)}`, billPaymentWords(b)].join(' · '),
      };
    },
  },
  invoice: {
    /** The latest invoices first. */
    async initial(deps, ctx) {
      const got = await deps.mirror.rows(ctx.orgId, 'invoice', { ...mirrorRead(ctx, deps, 'invoice'), where: (i) => !i.archived });
      if (!('building' in got))
        got.rows.sort((a, b) => byString(b.invoiceDate, a.invoiceDate) || byString(b.updatedTime, a.updatedTime) || byString(a.id, b.id));
      return got;
    },
    matching: (deps, ctx, typed) =>
      matchingNumbered(deps, ctx, typed, ['invoice', 'customer'], (i) => ({
        number: i.invoiceNumber,
        partyId: i.customerId,
        owed: isOwed(i),
      })),
    argText: (_deps, _ctx, i) => i.invoiceNumber,
    party: { kind: 'customer', id: (i) => i.customerId },
    preview(deps, ctx, i, customers) {
      const customer = customers.get(i.customerId);
      return {
        title: i.invoiceNumber || `Invoice ${shortId(i.id)}`,
        subtitle: customer?.name || `Customer ${shortId(i.customerId)}`,
        text: [
          `${money(i.dueAmount, customer?.currency, ctx.locale)} due`,
          `due ${calendarDate(i.dueDate, ctx.locale)}`,
          invoiceStatusWords(i, todayOf(ctx, deps)).words,
        ].join(' · '),
      };
    },
  },
  vendor: partySearch('vendor', 'Vendor'),
  customer: partySearch('customer', 'Customer'),
};

export class ComposeSearch {
  constructor(private readonly deps: SearchDeps) {}

  /** composeExtension/query: the records matching what was typed (or, before typing, the useful few), each with its card. */
  async query(q: SearchQuery): Promise<SearchAnswer> {
    const command = searchCommand(q.commandId);
    if (!command) return said('billbridge has no such search.', 'unknown');
    let org: string | undefined;
    try {
      const bound = await this.deps.orgs.forExtension(q.scope);
      if (!('orgId' in bound)) {
        if (bound.refused === 'chat in multi-org')
          return said(
            'Search BILL from a channel of a team linked to BILL: in a chat or the command box billbridge cannot tell which organisation to search.',
            'refused',
          );
        const err = new NotBound();
        return said(this.errorText(err, q), 'refused', { error: err });
      }
      org = bound.orgId;
      const ctx: OrgContext = {
        input: { name: 'search', args: [], argText: '', page: 0 },
        scope: q.scope,
        caller: q.caller,
        orgId: org,
        correlationId: q.correlationId,
        now: new Date(this.deps.clock.now()),
        locale: conversationLocale(q.locale, this.deps.settings.locale),
        log: q.log,
      };
      const row: KindSearch<Kind> = KINDS[command.kind];
      let found: Found<Kind>;
      if (q.text === undefined) {
        if (!row.initial) return said(command.hint, 'empty', { orgId: org });
        found = await row.initial(this.deps, ctx);
      } else {
        const typed = cleanQuery(q.text);
        if (typed === '') return said(command.hint, 'empty', { orgId: org });
        if (typed.length > MAX_QUERY_LENGTH) return said(`No ${command.id} match what you typed. ${command.hint}`, 'ok', { orgId: org });
        found = await row.matching(this.deps, ctx, typed);
      }
      if ('building' in found) {
        const so = `${found.building.toLocaleString(ctx.locale)} so far; this happens once`;
        return said(`billbridge is still reading this organisation's ${command.id} from BILL (${so}). Try again in a minute.`, 'ok', {
          orgId: org,
        });
      }
      const skip = Math.max(0, Math.floor(q.skip));
      const shown = found.rows.slice(skip, skip + Math.min(row.most ?? MAX_RESULTS, Math.max(1, Math.floor(q.count))));
      if (shown.length === 0) {
        const what = q.text === undefined ? `No ${command.id} to show yet.` : `No ${command.id} match ${echo(cleanQuery(q.text))}.`;
        return said(`${what} ${command.hint}`, 'ok', { orgId: org });
      }
      return { results: await this.results(ctx, command.kind, row, shown), outcome: 'ok', orgId: org };
    } catch (err) {
      q.log.warn({ err: errorMessage(err), errName: err instanceof Error ? err.name : typeof err }, 'search failed');
      return said(this.errorText(err, q), 'error', { orgId: org, error: err });
    }
  }

  /** Each record's card and preview; a record whose card cannot be made is left out (all failing: the first error). */
  private async results(ctx: OrgContext, kind: Kind, row: KindSearch<Kind>, records: AnyRecord[]): Promise<SearchResult[]> {
    const party = row.party;
    const parties = party
      ? await resolveParties(
          this.deps,
          ctx.orgId,
          party.kind,
          records.map((r) => party.id(r)),
        )
      : new Map<string, PartyInfo>();
    const made = await Promise.allSettled(
      records.map(async (record): Promise<SearchResult> => {
        const card = await this.cardOf(ctx, kind, row, record);
        return { card, preview: row.preview(this.deps, ctx, record, parties) };
      }),
    );
    const results: SearchResult[] = [];
    for (const m of made) {
      if (m.status === 'fulfilled') results.push(m.value);
      else ctx.log.info({ kind, err: errorMessage(m.reason) }, 'search result left out: its card could not be made');
    }
    const failed = made.find((m) => m.status === 'rejected');
    if (results.length === 0 && failed) throw failed.reason;
    return results;
  }

  /** The card the record's command shows: its command run through the registry with the record's number or name. */
  private async cardOf(ctx: OrgContext, kind: Kind, row: KindSearch<Kind>, record: AnyRecord): Promise<CardReply> {
    const command = this.deps.commands.get(kind);
    if (!command) throw new Error(`the ${kind} command is not registered`);
    const args = (await row.argText(this.deps, ctx, record)).trim();
    return command.run({ ...ctx, input: { name: kind, args: args.split(' ').filter(Boolean), argText: args, page: 0 } });
  }

  /** The one error card's line for this error (what a search result can show). */
  private errorText(err: unknown, turn: SearchQuery): string {
    return errorReply(err, { correlationId: turn.correlationId, kind: turn.scope.kind }).summary;
  }
}
