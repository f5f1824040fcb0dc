// Reading the finance cards back in tests: table rows, facts, text (markdown escapes removed), buttons; and asking
// the bot through the dispatcher or over HTTP as a channel member would.
import { expect } from 'vitest';
import type { BillbridgeApp } from '../../src/app.js';
import type { CommandRequest, TurnResult } from '../../src/features/dispatch.js';
import type { ConversationScope } from '../../src/features/types.js';
import { TENANT, teamIds } from './activities.js';
import { checkCard } from './cards.js';

/** Text as a person reads it: markdown escapes removed. */
export function plain(s: string): string {
  return s.replace(/\\(.)/g, '$1');
}

interface Node {
  type?: string;
  [k: string]: unknown;
}

function walk(node: unknown, visit: (n: Node) => void): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const x of node) walk(x, visit);
    return;
  }
  visit(node as Node);
  for (const v of Object.values(node)) walk(v, visit);
}

interface Run {
  text?: string;
  isSubtle?: boolean;
}

/** A row of the stacked list `table()` draws: the name (and figure) on top, one run per other column below. */
function stackedRow(n: Node): string[] | undefined {
  const items = n.items as Node[] | undefined;
  if (n.type !== 'Container' || n.separator !== true || !Array.isArray(items) || items.length < 1 || items.length > 2) return undefined;
  const [top, below] = items;
  if (below && below.type !== 'RichTextBlock') return undefined;
  const texts = (el: Node | undefined): string[] =>
    el?.type === 'TextBlock'
      ? [String(el.text)]
      : el?.type === 'ColumnSet'
        ? (el.columns as Node[]).flatMap((c) => (c.items as Node[]).flatMap(texts))
        : [];
  const head = texts(top);
  if (head.length === 0) return undefined;
  // Label runs ("Invoice #: ") and separators are subtle; each value is one run.
  const values = ((below?.inlines as Run[] | undefined) ?? []).filter((r) => !r.isSubtle).map((r) => r.text ?? '');
  return [head[0]!, ...values, ...head.slice(1)].map(plain);
}

/**
 * Rows of the first list on the card (header row left out), as plain strings: the name, the other columns in order,
 * and the figure (the amount drawn right of the name) last.
 */
export function tableRows(card: unknown): string[][] {
  let found: string[][] | undefined;
  walk((card as Node).body, (n) => {
    if (found || n.type !== 'Container' || !Array.isArray(n.items)) return;
    const rows = (n.items as Node[]).map(stackedRow);
    const header = (n.items as Node[])[0]?.type === 'ColumnSet' ? 1 : 0;
    if (rows.length > header && rows.slice(header).every(Boolean)) found = rows.slice(header) as string[][];
  });
  return found ?? [];
}

/** Every FactSet entry on the card, title -> value (plain). Later duplicates win. */
export function factsOf(card: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  walk((card as Node).body, (n) => {
    if (n.type === 'FactSet') for (const f of n.facts as Array<{ title: string; value: string }>) out[plain(f.title)] = plain(f.value);
  });
  return out;
}

/** All TextBlock texts, plain, joined by newlines. */
export function textOf(card: unknown): string {
  const parts: string[] = [];
  walk((card as Node).body, (n) => {
    if (n.type === 'TextBlock' && typeof n.text === 'string') parts.push(plain(n.text));
  });
  return parts.join('\n');
}

export interface Button {
  title: string;
  data: Record<string, unknown>;
}

export function buttons(card: unknown): Button[] {
  const actions = ((card as Node).actions ?? []) as Array<{ title: string; data: Record<string, unknown> }>;
  // Buttons too many for one row on a phone are stacked, each in an ActionSet at the end of the body.
  const body = ((card as Node).body ?? []) as Array<{ type: string; actions?: Array<{ title: string; data: Record<string, unknown> }> }>;
  for (const el of body) if (el.type === 'ActionSet' && el.actions) actions.push(...el.actions);
  return actions.map((a) => ({ title: a.title, data: a.data }));
}

export function button(card: unknown, title: string): Button | undefined {
  return buttons(card).find((b) => b.title === title);
}

/** A valid 1.5 card under 40 KB (the bar every card must clear). */
export function expectValidCard(card: unknown): void {
  const check = checkCard(card);
  expect(check.problems).toEqual([]);
  expect(check.bytes).toBeLessThan(40 * 1024);
}

export function money(n: number, currency = 'USD', locale = 'en-US'): string {
  return new Intl.NumberFormat(locale, { style: 'currency', currency }).format(n);
}

/** Cent-exact sum. */
export function total(amounts: number[]): number {
  return amounts.reduce((s, a) => s + Math.round(a * 100), 0) / 100;
}

/** The channel scope a test bot resolves to the demo organisation. */
export function channelScope(channel = 'finance'): ConversationScope {
  const ids = teamIds(channel);
  return {
    kind: 'channel',
    tenantId: TENANT,
    teamId: ids.team,
    aadGroupId: undefined,
    channelId: ids.channel,
    conversationId: `${ids.channel};messageid=1`,
    serviceUrl: 'http://127.0.0.1:9/',
  };
}

let seq = 0;

/** Runs a command line through the app's dispatcher: the command alone (no rate, no audit record, no typing). */
export async function ask(app: BillbridgeApp, text: string, opts: Partial<CommandRequest> = {}): Promise<TurnResult> {
  seq++;
  return app.dispatcher.run({
    text,
    scope: channelScope(),
    caller: { id: `29:tester-${seq % 50}`, aadObjectId: undefined, name: 'Tester' },
    correlationId: `test${seq}`,
    ...opts,
  });
}

/** Every row of a list card, following its pages (page=0,1,... through the dispatcher) until the last. */
export async function allRows(
  app: BillbridgeApp,
  text: string,
  opts: Partial<CommandRequest> = {},
): Promise<{ rows: string[][]; first: TurnResult }> {
  const first = await ask(app, text, opts);
  const rows = [...tableRows(first.reply.card)];
  let page = 0;
  let card: unknown = first.reply.card;
  while (button(card, 'Show more')) {
    page++;
    const next = await ask(app, String(button(card, 'Show more')!.data.command), { ...opts, page });
    expect(next.outcome).toBe('ok');
    rows.push(...tableRows(next.reply.card));
    card = next.reply.card;
    if (page > 500) throw new Error('too many pages');
  }
  return { rows, first };
}
