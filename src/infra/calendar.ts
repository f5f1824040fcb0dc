// Calendar dates (yyyy-MM-dd) in a time zone, and the zone's offset: what "today" means for a team, when a digest is
// due. Shared by the cards, the digest schedule and the sandbox.
import { kept } from './bounded.js';

const formats = new Map<string, Intl.DateTimeFormat>();
const WALL_CLOCK = { year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' } as const;

/** The calendar date (yyyy-MM-dd) of an instant in a time zone: the date its wall clock shows. */
export function dateInZone(instant: Date | number, timeZone: string): string {
  const at = Number(instant);
  return new Date(at + zoneOffset(at, timeZone)).toISOString().slice(0, 10);
}

/** yyyy-MM-dd plus n days (calendar arithmetic, no time zone involved). */
export function addDays(isoDate: string, days: number): string {
  const d = new Date(`${isoDate}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** Offset of the zone from UTC at an instant, in ms (wall clock minus UTC). */
export function zoneOffset(instant: number, timeZone: string): number {
  const fmt = kept(formats, timeZone, () => new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', ...WALL_CLOCK }));
  const parts = fmt.formatToParts(new Date(instant));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value ?? 0);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour') % 24, get('minute'), get('second'));
  return wall - Math.floor(instant / 1000) * 1000;
}

/**
 * The day (yyyy-MM-dd) a BILL date names; undefined for none or one that is no day (2026-13-45, and 2026-02-30, which
 * Date.parse reads as March 2nd: the day must come back as written).
 */
export function calendarDay(isoDate: string | undefined): string | undefined {
  const day = isoDate?.slice(0, 10);
  if (!day || !/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const at = Date.parse(`${day}T00:00:00Z`);
  return Number.isFinite(at) && new Date(at).toISOString().slice(0, 10) === day ? day : undefined;
}
