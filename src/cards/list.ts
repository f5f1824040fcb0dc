// The list card of every list command (totals, one page of rows, Show more and Refresh re-running the command) and the
// detail card of one record. Strings passed in are plain text, escaped and shortened here (a card stays under 100 KB).
import {
  adaptiveCard,
  container,
  escapeMarkdown,
  executeAction,
  facts,
  footer,
  clipped,
  MAX_NOTE,
  subtitle,
  table,
  text,
  title,
  type CardAction,
  type CardElement,
  type CardReply,
  type TableColumn,
} from './card.js';
import { clockTime, type FormatOptions } from './format.js';
import type { Tone } from './words.js';

const PAGE_SIZE = 10;

/** What a data card's "As of" footer says: when BILL answered, in the person's formats, and the footer note. */
export interface AsOf {
  asOf: number;
  fmt: FormatOptions;
  /** The footer's last part, e.g. "Demo organisation — simulated data". */
  note?: string;
}

/** Where a list card stands: its "As of", the command its Show more and Refresh run ("bills due 14"), the page asked for. */
export interface ListContext extends AsOf {
  command: string;
  /** Zero-based (the Show more button asks for the next). */
  page: number;
}

export interface ListCardSpec<T> extends ListContext {
  title: string;
  subtitle?: string;
  /** Label/value lines over every row (totals, counts), shown above the table. */
  totals?: Array<[string, string]>;
  /** Lines under the totals (e.g. the overdue bills line of `bills due`). */
  notes?: Array<{ text: string; subtle?: boolean }>;
  /** Charts between the notes and the table (src/cards/chart.ts: each carries its fallback). */
  charts?: CardElement[];
  columns: Array<string | TableColumn>;
  /** Every item, in order; only the requested page's rows are drawn. */
  items: readonly T[];
  row: (item: T) => string[];
  tone?: (item: T) => Tone;
  /** What the rows are, plural: "bills" -> "Showing 11–20 of 34 bills". */
  noun: string;
  /** Said instead of an empty table, e.g. "No bills due in the next 7 days." */
  empty: string;
  /** Footer parts before the note (truncation). */
  footnotes?: Array<string | undefined>;
  summary: string;
  /** More buttons after Show more (e.g. "Show overdue bills"). */
  actions?: CardAction[];
}

/** The "As of 10:42" footer with any extra parts and the note, plain text in. */
function asOfFooter(at: AsOf, parts: Array<string | undefined> = []): CardElement {
  const said = [...parts, at.note].filter((n): n is string => !!n).map((n) => clipped(n, MAX_NOTE));
  return footer([`As of ${clockTime(at.asOf, at.fmt)}`, ...said].join(' · '));
}

function refreshAction(command: string, page = 0): CardAction {
  return executeAction('Refresh', { verb: 'run', command, page, refresh: true });
}

type Fact = [string, string];

export function plainFacts(pairs: Fact[]): CardElement {
  return facts(pairs.map(([k, v]) => [clipped(k), clipped(v)]));
}

/** A separated part of a detail card: a bold heading over label/value lines (or what it says when there are none), or a note. */
type DetailSection = { heading: string; facts: Fact[]; chart?: CardElement; none?: string } | { note: string; separator?: boolean };

/** Its title, subtitle, summary and buttons (before Refresh, e.g. "This vendor") as a list card's. */
export interface DetailCardSpec extends Omit<ListContext, 'page'>, Pick<ListCardSpec<never>, 'title' | 'subtitle' | 'summary' | 'actions'> {
  /** A line in bold under the subtitle: how late a bill is, an invoice's status. */
  status?: string;
  /** Label/value groups, one after the other; an undefined line is left out (a field the record does not have). */
  facts?: Array<Array<Fact | undefined>>;
  sections: DetailSection[];
}

export function detailCard(spec: DetailCardSpec): CardReply {
  const body: CardElement[] = [title(clipped(spec.title))];
  if (spec.subtitle) body.push(subtitle(clipped(spec.subtitle)));
  if (spec.status) body.push(text(clipped(spec.status), { weight: 'Bolder' }));
  body.push(...(spec.facts ?? []).map((group) => plainFacts(group.filter((f) => f !== undefined))));
  for (const s of spec.sections) {
    if ('note' in s) body.push(text(clipped(s.note, MAX_NOTE), { subtle: true, separator: s.separator }));
    else {
      const lines = s.facts.length > 0 || !s.none ? plainFacts(s.facts) : text(s.none, { subtle: true });
      body.push(container([text(s.heading, { weight: 'Bolder' }), lines, ...(s.chart ? [s.chart] : [])], { separator: true }));
    }
  }
  body.push(asOfFooter(spec));
  return adaptiveCard(body, { summary: spec.summary, actions: [...(spec.actions ?? []), refreshAction(spec.command)] });
}

export function listCard<T>(spec: ListCardSpec<T>): CardReply {
  const total = spec.items.length;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const page = Number.isFinite(spec.page) ? Math.min(Math.max(0, Math.floor(spec.page)), pages - 1) : 0;
  const body: CardElement[] = [title(clipped(spec.title))];
  if (spec.subtitle) body.push(subtitle(clipped(spec.subtitle)));
  if (spec.totals && spec.totals.length > 0) body.push(plainFacts(spec.totals));
  for (const note of spec.notes ?? []) body.push(text(clipped(note.text, MAX_NOTE), { subtle: note.subtle }));
  body.push(...(spec.charts ?? []));
  const actions: CardAction[] = [];
  if (total === 0) {
    body.push(text(clipped(spec.empty, MAX_NOTE), { separator: true }));
  } else {
    const from = page * PAGE_SIZE;
    const shown = spec.items.slice(from, from + PAGE_SIZE);
    body.push(
      table(
        spec.columns.map((c) => (typeof c === 'string' ? { header: escapeMarkdown(c) } : { ...c, header: escapeMarkdown(c.header) })),
        shown.map((item) => spec.row(item).map((cell) => clipped(cell))),
        { rowColors: spec.tone && shown.map(spec.tone) },
      ),
    );
    if (total > PAGE_SIZE) {
      const n = (i: number) => i.toLocaleString(spec.fmt.locale);
      const showing = `Showing ${n(from + 1)}–${n(from + shown.length)} of ${n(total)} ${escapeMarkdown(spec.noun)}`;
      body.push(text(showing, { subtle: true, size: 'Small' }));
      const next = page < pages - 1 ? page + 1 : 0;
      actions.push(executeAction(next > 0 ? 'Show more' : 'Back to the first page', { verb: 'run', command: spec.command, page: next }));
    }
  }
  actions.push(...(spec.actions ?? []), refreshAction(spec.command, page));
  body.push(asOfFooter(spec, spec.footnotes));
  return adaptiveCard(body, { summary: spec.summary, actions });
}

/** The first lookup in an organisation builds its bill or invoice index; a large one takes longer than a chat answer may. */
export function indexBuildingCard(input: Omit<ListContext, 'page'> & { what: 'invoices' | 'bills'; indexed: number }): CardReply {
  const n = input.indexed.toLocaleString(input.fmt.locale);
  const body = [
    title(`Indexing this organisation's ${input.what}`),
    text(
      `BILL can't search ${input.what} by number, so billbridge lists them once and then keeps up with changes. ${n} ${input.what} are indexed so far; this happens only once per organisation.`,
    ),
    text('Try again in a minute (Refresh).', { subtle: true }),
    asOfFooter(input),
  ];
  return adaptiveCard(body, {
    summary: `Indexing this organisation's ${input.what} (${n} so far); try again in a minute.`,
    actions: [refreshAction(input.command)],
  });
}
