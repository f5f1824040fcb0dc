// What of a card Teams renders as markdown, plain text or links, and what markup in it would still be live.
import type { CardJson } from './cards.js';

/** Every node of a card (depth first), so each reader below picks what it needs in one line. */
function walk(card: unknown, visit: (node: CardJson) => void): void {
  if (!card || typeof card !== 'object') return;
  if (Array.isArray(card)) return card.forEach((n) => walk(n, visit));
  visit(card as CardJson);
  for (const v of Object.values(card)) walk(v, visit);
}

/** Every string Teams renders as markdown: TextBlock texts, fact titles and values (table cells are TextBlocks). */
export function markdownTexts(card: unknown): string[] {
  const out: string[] = [];
  walk(card, (node) => {
    if (node.type === 'TextBlock' && typeof node.text === 'string') out.push(node.text);
    if (node.type === 'FactSet') for (const f of node.facts ?? []) out.push(String(f.title), String(f.value));
  });
  return out;
}

/** TextRun texts: plain text in Teams (no markdown), so they carry BILL text as it is, without backslashes. */
export function plainRuns(card: unknown): string[] {
  const out: string[] = [];
  walk(card, (node) => {
    if (node.type === 'TextRun' && typeof node.text === 'string') out.push(node.text);
  });
  return out;
}

/** Every URL an action or selectAction of the card would open. */
export function actionUrls(card: unknown): string[] {
  const out: string[] = [];
  walk(card, (node) => {
    if (typeof node.type === 'string' && node.type.startsWith('Action.') && typeof node.url === 'string') out.push(node.url);
  });
  return out;
}

/**
 * Markup Teams would act on in a markdown string: whatever is left once backslash-escaped characters are taken out
 * must hold no link, image, HTML tag, code, strike-through, emphasis or linkifiable address.
 */
export function liveMarkup(text: string): string[] {
  const bare = text.replace(/\\./g, '');
  const found: string[] = [];
  if (/[[\]<>`~]/.test(bare)) found.push('link, image, tag, code or strike-through');
  if (/(?<!\*)\*(?!\*)/.test(bare)) found.push('single * emphasis');
  if (/(^|\W)_\w[^_]*_(\W|$)/.test(bare)) found.push('_ emphasis');
  if (/:\/\/|evil\.example|www\./i.test(bare)) found.push('linkifiable address');
  return found;
}
