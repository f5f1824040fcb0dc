// Parses cards with Microsoft's adaptivecards library (the renderer Teams' web client is built on) at 1.5.
import { createRequire } from 'node:module';
import { JSDOM } from 'jsdom';

const require = createRequire(import.meta.url);
let AC: typeof import('adaptivecards') | undefined;

function lib(): typeof import('adaptivecards') {
  if (!AC) {
    // The ESM entry of adaptivecards cannot load in Node; the UMD bundle needs DOM globals.
    const dom = new JSDOM('<!doctype html><html><body></body></html>');
    const g = globalThis as Record<string, unknown>;
    for (const key of [
      'window',
      'document',
      'HTMLElement',
      'HTMLButtonElement',
      'HTMLDivElement',
      'HTMLInputElement',
      'HTMLTextAreaElement',
      'HTMLSelectElement',
      'Node',
      'navigator',
      'getComputedStyle',
    ]) {
      if (g[key] === undefined) g[key] = (dom.window as unknown as Record<string, unknown>)[key];
    }
    AC = require('adaptivecards/dist/adaptivecards.js') as typeof import('adaptivecards');
  }
  return AC;
}

/**
 * An Adaptive Card, or any element or action in one, as the bot sends it. Every field is optional (a test asserts the
 * ones it needs), and fields not named here read as `unknown`.
 */
export interface CardJson {
  type?: string;
  version?: string;
  id?: string;
  text?: string;
  title?: string;
  url?: string;
  verb?: string;
  body?: CardJson[];
  items?: CardJson[];
  columns?: CardJson[];
  actions?: CardJson[];
  inlines?: CardJson[];
  facts?: Array<{ title?: string; value?: string }>;
  data?: Record<string, unknown>;
  refresh?: { action?: CardJson; userIds?: string[] };
  [key: string]: unknown;
}

export interface CardCheck {
  /** Parse errors and warnings reported by the library. */
  problems: string[];
  /** UTF-8 size of the card JSON. */
  bytes: number;
}

export function checkCard(card: unknown): CardCheck {
  const ac = lib();
  const ctx = new ac.SerializationContext(ac.Versions.v1_5);
  const parsed = new ac.AdaptiveCard();
  parsed.parse(card, ctx);
  const problems: string[] = [];
  // An element this library does not know (Teams' Chart.*) is no problem when every one of them carries a fallback.
  const known = withFallbackOnly(card);
  for (let i = 0; i < ctx.eventCount; i++) {
    const e = ctx.getEventAt(i);
    if (e.event === ac.ValidationEvent.UnknownElementType && [...known].some((t) => e.message.includes(`"${t}"`))) continue;
    problems.push(`${ac.ValidationEvent[e.event]}: ${e.message}`);
  }
  for (const e of parsed.validateProperties().validationEvents) {
    problems.push(`${ac.ValidationEvent[e.event]}: ${e.message}`);
  }
  const version = (card as { version?: unknown }).version;
  if (version !== '1.5') problems.push(`version is ${JSON.stringify(version)}, not 1.5`);
  return { problems, bytes: Buffer.byteLength(JSON.stringify(card), 'utf8') };
}

/** Element types that appear in the card only with a `fallback`. */
function withFallbackOnly(card: unknown): Set<string> {
  const withFallback = new Set<string>();
  const without = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const { type, fallback } = node as { type?: unknown; fallback?: unknown };
      if (typeof type === 'string') (fallback === undefined ? without : withFallback).add(type);
      Object.values(node).forEach(walk);
    }
  };
  walk(card);
  return new Set([...withFallback].filter((t) => !without.has(t)));
}
