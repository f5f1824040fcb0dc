// Money, dates and "today" as a finance person reads them: in the bill's currency, the bot's locale and time zone.
import { kept } from '../infra/bounded.js';
import { calendarDay, dateInZone } from '../infra/calendar.js';

export interface FormatOptions {
  locale: string;
  timeZone: string;
}

// Locales come from activities: each map is bounded (kept).
const moneyFormats = new Map<string, Intl.NumberFormat>();
const percentFormats = new Map<string, Intl.NumberFormat>();
/** A list card formats every row: one formatter per call made a 2,000-bill answer cost ~50 MB of RSS. */
const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** `$1,250.00` for en-US/USD; unknown or missing currency codes fall back to USD. */
export function money(amount: number | undefined | null, currency: string | undefined, locale: string): string {
  const code = currency && /^[A-Z]{3}$/.test(currency) ? currency : 'USD';
  // Intl takes any three-letter code (one it does not know shows as the code itself).
  const fmt = kept(moneyFormats, `${locale}|${code}`, () => new Intl.NumberFormat(locale, { style: 'currency', currency: code }));
  return fmt.format(typeof amount === 'number' && Number.isFinite(amount) ? amount : 0);
}

/** `85%` for en-US; '—' when there is no ratio (a budget without a limit). */
export function percent(ratio: number | undefined, locale: string): string {
  if (ratio === undefined) return '—';
  return kept(percentFormats, locale, () => new Intl.NumberFormat(locale, { style: 'percent', maximumFractionDigits: 0 })).format(ratio);
}

function dateFormat(locale: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  return kept(dateFormats, `${locale}|${JSON.stringify(options)}`, () => new Intl.DateTimeFormat(locale, options));
}

/** Adds in thousandths: totals of many bills do not drift (0.1 + 0.2) and KWD or BHD totals keep three decimals. */
export function sum(amounts: Array<number | undefined | null>): number {
  let mills = 0;
  for (const a of amounts) if (typeof a === 'number' && Number.isFinite(a)) mills += Math.round(a * 1000);
  return mills / 1000;
}

/** Whole days from `from` to `to` (both yyyy-MM-dd); positive when `to` is later. */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

/** A BILL calendar date (yyyy-MM-dd) for people: "Nov 21, 2026" in en-US; '—' for one that is no day (2026-13-45). */
export function calendarDate(isoDate: string | undefined, locale: string): string {
  const day = calendarDay(isoDate);
  // Formatting an invalid Date throws (RangeError), and a card drawn from BILL's record must not.
  if (!day) return '—';
  const at = new Date(`${day}T00:00:00Z`);
  return dateFormat(locale, { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' }).format(at);
}

/** The day an instant fell on in the bot's time zone ("Mar 8, 2026" for 03:00 UTC on the 9th in New York), if any. */
export function instantDate(instant: unknown, opts: FormatOptions): string | undefined {
  const at = typeof instant === 'string' ? Date.parse(instant) : Number.NaN;
  return Number.isFinite(at) ? calendarDate(dateInZone(at, opts.timeZone), opts.locale) : undefined;
}

/** An instant for people, in the bot's time zone: "Nov 21, 2026, 10:42 AM". */
export function dateTime(instant: Date | number | string | undefined, opts: FormatOptions): string {
  const d = new Date(instant ?? Number.NaN);
  if (Number.isNaN(d.getTime())) return '—';
  return dateFormat(opts.locale, { dateStyle: 'medium', timeStyle: 'short', timeZone: opts.timeZone }).format(d);
}

/** "10:42" in the bot's time zone, for "as of 10:42". */
export function clockTime(instant: Date | number, opts: FormatOptions): string {
  return dateFormat(opts.locale, { hour: '2-digit', minute: '2-digit', timeZone: opts.timeZone }).format(new Date(instant));
}

/** "today", "tomorrow", "in 3 days", "2 days late": a due date in a table cell. */
export function dueShort(dueDate: string, today: string): string {
  const day = calendarDay(dueDate);
  if (!day) return 'no due date';
  const d = daysBetween(today, day);
  if (d < 0) return d === -1 ? '1 day late' : `${-d} days late`;
  return d === 0 ? 'today' : d === 1 ? 'tomorrow' : `in ${d} days`;
}

/** "Due today", "Due tomorrow", "Due in 5 days", "Overdue by 3 days" relative to today in the team's zone. */
export function dueInWords(dueDate: string | undefined, today: string): string {
  const day = calendarDay(dueDate);
  if (!day) return 'No due date';
  const d = daysBetween(today, day);
  if (d >= 0) return `Due ${dueShort(day, today)}`;
  return d === -1 ? 'Overdue by 1 day' : `Overdue by ${-d} days`;
}
