// Digest schedules in the bot's time zone: parsing "daily 09:00" / "weekly monday 09:00", and the slot (the
// scheduled instant) a moment belongs to. Pure: no clock, no I/O.
import { addDays, dateInZone, zoneOffset } from '../infra/calendar.js';

export interface DigestSchedule {
  every: 'daily' | 'weekly';
  /** ISO weekday for weekly digests: 1 = Monday ... 7 = Sunday. */
  weekday?: number;
  /** "HH:MM", 24-hour, in BOT_TIMEZONE. */
  time: string;
}

const HALF_DAY_MS = 12 * 3_600_000;
const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'] as const;

export type DigestCommand =
  { action: 'set'; schedule: DigestSchedule } | { action: 'off' | 'now' | 'show' } | { action: 'error'; problem: string };

/** "9:00", "09:00", "9am", "5:30 pm", "17.30" -> "HH:MM"; undefined when it is not a time of day. */
export function parseTime(raw: string): string | undefined {
  const m = /^(\d{1,2})(?:[:.h](\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?$/i.exec(raw.trim());
  if (!m) return undefined;
  let h = Number(m[1]);
  const min = m[2] === undefined ? 0 : Number(m[2]);
  const ampm = m[3]?.toLowerCase().replace(/\./g, '');
  if (m[2] === undefined && !ampm) return undefined;
  if (ampm) {
    if (h < 1 || h > 12) return undefined;
    if (ampm === 'am' && h === 12) h = 0;
    if (ampm === 'pm' && h !== 12) h += 12;
  }
  if (h > 23 || min > 59) return undefined;
  return `${String(h).padStart(2, '0')}:${String(min).padStart(2, '0')}`;
}

/** "mon", "Monday", "mondays" -> 1. */
export function parseWeekday(raw: string): number | undefined {
  const w = raw.trim().toLowerCase().replace(/s$/, '');
  if (w.length < 3) return undefined;
  const i = WEEKDAYS.findIndex((d) => d.startsWith(w));
  return i < 0 ? undefined : i + 1;
}

/** `digest` arguments: daily <HH:MM> | weekly <day> <HH:MM> | off | now | (nothing: show). */
export function parseDigestArgs(args: string[]): DigestCommand {
  const words = args.map((a) => a.trim()).filter(Boolean);
  if (words.length === 0) return { action: 'show' };
  const [firstWord = ''] = words;
  const first = firstWord.toLowerCase();
  const alone = first === 'now' ? 'now' : ['off', 'stop', 'none'].includes(first) ? 'off' : undefined;
  if (alone) return words.length === 1 ? { action: alone } : { action: 'error', problem: `"digest ${alone}" takes nothing after it` };
  if (first === 'daily' || first === 'weekly') {
    const weekday = first === 'weekly' ? parseWeekday(words[1] ?? '') : undefined;
    if (first === 'weekly' && !weekday) return { action: 'error', problem: 'a weekly digest needs a day such as monday' };
    const time = parseTime(words.slice(weekday ? 2 : 1).join(' '));
    if (!time) return { action: 'error', problem: `a ${first} digest needs a time of day such as 09:00` };
    return { action: 'set', schedule: weekday ? { every: 'weekly', weekday, time } : { every: 'daily', time } };
  }
  return { action: 'error', problem: `"${firstWord.slice(0, 30)}" is not daily, weekly, off or now` };
}

function weekdayOf(isoDate: string): number {
  const d = new Date(`${isoDate}T00:00:00Z`).getUTCDay();
  return d === 0 ? 7 : d;
}

/**
 * The instant a wall-clock time on a date has in a zone. A time skipped by a daylight-saving jump lands just after
 * the jump (02:30 -> 03:30); a time that happens twice is its first occurrence.
 */
export function zonedInstant(isoDate: string, time: string, timeZone: string): number {
  const [h, m] = time.split(':').map(Number) as [number, number];
  const [y, mo, d] = isoDate.split('-').map(Number) as [number, number, number];
  const wall = Date.UTC(y, mo - 1, d, h, m);
  // Two candidates around the wall time cover both sides of a DST change; keep the earliest that maps back to it.
  const candidates = [wall - HALF_DAY_MS, wall + HALF_DAY_MS].map((at) => wall - zoneOffset(at, timeZone)).sort((a, b) => a - b);
  for (const c of candidates) if (c + zoneOffset(c, timeZone) === wall) return c;
  // In a gap: the wall time does not exist; the later offset puts it after the jump.
  return Math.max(...candidates);
}

/**
 * The slot nearest `now` looking back (`step` -1: the latest at or before it) or ahead (1: the next strictly after it):
 * its id "2026-03-02T09:00" (local date and time: one digest per channel per slot id), instant and local date.
 */
function findSlot(schedule: DigestSchedule, now: number, timeZone: string, step: 1 | -1) {
  const today = dateInZone(now, timeZone);
  for (let days = 0; days <= 8; days++) {
    const date = addDays(today, step * days);
    if (schedule.every === 'weekly' && weekdayOf(date) !== schedule.weekday) continue;
    const at = zonedInstant(date, schedule.time, timeZone);
    if (step < 0 ? at <= now : at > now) return { id: `${date}T${schedule.time}`, at, date };
  }
  // Unreachable for valid schedules (a weekly slot recurs within 7 days).
  throw new Error('no digest slot within a week');
}

export const latestSlot = (schedule: DigestSchedule, now: number, timeZone: string) => findSlot(schedule, now, timeZone, -1);
export const nextSlot = (schedule: DigestSchedule, now: number, timeZone: string) => findSlot(schedule, now, timeZone, 1);

/** A slot is posted at most this long late (the bot was down): a morning digest is not posted at night. */
const CATCH_UP_MS = 2 * 3_600_000;

/** The slot to post at `now`: the latest, unless it came before `since` (when the schedule was set) or over CATCH_UP_MS ago. */
export function dueSlot(schedule: DigestSchedule, since: number, now: number, timeZone: string) {
  const slot = latestSlot(schedule, now, timeZone);
  return slot.at >= since && now - slot.at <= CATCH_UP_MS ? slot : undefined;
}

export function describeSchedule(schedule: DigestSchedule): string {
  if (schedule.every === 'daily') return `every day at ${schedule.time}`;
  const day = WEEKDAYS[(schedule.weekday ?? 1) - 1] ?? 'monday';
  return `every ${day.charAt(0).toUpperCase()}${day.slice(1)} at ${schedule.time}`;
}
