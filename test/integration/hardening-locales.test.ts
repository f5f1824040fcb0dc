// One member cannot grow the bot's memory without bound by sending activities in endless locale variants: every
// formatter cache keyed by a locale stays at its bound, and amounts still read right in each variant.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { channelMessage } from '../harness/activities.js';
import { textOf } from '../harness/finance.js';
import { calendarDate, dateTime, money, percent } from '../../src/cards/format.js';

/** The bound each formatter map keeps (format.ts): far above the locales a real deployment sees. */
const BOUND = 256;
/** A valid BCP 47 variant Intl accepts ("en-US-1a2b"): every n gives another cache key for the same en-US. */
const variant = (n: number) => `en-US-1${n.toString(36).padStart(3, '0')}`;

/** How many number and date formatters `run` builds: a locale's formatter built again is one its cache let go. */
function formattersBuilt(run: () => void): { number: number; date: number } {
  const { NumberFormat, DateTimeFormat } = Intl;
  const built = { number: 0, date: 0 };
  Intl.NumberFormat = new Proxy(NumberFormat, {
    construct(target, args: Parameters<typeof NumberFormat>) {
      built.number++;
      return new target(...args);
    },
  });
  Intl.DateTimeFormat = new Proxy(DateTimeFormat, {
    construct(target, args: Parameters<typeof DateTimeFormat>) {
      built.date++;
      return new target(...args);
    },
  });
  try {
    run();
  } finally {
    Intl.NumberFormat = NumberFormat;
    Intl.DateTimeFormat = DateTimeFormat;
  }
  return built;
}

let bot: TestBot;
beforeAll(async () => {
  bot = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '10000', LOG_LEVEL: 'warn' } });
});
afterAll(async () => {
  await bot.close();
});

describe('a member sending messages in endless locale variants', () => {
  it('messages over HTTP, each in its own locale variant, on top of a cache already near its bound, leave every formatter cache at its bound; amounts read as en-US', async () => {
    // A member's flood, mostly replayed in-process (a turn costs about a second on a loaded test machine): the last
    // variants arrive over HTTP, through the real dispatch, and are what would push the caches past their bound.
    for (let n = 0; n < BOUND; n++) money(1, 'USD', variant(50_000 + n));
    const sends = 16;
    let next = 0;
    const replies: string[] = [];
    // A few at a time, each in its own thread (the connector's per-thread budget is not what this is about).
    const worker = async () => {
      while (next < sends) {
        const n = next++;
        const activity = channelMessage('bills due 60', { serviceUrl: bot.connector.url });
        activity.locale = variant(n);
        expect((await bot.send(activity)).status).toBe(200);
        const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id, 30_000);
        replies.push(textOf(ConnectorStandIn.card(reply!)));
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));
    // Every reply formatted its amounts with its own variant: each one a cache key.
    expect(replies.length).toBe(sends);
    // The cache did not keep them all: the first variant's formatter was let go and is built again.
    expect(formattersBuilt(() => money(1, 'USD', variant(50_000))).number).toBe(1);
    // The cards still show money as en-US does: "$1,234.56".
    for (const r of replies) expect(r).toMatch(/\$\d{1,3}(,\d{3})*\.\d{2}/);
  }, 120_000);

  it('2,000 distinct locale variants through every formatter keep each cache at its bound, and the last one still formats right', () => {
    const everyFormatter = (locale: string) => {
      money(1250, 'USD', locale);
      money(99.5, 'EUR', locale);
      percent(0.85, locale);
      calendarDate('2026-03-10', locale);
      dateTime(Date.parse('2026-03-10T15:42:00Z'), { locale, timeZone: 'UTC' });
    };
    for (let n = 0; n < 2_000; n++) everyFormatter(variant(10_000 + n));
    // Each cache let the first variant's formatters go (3 number formats, 2 date formats are built again) ...
    expect(formattersBuilt(() => everyFormatter(variant(10_000)))).toEqual({ number: 3, date: 2 });
    // ... and still keeps the one in use: formatting twice in a new locale builds one formatter.
    expect(formattersBuilt(() => [1, 2].forEach((n) => money(n, 'USD', variant(9_000)))).number).toBe(1);
    const last = variant(10_000 + 1_999);
    expect(money(1250, 'USD', last)).toBe('$1,250.00');
    expect(money(99.5, 'EUR', last)).toBe('€99.50');
    expect(percent(0.85, last)).toBe('85%');
    expect(calendarDate('2026-03-10', last)).toBe('Mar 10, 2026');
  });
});
