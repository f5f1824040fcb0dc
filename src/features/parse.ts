// Tolerant command-line parsing: Teams HTML, <at> mentions, entities, spacing, case and trailing punctuation.
import { decodeHTML } from 'entities';
import { distance } from 'fastest-levenshtein';

/** Longest command line we try to understand; longer input is answered with a hint, not parsed. */
export const MAX_COMMAND_LENGTH = 1000;

/**
 * Turns what Teams delivers ("<p><at>billbridge</at>&nbsp;Bills&nbsp;due 14!</p>") into a plain
 * command line ("Bills due 14"). Mentions anywhere are removed; argument case is kept.
 */
export function normalizeCommandText(raw: string): string {
  let s = raw;
  // Mentions: Teams wraps them in <at>...</at> (also HTML-escaped when the message is rich text).
  s = s.replace(/<at\b[^>]*>[\s\S]*?<\/at>/gi, ' ');
  s = s.replace(/&lt;at\b[\s\S]*?&lt;\/at&gt;/gi, ' ');
  // Other markup (<p>, <div>, <br>, <span ...>) becomes white space.
  s = s.replace(/<\/?[a-z][^>]*>/gi, ' ');
  s = decodeHTML(s);
  // Zero-width and non-breaking spaces, control characters (C0, DEL and C1: \p{Cc}).
  s = s.replace(/[\u200B-\u200D\u2060\uFEFF]/g, '');
  s = s.replace(/[\s\u00A0\p{Cc}]+/gu, ' ').trim();
  // A leading typed "@billbridge" (plain text, not a real mention) or a slash.
  s = s.replace(/^(?:@\S+\s*)+/, '').replace(/^\//, '');
  // Trailing punctuation: "bills due?" / "help!".
  s = s.replace(/[\s.!?,;:…]+$/u, '');
  return s.trim();
}

export type ParseResult =
  | { kind: 'empty' }
  | { kind: 'tooLong'; length: number }
  | { kind: 'command'; name: string; args: string[]; argText: string }
  | {
      kind: 'unknown';
      text: string;
      suggestion: string | undefined;
      /** What was typed after the suggestion's words, original case. */ suggestionArgs: string;
    };

/** Matches the longest registered name (lower-case words) that is a word-prefix of the line (case-insensitive). */
export function parseCommandLine(raw: string, names: readonly string[]): ParseResult {
  if (raw.length > MAX_COMMAND_LENGTH * 4) return { kind: 'tooLong', length: raw.length };
  const line = normalizeCommandText(raw);
  if (line === '') return { kind: 'empty' };
  if (line.length > MAX_COMMAND_LENGTH) return { kind: 'tooLong', length: line.length };
  const tokens = line.split(' ').filter(Boolean);
  const lower = tokens.map((t) => t.toLowerCase());
  // Of the names that are whole words at the line's start, the longest has the most words.
  const typed = `${lower.join(' ')} `;
  let best: string | undefined;
  for (const name of names) {
    if (typed.startsWith(name) && typed[name.length] === ' ' && name.length > (best?.length ?? 0)) best = name;
  }
  if (best) {
    const args = tokens.slice(best.split(' ').length);
    return { kind: 'command', name: best, args, argText: args.join(' ') };
  }
  const suggestion = suggestCommand(lower, names);
  const suggestionArgs = suggestion ? tokens.slice(suggestion.split(' ').length).join(' ') : '';
  return { kind: 'unknown', text: line, suggestion, suggestionArgs };
}

/** The registered name closest to what was typed (edit distance), when it is close enough to help. */
function suggestCommand(lowerTokens: string[], names: readonly string[]): string | undefined {
  let best: { name: string; score: number } | undefined;
  for (const name of names) {
    const words = name.split(' ').length;
    const typed = lowerTokens.slice(0, words).join(' ');
    if (typed === '') continue;
    // Normalised by length so "invoise" -> "invoice" and "bils due" -> "bills due" both qualify.
    const score = distance(typed, name) / Math.max(name.length, typed.length);
    if (!best || score < best.score || (score === best.score && words > 1)) best = { name, score };
  }
  return best && best.score <= 0.5 ? best.name : undefined;
}
