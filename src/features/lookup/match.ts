// Reading free text (a typed line, a Teams message) for what might name a BILL record: number-like tokens and words,
// bounded, pure, and never turned into a BILL filter; the mirror's records are matched against them in memory.
import { decodeHTML } from 'entities';
import { foldName, normalizeNumber } from '../../mirror/records.js';

/** Characters of a message read; a longer message is read up to here (Teams allows far more than anyone writes). */
const MAX_TEXT_CHARS = 8_000;
/** Tokens considered, and number-like ones kept: work stays small whatever the text. */
const MAX_TOKENS = 400;
const MAX_NUMBERS = 20;
/** Longest token taken for a number (BILL invoice numbers are short; the `bill` command refuses > 100). */
const MAX_NUMBER_LENGTH = 40;

/** What a text might name: number-like tokens (normalised as the mirror keys them) and folded words. */
export interface Wanted {
  /** Number-like tokens as typed (trimmed of punctuation), distinct by normalised form, in order. */
  numbers: string[];
  numberKeys: Set<string>;
  /** Folded words (letters and digits), in order. */
  words: string[];
  /** Where each word occurs, for whole-name matches. */
  positions: Map<string, number[]>;
}

/** Words too common in a finance chat to name a vendor or customer by themselves, and a name's legal form; a name
 * that is only these still matches as a whole name. */
const COMMON = new Set(
  (
    'the and for from with our your did does was were has have had pay paid bill bills invoice invoices vendor vendors ' +
    'customer customers due this that what when who why how any all not yet can will just amount total payment ' +
    'inc llc ltd co corp company group partners services holdings gmbh sarl llp plc'
  ).split(' '),
);

/** Number-like: starts with a letter or digit, has a digit, and only letters, digits and - _ / . # inside. */
const NUMBER_LIKE = /^#?[\p{L}\p{N}][\p{L}\p{N}\-_/.]*$/u;
const EDGE_PUNCTUATION = /^[\s"'“”‘’«»()[\]{}<>,;:!?.…*_~`]+|[\s"'“”‘’«»()[\]{}<>,;:!?.…*_~`]+$/gu;

/** Words that say a number follows ("invoice 1042", "bill no. 77"): a number without letters (1042, 2026-03-10, 1.200)
 * counts only after one of these, after '#', or alone; otherwise years, dates and amounts would name invoices. */
const NUMBER_CUES = new Set(['invoice', 'inv', 'bill', 'no', 'nr', 'number', 'num', 'ref']);

export function readText(raw: string): Wanted {
  const numbers: string[] = [];
  const numberKeys = new Set<string>();
  const words: string[] = [];
  const positions = new Map<string, number[]>();
  // Teams HTML to plain text (mentions dropped, tags to spaces, entities decoded), cut to MAX_TEXT_CHARS first.
  const plain = decodeHTML(
    raw
      .slice(0, MAX_TEXT_CHARS)
      .replace(/<at\b[^>]{0,200}>[^<]{0,200}<\/at>/gi, ' ')
      .replace(/<[^>]{0,500}>/g, ' '),
  );
  const tokens = plain
    .split(/\s+/, MAX_TOKENS)
    .map((token) => token.replace(EDGE_PUNCTUATION, '').replace(/['’]s$/i, ''))
    .filter((bare) => bare !== '');
  let previous = '';
  for (const bare of tokens) {
    const cued = /\p{L}/u.test(bare) || bare.startsWith('#') || NUMBER_CUES.has(previous) || tokens.length === 1;
    if (cued && numberKeys.size < MAX_NUMBERS && bare.length <= MAX_NUMBER_LENGTH && /\p{N}/u.test(bare) && NUMBER_LIKE.test(bare)) {
      const key = normalizeNumber(bare);
      if (!numberKeys.has(key)) {
        numberKeys.add(key);
        numbers.push(bare.replace(/^#/, ''));
      }
    }
    for (const word of nameWords(bare)) {
      const at = positions.get(word);
      if (at) at.push(words.length);
      else positions.set(word, [words.length]);
      words.push(word);
    }
    previous = bare.toLowerCase();
  }
  return { numbers, numberKeys, words, positions };
}

/** A name (or a token) as folded words: "Smith, Barney & Co" -> smith barney co; "O'Neil" -> o neil. */
function nameWords(name: string): string[] {
  return foldName(name)
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '');
}

/** Whether the text names this vendor or customer: all its words in a row, or its first word (when that says something). */
export function matchName(name: string, wanted: Wanted): 'whole' | 'word' | undefined {
  const words = nameWords(name);
  const first = words[0];
  if (first === undefined) return undefined;
  const starts = wanted.positions.get(first);
  if (!starts) return undefined;
  if (starts.some((at) => words.every((w, i) => wanted.words[at + i] === w))) return 'whole';
  return first.length >= 3 && !COMMON.has(first) && !/^\p{N}+$/u.test(first) ? 'word' : undefined;
}
