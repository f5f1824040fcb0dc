// Reading Teams' chart elements back from a card, and the card a host without charts lays out instead.
import type { CardJson } from './cards.js';

export interface Chart {
  type: string;
  title: string;
  data: Array<{ x?: string; y?: number; legend?: string; value?: number; color?: string }>;
  fallback: CardJson | 'drop';
  [key: string]: unknown;
}

/** Every chart on the card, in card order. */
export function chartsOf(card: unknown): Chart[] {
  const found: Chart[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      if (String((node as { type?: unknown }).type).startsWith('Chart.')) found.push(node as Chart);
      else Object.values(node).forEach(walk);
    }
  };
  walk(card);
  return found;
}

/** The card a host without charts lays out: each chart replaced by its fallback, or left out when that is 'drop'. */
export function withoutCharts(node: unknown): unknown {
  if (Array.isArray(node))
    return node.flatMap((n: unknown) => {
      const fallback = (n as { type?: unknown; fallback?: unknown } | null)?.fallback;
      if (!String((n as { type?: unknown } | null)?.type).startsWith('Chart.')) return [withoutCharts(n)];
      return fallback === 'drop' ? [] : [withoutCharts(fallback)];
    });
  if (node && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, withoutCharts(v)]));
  return node;
}
