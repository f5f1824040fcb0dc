// Money and dates read the way a finance team expects, in the team's time zone.
import { describe, expect, it } from 'vitest';
import { calendarDate, clockTime, daysBetween, dueInWords, dueShort, money, sum } from '../../src/cards/format.js';
import { addDays, dateInZone } from '../../src/infra/calendar.js';

describe('money', () => {
  it('formats in the bill currency and locale', () => {
    expect(money(1250, 'USD', 'en-US')).toBe('$1,250.00');
    expect(money(1250.5, 'EUR', 'de-DE')).toBe('1.250,50\u00a0€');
    expect(money(99, 'CAD', 'en-US')).toBe('CA$99.00');
  });
  it('falls back to USD for missing or malformed currency and to zero for missing amounts', () => {
    expect(money(5, undefined, 'en-US')).toBe('$5.00');
    expect(money(5, 'dollars', 'en-US')).toBe('$5.00');
    expect(money(undefined, 'USD', 'en-US')).toBe('$0.00');
  });
  it('adds in cents without floating-point drift', () => {
    expect(sum([0.1, 0.2])).toBe(0.3);
    expect(sum(Array.from({ length: 1000 }, () => 19.99))).toBe(19990);
    expect(sum([1, undefined, null, Number.NaN, 2])).toBe(3);
  });
});

describe('dates in the team time zone', () => {
  // 2026-11-21 23:30 in New York is already 2026-11-22 in UTC.
  const lateEvening = Date.parse('2026-11-22T04:30:00Z');
  it('today depends on the zone', () => {
    expect(dateInZone(lateEvening, 'America/New_York')).toBe('2026-11-21');
    expect(dateInZone(lateEvening, 'UTC')).toBe('2026-11-22');
  });
  it('a bill due on the 21st is due today in New York but overdue in UTC', () => {
    expect(dueInWords('2026-11-21', dateInZone(lateEvening, 'America/New_York'))).toBe('Due today');
    expect(dueInWords('2026-11-21', dateInZone(lateEvening, 'UTC'))).toBe('Overdue by 1 day');
  });
  it('calendar arithmetic crosses months and years', () => {
    expect(addDays('2026-12-30', 3)).toBe('2027-01-02');
    expect(daysBetween('2026-02-27', '2026-03-01')).toBe(2);
    expect(dueInWords('2026-12-01', '2026-11-21')).toBe('Due in 10 days');
    expect(dueInWords('2026-11-22', '2026-11-21')).toBe('Due tomorrow');
    expect(dueInWords('2026-11-01', '2026-11-21')).toBe('Overdue by 20 days');
  });
  it('formats calendar dates and clock times for people', () => {
    expect(calendarDate('2026-11-21', 'en-US')).toBe('Nov 21, 2026');
    expect(calendarDate(undefined, 'en-US')).toBe('—');
    expect(clockTime(Date.parse('2026-11-21T15:42:00Z'), { locale: 'en-GB', timeZone: 'Europe/London' })).toBe('15:42');
  });
});

describe('a BILL due date that is no calendar day (2026-13-45)', () => {
  it('reads as no due date in every wording, never "NaN days"', () => {
    for (const bad of ['2026-13-45', '2025-00-10', 'soon'])
      expect([dueInWords(bad, '2026-11-27'), dueShort(bad, '2026-11-27')].join(' ')).not.toMatch(/NaN/);
    expect(dueInWords('2025-13-45', '2026-11-27')).toBe('No due date');
  });
  it("February 30th, April 31st and February 29th of a common year are no days either, not the next month's first days", () => {
    for (const bad of ['2026-02-30', '2026-02-31', '2026-04-31', '2027-02-29']) {
      expect(dueInWords(bad, '2026-11-27')).toBe('No due date');
      expect(calendarDate(bad, 'en-US')).toBe('—');
    }
    expect(calendarDate('2028-02-29', 'en-US')).toBe('Feb 29, 2028');
    expect(dueInWords('2026-03-31', '2026-03-30')).toBe('Due tomorrow');
  });
});
