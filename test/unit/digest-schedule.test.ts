// Digest schedules as a finance team types them, and the slots they fall on in the bot's time zone (DST included).
import { describe, expect, it } from 'vitest';
import {
  describeSchedule,
  dueSlot,
  latestSlot,
  nextSlot,
  parseDigestArgs,
  parseTime,
  parseWeekday,
  zonedInstant,
} from '../../src/notify/schedule.js';

const iso = (ms: number) => new Date(ms).toISOString();

describe('reading what was typed', () => {
  it.each([
    [['daily', '09:00'], { action: 'set', schedule: { every: 'daily', time: '09:00' } }],
    [['daily', '9:05'], { action: 'set', schedule: { every: 'daily', time: '09:05' } }],
    [['Daily', '5:30', 'pm'], { action: 'set', schedule: { every: 'daily', time: '17:30' } }],
    [['weekly', 'monday', '08:30'], { action: 'set', schedule: { every: 'weekly', weekday: 1, time: '08:30' } }],
    [['weekly', 'Fri', '16:00'], { action: 'set', schedule: { every: 'weekly', weekday: 5, time: '16:00' } }],
    [['weekly', 'sundays', '7am'], { action: 'set', schedule: { every: 'weekly', weekday: 7, time: '07:00' } }],
    [['off'], { action: 'off' }],
    [['NOW'], { action: 'now' }],
    [[], { action: 'show' }],
  ])('digest %j', (args, expected) => {
    expect(parseDigestArgs(args)).toEqual(expected);
  });

  it.each([
    [['daily'], 'a daily digest needs a time of day such as 09:00'],
    [['daily', '25:00'], 'a daily digest needs a time of day such as 09:00'],
    [['daily', '9'], 'a daily digest needs a time of day such as 09:00'],
    [['weekly', '09:00'], 'a weekly digest needs a day such as monday'],
    [['weekly', 'mo', '09:00'], 'a weekly digest needs a day such as monday'],
    [['weekly', 'monday'], 'a weekly digest needs a time of day such as 09:00'],
    [['hourly'], '"hourly" is not daily, weekly, off or now'],
    [['off', 'please'], '"digest off" takes nothing after it'],
  ])('digest %j is explained, not guessed', (args, problem) => {
    expect(parseDigestArgs(args)).toEqual({ action: 'error', problem });
  });

  it('reads times and days the usual ways', () => {
    expect(['9am', '12am', '12pm', '12:30 pm', '17.30', '0:00', '23:59'].map(parseTime)).toEqual([
      '09:00',
      '00:00',
      '12:00',
      '12:30',
      '17:30',
      '00:00',
      '23:59',
    ]);
    expect(['9', '24:00', '13pm', '9:60', 'noon', ''].map(parseTime)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(['mon', 'Tuesday', 'wed', 'thurs', 'sat', 'x'].map(parseWeekday)).toEqual([1, 2, 3, 4, 6, undefined]);
    expect(describeSchedule({ every: 'weekly', weekday: 3, time: '10:15' })).toBe('every Wednesday at 10:15');
  });
});

describe("slots in the bot's time zone", () => {
  it('puts 09:00 New York at 14:00 UTC in winter and 13:00 UTC in summer', () => {
    expect(iso(zonedInstant('2026-03-02', '09:00', 'America/New_York'))).toBe('2026-03-02T14:00:00.000Z');
    expect(iso(zonedInstant('2026-07-02', '09:00', 'America/New_York'))).toBe('2026-07-02T13:00:00.000Z');
    expect(iso(zonedInstant('2026-07-02', '09:00', 'Asia/Kolkata'))).toBe('2026-07-02T03:30:00.000Z');
    expect(iso(zonedInstant('2026-03-02', '00:00', 'UTC'))).toBe('2026-03-02T00:00:00.000Z');
  });

  it('moves a time the spring-forward jump skips to just after it, and takes the first of a time that happens twice', () => {
    // 2026-03-08 02:30 does not exist in New York (02:00 -> 03:00 EDT).
    expect(iso(zonedInstant('2026-03-08', '02:30', 'America/New_York'))).toBe('2026-03-08T07:30:00.000Z');
    // 2026-11-01 01:30 happens twice (EDT, then EST): the first one.
    expect(iso(zonedInstant('2026-11-01', '01:30', 'America/New_York'))).toBe('2026-11-01T05:30:00.000Z');
    expect(iso(zonedInstant('2026-03-29', '02:30', 'Europe/Berlin'))).toBe('2026-03-29T01:30:00.000Z');
    expect(iso(zonedInstant('2026-10-25', '02:30', 'Europe/Berlin'))).toBe('2026-10-25T00:30:00.000Z');
  });

  it('names the slot a moment belongs to, and the next one', () => {
    const daily = { every: 'daily' as const, time: '09:00' };
    // 08:59 New York on 2 March: the slot is the day before's.
    expect(latestSlot(daily, Date.parse('2026-03-02T13:59:00Z'), 'America/New_York').id).toBe('2026-03-01T09:00');
    expect(latestSlot(daily, Date.parse('2026-03-02T14:00:00Z'), 'America/New_York')).toEqual({
      id: '2026-03-02T09:00',
      at: Date.parse('2026-03-02T14:00:00Z'),
      date: '2026-03-02',
    });
    // Late evening in New York is already the next day in UTC: the local date decides.
    expect(latestSlot(daily, Date.parse('2026-03-03T03:00:00Z'), 'America/New_York').id).toBe('2026-03-02T09:00');
    const monday = { every: 'weekly' as const, weekday: 1, time: '09:00' };
    expect(latestSlot(monday, Date.parse('2026-03-04T12:00:00Z'), 'UTC').id).toBe('2026-03-02T09:00');
    expect(nextSlot(monday, Date.parse('2026-03-02T09:00:00Z'), 'UTC').id).toBe('2026-03-09T09:00');
    expect(nextSlot(daily, Date.parse('2026-03-02T13:00:00Z'), 'America/New_York').at).toBe(Date.parse('2026-03-02T14:00:00Z'));
  });

  it('a slot is due from its moment until two hours later (the bot was down), never when the schedule was set after it', () => {
    const daily = { every: 'daily' as const, time: '09:00' };
    const nine = Date.parse('2026-03-02T09:00:00Z');
    expect(dueSlot(daily, 0, nine + 2 * 3_600_000, 'UTC')?.id).toBe('2026-03-02T09:00');
    expect(dueSlot(daily, 0, nine + 2 * 3_600_000 + 1, 'UTC')).toBeUndefined();
    expect(dueSlot(daily, nine, nine, 'UTC')?.id).toBe('2026-03-02T09:00');
    expect(dueSlot(daily, nine + 1, nine + 60_000, 'UTC')).toBeUndefined();
  });
});
