// Search BILL from the compose box: what was typed is matched in the org's mirror (never sent to BILL), and each record
// found comes with its command's card (`bill <number>`... run through the registry) and a one-line preview. Hostile or
// empty text gets an ordinary answer, never an error.
import type { Bill, Customer, Invoice, Vendor } from '../../bill/types.js';
import type { OrgBindings } from '../../bindings/bindings.js';
import { adaptiveCard, escapeMarkdown, subtitle, text, title, type CardReply } from '../../cards/card.js';
import { errorReply } from '../../cards/errorCards.js';
import { calendarDate, money } from '../../cards/format.js';
import { addDays, calendarDay } from '../../infra/calendar.js';
import { shortId } from '../../cards/card.js';
import { billPaymentWords, invoiceStatusWords } from '../../cards/words.js';
import { errorMessage, NotBound, errorName } from '../../errors.js';
import type { Clock } from '../../infra/clock.js';
import type { Mirror, RowsResult } from '../../mirror/mirror.js';
import { foldName, isOpenBill, isOwedBill, normalizeNumber, type AnyRecord, type Kind, type PartyInfo } from '../../mirror/records.js';
import { mirrorRead, resolveParties, todayOf, type WithSettings } from '../finance.js';
import { amountDue, partyArgument, vendorName } from '../payables/cards.js';
import { balanceWords } from '../parties/cards.js';
import { isOwed } from '../receivables/cards.js';
import { rankMatches } from '../parties/commands.js';
import type { CommandRegistry } from '../registry.js';
import type { CommandContext } from '../types.js';
import { searchCommand, type SearchCommand } from './commands.js';
import { commandContext, type TurnResult } from '../dispatch.js';

/** What the search reads: the org's mirror, the commands whose cards it inserts, and which org a conversation uses. */
export interface SearchDeps extends WithSettings {
  mirror: Pick<Mirror, 'rows' | 'lookup' | 'names'>;
  /** The registry holding `bill`, `invoice`, `vendor` and `customer`. */
  commands: Pick<CommandRegistry, 'get'>;
  orgs: Pick<OrgBindings, 'forExtension'>;
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

/** How a search went, as a command's turn says it, with its results or what it says instead. */
export interface SearchAnswer extends Pick<TurnResult, 'outcome' | 'orgId' | 'error'> {
  results: SearchResult[];
  /** Said instead of results: a hint, nothing found, still indexing, a refusal. */
  message?: string;
}

/** Longer text is no number or name anyone types: answered "nothing found" without a search. */
const MAX_QUERY_LENGTH = 100;
/** Teams asks for 25 a page; each result carries a whole card. */
const MAX_RESULTS = 25;
/** A vendor's or customer's card reads its open bills or invoices (all of an org's, ~10 ms for 10,000): fewer a page. */
const MAX_PARTY_RESULTS = 10;
/** Teams' limit for a card a message extension inserts: a bigger one is not sent. */
export const MAX_EXTENSION_CARD_BYTES = 28 * 1024;
/** "Bills due this week": the next 7 days, as `bills due` counts them. */
const WEEK_DAYS = 7;
const CHAT_IN_MULTI_ORG =
  'Search BILL from a channel of a team linked to BILL: in a chat or the command box billbridge cannot tell which organisation to search.';

function said(message: string, outcome: SearchAnswer['outcome'], extra: Partial<SearchAnswer> = {}): SearchAnswer {
  return { results: [], message, outcome, ...extra };
}

/** What was typed, as people type numbers and names: trimmed, one space between words, outer quotes dropped. */
function cleanQuery(raw: string): string {
  const s = raw.normalize('NFKC').replace(/\s+/g, ' ').trim();
  const quoted = /^["'“‘«](.*)["'”’»]$/.exec(s);
  return (quoted?.[1] ?? s).trim();
}

/** Plain string order: ISO dates and ids compare as strings (localeCompare costs more over 10,000 records). */
const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The typed text, repeated in an answer only when it is a plain number or name. */
const echo = (typed: string): string => (/^[\p{L}\p{N} .,&'#/-]{1,40}$/u.test(typed) ? `"${typed}"` : 'what you typed');

/** What a bill or invoice search compares: the number people type, whom it is from or to, and whether it is still owed. */
function numbered(r: Bill | Invoice): { number: string; partyId: string; partyName: string | undefined; owed: boolean } {
  return 'vendorId' in r
    ? { number: r.invoice?.invoiceNumber ?? '', partyId: r.vendorId, partyName: r.vendorName, owed: isOwedBill(r) }
    : { number: r.invoiceNumber, partyId: r.customerId, partyName: undefined, owed: isOwed(r) };
}

/** A search's command context: a bound org always. */
type OrgContext = CommandContext & { orgId: string; locale: string };

export class ComposeSearch {
  constructor(private readonly deps: SearchDeps) {}

  /** composeExtension/query: the records matching what was typed (or, before typing, the useful few), each with its card. */
  async query(q: SearchQuery): Promise<SearchAnswer> {
    const command = searchCommand(q.commandId);
    if (!command) return said('billbridge has no such search.', 'unknown');
    // The one error card's line for this error (what a search result can show).
    const errorText = (err: unknown) => errorReply(err, { correlationId: q.correlationId, kind: q.scope.kind }).summary;
    let org: string | undefined;
    try {
      const bound = await this.deps.orgs.forExtension(q.scope);
      if (!('orgId' in bound)) {
        if (bound.refused === 'chat in multi-org') return said(CHAT_IN_MULTI_ORG, 'refused');
        const err = new NotBound();
        return said(errorText(err), 'refused', { error: err });
      }
      org = bound.orgId;
      const say = (message: string, outcome: SearchAnswer['outcome'] = 'ok') => said(message, outcome, { orgId: org });
      const input = { name: 'search', args: [], argText: '', page: 0 };
      const ctx: OrgContext = commandContext(q, input, org, { clock: this.deps.clock, locale: this.deps.settings.locale });
      const typed = q.text === undefined ? undefined : cleanQuery(q.text);
      const party = command.kind === 'vendor' || command.kind === 'customer';
      if (typed === '' || (typed === undefined && party)) return say(command.hint, 'empty');
      if (typed !== undefined && typed.length > MAX_QUERY_LENGTH) return say(`No ${command.id} match what you typed. ${command.hint}`);
      const found =
        typed !== undefined
          ? await this.matching(ctx, command, typed)
          : command.kind === 'bill'
            ? await this.billsDueThisWeek(ctx)
            : await this.latestInvoices(ctx);
      if ('building' in found) {
        const so = `${found.building.toLocaleString(ctx.locale)} so far; this happens once`;
        return say(`billbridge is still reading this organisation's ${command.id} from BILL (${so}). Try again in a minute.`);
      }
      const skip = Math.max(0, Math.floor(q.skip));
      const shown = found.rows.slice(skip, skip + Math.min(party ? MAX_PARTY_RESULTS : MAX_RESULTS, Math.max(1, Math.floor(q.count))));
      if (shown.length === 0) {
        const what = typed === undefined ? `No ${command.id} to show yet.` : `No ${command.id} match ${echo(typed)}.`;
        return say(`${what} ${command.hint}`);
      }
      return { results: await this.results(ctx, command.kind, shown), outcome: 'ok', orgId: org };
    } catch (err) {
      q.log.warn({ err: errorMessage(err), errName: errorName(err) }, 'search failed');
      return said(errorText(err), 'error', { orgId: org, error: err });
    }
  }

  private async billsDueThisWeek(ctx: OrgContext): Promise<RowsResult<Bill>> {
    const today = todayOf(ctx, this.deps);
    const to = addDays(today, WEEK_DAYS);
    const got = await this.deps.mirror.rows(ctx.orgId, 'bill', {
      ...mirrorRead(ctx, this.deps, 'bill'),
      scope: 'open',
      where: (b) => {
        const day = calendarDay(b.dueDate);
        return isOwedBill(b) && day !== undefined && day >= today && day <= to;
      },
    });
    if (!('building' in got)) got.rows.sort((a, b) => byString(a.dueDate, b.dueDate) || byString(a.id, b.id));
    return got;
  }

  private async latestInvoices(ctx: OrgContext): Promise<RowsResult<Invoice>> {
    const got = await this.deps.mirror.rows(ctx.orgId, 'invoice', { ...mirrorRead(ctx, this.deps, 'invoice'), where: (i) => !i.archived });
    if (!('building' in got))
      got.rows.sort((a, b) => byString(b.invoiceDate, a.invoiceDate) || byString(b.updatedTime, a.updatedTime) || byString(a.id, b.id));
    return got;
  }

  /** Records whose number starts with what was typed, or whose vendor's or customer's name does; names for parties. */
  private async matching(ctx: OrgContext, command: SearchCommand, typed: string): Promise<RowsResult<AnyRecord>> {
    const name = foldName(typed);
    /** The vendors or customers whose name starts with what was typed; `archived` too or not. */
    const namedLike = (kind: 'vendor' | 'customer', archived: boolean) =>
      this.deps.mirror.rows(ctx.orgId, kind, {
        ...mirrorRead(ctx, this.deps, kind),
        confirm: false,
        where: (p: Vendor | Customer) => (archived || !p.archived) && foldName(p.name).startsWith(name),
      });
    if (command.kind === 'vendor' || command.kind === 'customer') {
      const got = await namedLike(command.kind, false);
      return 'building' in got ? got : { ...got, rows: rankMatches(typed, got.rows) };
    }
    const number = normalizeNumber(typed);
    const parties = await namedLike(command.kind === 'bill' ? 'vendor' : 'customer', true);
    const named = new Set('building' in parties ? [] : parties.rows.map((p) => p.id));
    /** 0: the number itself, 1: a number starting with it, 2: its vendor's or customer's name; undefined: no match. */
    const rank = (r: Bill | Invoice): number | undefined => {
      const f = numbered(r);
      const n = normalizeNumber(f.number);
      if (n === number) return 0;
      if (number !== '' && n.startsWith(number)) return 1;
      return named.has(f.partyId) || (f.partyName !== undefined && foldName(f.partyName).startsWith(name)) ? 2 : undefined;
    };
    const ranks = new Map<string, number>();
    const got = await this.deps.mirror.rows(ctx.orgId, command.kind, {
      ...mirrorRead(ctx, this.deps, command.kind),
      where: (r: Bill | Invoice) => {
        const k = rank(r);
        if (k !== undefined) ranks.set(r.id, k);
        return k !== undefined;
      },
    });
    if ('building' in got) return got;
    // Best match first, then what is still owed, soonest due first.
    const order = (r: Bill | Invoice) => (ranks.get(r.id) ?? 2) * 2 + (numbered(r).owed ? 0 : 1);
    got.rows.sort((a, b) => order(a) - order(b) || byString(a.dueDate, b.dueDate) || byString(a.id, b.id));
    return got;
  }

  /** Each record's card and preview; a record whose card cannot be made is left out (all failing: the first error). */
  private async results(ctx: OrgContext, kind: Kind, records: AnyRecord[]): Promise<SearchResult[]> {
    // Names and currencies of the bills' vendors or the invoices' customers, as the cards read them.
    const ids = kind === 'bill' || kind === 'invoice' ? (records as Array<Bill | Invoice>).map((r) => numbered(r).partyId) : undefined;
    const parties = ids
      ? await resolveParties(this.deps, ctx.orgId, kind === 'bill' ? 'vendor' : 'customer', ids)
      : new Map<string, PartyInfo>();
    const made = await Promise.allSettled(
      records.map(async (record): Promise<SearchResult> => {
        const { card, line } = await this.cardOf(ctx, kind, record);
        const preview = this.preview(ctx, kind, record, parties);
        // A card over Teams' limit would not be inserted: the result inserts its preview and the command instead.
        const fits = Buffer.byteLength(JSON.stringify(card.card)) <= MAX_EXTENSION_CARD_BYTES;
        return { card: fits ? card : tooLargeCard(preview, line), preview };
      }),
    );
    const failed = made.filter((m) => m.status === 'rejected');
    for (const m of failed) ctx.log.info({ kind, err: errorMessage(m.reason) }, 'search result left out: its card could not be made');
    if (failed.length === made.length && failed[0]) throw failed[0].reason;
    return made.flatMap((m) => (m.status === 'fulfilled' ? [m.value] : []));
  }

  /** The card the record's command shows: its command line (`bill <number>`) run through the registry. */
  private async cardOf(ctx: OrgContext, kind: Kind, record: AnyRecord): Promise<{ card: CardReply; line: string }> {
    const command = this.deps.commands.get(kind);
    if (!command) throw new Error(`the ${kind} command is not registered`);
    let argText =
      kind === 'invoice' ? (record as Invoice).invoiceNumber : kind === 'bill' ? '' : partyArgument(record as Vendor | Customer);
    if (kind === 'bill') {
      // `bill <number>` shows this bill only when no other bill has its number; else `bill <BILL id>` does, as the
      // command's own pick buttons run it.
      const number = (record as Bill).invoice?.invoiceNumber ?? '';
      const same = number === '' ? undefined : await this.deps.mirror.lookup(ctx.orgId, 'bill', number, mirrorRead(ctx, this.deps, 'bill'));
      argText = same && 'rows' in same && same.rows.length === 1 && same.rows[0]?.id === record.id ? number : record.id;
    }
    const args = argText.trim();
    const card = await command.run({ ...ctx, input: { name: kind, args: args.split(' ').filter(Boolean), argText: args, page: 0 } });
    return { card, line: `${kind} ${args}` };
  }

  /** The result list's row: number or name, who, and "amount · due date · status". */
  private preview(ctx: OrgContext, kind: Kind, record: AnyRecord, parties: Map<string, PartyInfo>): SearchResult['preview'] {
    const { locale } = ctx;
    switch (kind) {
      case 'bill': {
        const b = record as Bill;
        const vendor = parties.get(b.vendorId);
        const open = isOpenBill(b);
        const amount = money(open ? amountDue(b) : b.amount, vendor?.currency, locale);
        return {
          title: b.invoice?.invoiceNumber || `Bill ${shortId(b.id)}`,
          subtitle: vendor?.name || vendorName(b),
          text: [open ? `${amount} due` : amount, `due ${calendarDate(b.dueDate, locale)}`, billPaymentWords(b)].join(' · '),
        };
      }
      case 'invoice': {
        const i = record as Invoice;
        const customer = parties.get(i.customerId);
        return {
          title: i.invoiceNumber || `Invoice ${shortId(i.id)}`,
          subtitle: customer?.name || `Customer ${shortId(i.customerId)}`,
          text: [
            `${money(i.dueAmount, customer?.currency, locale)} due`,
            `due ${calendarDate(i.dueDate, locale)}`,
            invoiceStatusWords(i, todayOf(ctx, this.deps)).words,
          ].join(' · '),
        };
      }
      case 'vendor':
      case 'customer': {
        const p = record as Vendor | Customer;
        return {
          title: p.name || `${kind === 'vendor' ? 'Vendor' : 'Customer'} ${shortId(p.id)}`,
          subtitle: kind === 'vendor' ? 'Vendor' : 'Customer',
          text: `Balance ${balanceWords(p, locale)}${p.archived ? ' · Archived' : ''}`,
        };
      }
    }
  }
}

/** What a result inserts when its command's card is over Teams' limit: the preview's facts and the command to type. */
function tooLargeCard(preview: SearchResult['preview'], line: string): CardReply {
  const summary = `${preview.title}, ${preview.subtitle}: ${preview.text}`;
  return adaptiveCard(
    [
      title(escapeMarkdown(preview.title)),
      subtitle(escapeMarkdown(preview.subtitle)),
      text(escapeMarkdown(preview.text)),
      text(`Its full card is too large to insert; type @billbridge ${escapeMarkdown(line)} in a channel instead.`, { subtle: true }),
    ],
    { summary },
  );
}
