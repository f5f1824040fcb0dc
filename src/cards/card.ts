// Adaptive Card 1.5 building blocks: pure functions from data to card JSON, no I/O.
import type { Tone } from './words.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json | undefined };
export interface CardElement {
  type: string;
  [key: string]: Json | undefined;
}
export type CardAction = CardElement & { title: string };

export interface AdaptiveCard {
  type: 'AdaptiveCard';
  $schema: string;
  version: '1.5';
  body: CardElement[];
  actions?: CardAction[];
  [key: string]: Json | undefined;
}

export interface CardReply {
  card: AdaptiveCard;
  /** Shown in notifications and read by screen readers; plain text, one line. */
  summary: string;
}

/** The data an Action.Execute / Action.Submit carries back to the bot. */
export interface ActionData {
  verb: string;
  [key: string]: Json | undefined;
}

/** The text cut to `max` characters, an ellipsis last when it was longer. */
export function shorten(s: string, max = 60): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** Characters of BILL's or a person's text a card shows in one line (a name, a number, a cell), and in one note. */
export const MAX_LINE = 200;
export const MAX_NOTE = 1_000;

/** Text from BILL or a person, cut (so no text can take a card past Teams' 100 KB), then escaped for Teams markdown. */
export function clipped(s: string, max = MAX_LINE): string {
  return escapeMarkdown(shorten(s, max));
}

export function adaptiveCard(body: CardElement[], opts: { summary: string; actions?: CardAction[] }): CardReply {
  const summary = shorten(opts.summary.replace(/\s+/g, ' ').trim(), 200);
  const card: AdaptiveCard = {
    type: 'AdaptiveCard',
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    version: '1.5',
    body,
    fallbackText: summary,
    speak: summary,
    msteams: { width: 'Full' },
  };
  const actions = opts.actions ?? [];
  // Teams shows card actions in one row that on a phone (288 px inside the card) neither wraps nor scrolls: the last
  // buttons are hidden. Estimated on the wide side (a title 6.2 px a character, measured with the render test's fonts;
  // 30 px padding a button, 8 px between), buttons that would not fit go one per line, each in its own ActionSet.
  const width = actions.reduce((w, a, i) => w + a.title.length * 6.2 + 30 + (i > 0 ? 8 : 0), 0);
  if (actions.length > 0 && width <= 288) card.actions = actions;
  else
    body.push(...actions.map((a, i) => ({ type: 'ActionSet', actions: [a], spacing: i === 0 ? 'Medium' : 'Small', separator: i === 0 })));
  return { card, summary };
}

/**
 * THE place where text from a person or from BILL becomes card text. Teams renders a markdown subset there (and
 * linkifies bare addresses, drops `<...>`): every character that can start a construct is escaped, so text shows as typed:
 * - always: \ * ` [ ] ( ) < > ~ | ! (links, images, code, strike-through, tables, autolinks and HTML);
 * - `_` that could open or close emphasis ("INV_2026" stays); a leading list or heading marker (# + - = "1." "1)");
 * - a `.` between a letter or digit and a letter ("evil.example") and the `:` of "://", which Teams would link
 *   ("$1,250.00" and "INV-2026.11" stay); `{{`, which Adaptive Cards read as {{DATE()}}; line breaks become spaces.
 * Our own text (**bold** labels) is not passed through here; text we compose around escaped values is.
 */
export function escapeMarkdown(value: string): string {
  return value
    .replace(/\r\n?|\n/g, ' ')
    .replace(/[\\*`[\]()<>~|!]/g, (c) => `\\${c}`)
    .replace(/(?<![\p{L}\p{N}])_|_(?![\p{L}\p{N}])/gu, '\\_')
    .replace(/(?<=[\p{L}\p{N}])\.(?=\p{L})/gu, '\\.')
    .replace(/:(?=\/\/)/g, '\\:')
    .replace(/\{(?=\{)|(?<=\{)\{/g, '\\{')
    .replace(/^(\s*)([#+=-])/, '$1\\$2')
    .replace(/^(\s*\d+)([.)])/, '$1\\$2');
}

/** An escaped id ("…k8S0", "PIO-63517") kept on one line by word joiners (U+2060, ignored by the command parser) around
 * each ellipsis, hyphen, dash or slash; over 24 characters it could not fit a 320 px column and may wrap. */
export function keepTogether(escaped: string): string {
  if (escaped.length > 24) return escaped;
  return escaped.replace(/(?<!\\)[-‐‑–—/…]/g, '\u2060$&\u2060').replace(/^\u2060|\u2060$/g, '');
}

/** "…1234": the end of a BILL id; short ids are masked whole. Bank and tax numbers never reach a card at all. */
export function shortId(id: string): string {
  const s = id.trim();
  return s.length > 4 ? `…${s.slice(-4)}` : s === '' ? '' : '…';
}

export function shortRef(id: string): string {
  return keepTogether(shortId(id));
}

/** The inverse of escapeMarkdown, for plain-text places (a summary built from an escaped line). */
export function unescapeMarkdown(value: string): string {
  return value.replace(/\\([\\*`[\]()<>~|!_#+=.:{}-])/g, '$1');
}

/** Our own markdown (**command**, [link](url)) as plain text for a summary; escaped text inside keeps its characters. */
export function plainText(markdown: string): string {
  return unescapeMarkdown(markdown.replace(/\*\*(.+?)\*\*/g, '$1').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
}

export function title(text: string): CardElement {
  return { type: 'TextBlock', text, size: 'Large', weight: 'Bolder', wrap: true, style: 'heading' };
}

export function subtitle(text: string): CardElement {
  return { type: 'TextBlock', text, isSubtle: true, spacing: 'None', wrap: true };
}

// No colour option: Teams' good/warning/attention text colours fall below 4.5:1 contrast in its light or dark theme.
export function text(
  value: string,
  opts: { weight?: 'Bolder'; subtle?: boolean; size?: 'Small' | 'Medium'; separator?: boolean } = {},
): CardElement {
  const { subtle, ...rest } = opts;
  return { type: 'TextBlock', text: value, wrap: true, ...rest, ...(subtle ? { isSubtle: true } : {}) };
}

export function facts(pairs: Array<[string, string]>): CardElement {
  return { type: 'FactSet', facts: pairs.map(([t, v]) => ({ title: t, value: v })) };
}

export interface TableColumn {
  header: string;
  /** Shown right of the row's name at the width it needs, never wrapped (an amount). */
  figure?: boolean;
  /** On the row's second line the value stands alone instead of "Header: value" (it already says what it is). */
  plain?: boolean;
}

/** A tone as Teams names its colours: container styles and chart points. */
export const TONE_STYLE = { Attention: 'attention', Warning: 'warning', Good: 'good' } as const;

/** A list that reads the same on a 320 px phone (a real table broke amounts mid-word there): each row is its name with
 * the figure on the right, then "Header: value" runs that wrap between words. `rowColors` tints rows (the words say it too). */
export function table(columns: TableColumn[], rows: string[][], opts: { rowColors?: Tone[] } = {}): CardElement {
  const figureAt = columns.findIndex((c) => c.figure);
  const nameAndFigure = (name: CardElement, figure: CardElement | undefined): CardElement =>
    figure === undefined
      ? name
      : {
          type: 'ColumnSet',
          columns: [
            { type: 'Column', width: 'stretch', items: [name] },
            { type: 'Column', width: 'auto', items: [figure] },
          ],
        };
  const header = (i: number, right = {}) => ({ type: 'TextBlock', text: columns[i]?.header ?? '', weight: 'Bolder', wrap: true, ...right });
  const items = figureAt > 0 ? [nameAndFigure(header(0), header(figureAt, { horizontalAlignment: 'Right' }))] : [];
  // A label never breaks: no-break spaces between its words ("Days late"), word joiners around dashes ("61–90").
  const labels = columns.map((c) => unescapeMarkdown(c.header).replace(/ /g, '\u00a0').replace(/[-–]/g, '\u2060$&\u2060'));
  rows.forEach((r, n) => {
    // One run per column, in order, so every cell can be read back; TextRuns take no markdown, so it is unescaped.
    const inlines: Json[] = [];
    columns.forEach((c, i) => {
      const value = r[i] ?? '';
      if (i === 0 || i === figureAt || value === '') return;
      // No-break spaces: a line never ends in "90+:" or starts with "·".
      if (inlines.length > 0) inlines.push({ type: 'TextRun', text: '\u00a0· ', isSubtle: true });
      if (!c.plain) inlines.push({ type: 'TextRun', text: `${labels[i]}:\u00a0`, isSubtle: true });
      inlines.push({ type: 'TextRun', text: unescapeMarkdown(value) });
    });
    const row: CardElement[] = [
      nameAndFigure(
        { type: 'TextBlock', text: r[0] ?? '', wrap: true, ...(figureAt > 0 ? {} : { weight: 'Bolder' }) },
        figureAt > 0 ? { type: 'TextBlock', text: r[figureAt] ?? '', wrap: true, horizontalAlignment: 'Right' } : undefined,
      ),
    ];
    if (inlines.length > 0) row.push({ type: 'RichTextBlock', inlines, spacing: 'None' });
    const tone = opts.rowColors?.[n];
    items.push({ type: 'Container', items: row, separator: true, spacing: 'Small', ...(tone ? { style: TONE_STYLE[tone] } : {}) });
  });
  return { type: 'Container', items };
}

type ContainerStyle = 'emphasis' | (typeof TONE_STYLE)[keyof typeof TONE_STYLE];
export function container(items: CardElement[], opts: { style?: ContainerStyle; separator?: boolean } = {}): CardElement {
  return { type: 'Container', items, ...opts };
}

export function footer(value: string): CardElement {
  return { type: 'TextBlock', text: value, size: 'Small', isSubtle: true, wrap: true, separator: true };
}

/** Universal Action (1.5) with an Action.Submit fallback for clients without Universal Actions. */
export function executeAction(titleText: string, data: ActionData): CardAction {
  return { type: 'Action.Execute', title: titleText, verb: data.verb, data, fallback: submitAction(titleText, data) };
}

export function submitAction(titleText: string, data: ActionData): CardAction {
  return { type: 'Action.Submit', title: titleText, data };
}
