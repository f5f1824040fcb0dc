// 5,000 random and hostile command lines (unicode, 10 KB, markdown, <at> tags, filter injection): every one gets a
// valid card, none crashes, and nothing reaches BILL with a filter other than the one the command means.
// Seeded: a failure prints its seed, FUZZ_SEED=<n> replays it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { FilterValueError, InputError } from '../../src/errors.js';
import { parseFilters } from '../../src/sandbox/query.js';
import { normalizeCommandText } from '../../src/features/parse.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { checkCard } from '../harness/cards.js';
import { fuzzSeed, Rng } from '../harness/fuzz.js';
import { ask } from '../harness/finance.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
const SEED = fuzzSeed(20260310);
const TOTAL = 5_000;
const OVER_HTTP = 300;
let bot: TestBot;

beforeAll(async () => {
  bot = await startBot({ clock: new ManualClock(NOW), env: { USER_COMMANDS_PER_MINUTE: '10000', LOG_LEVEL: 'warn' } });
});
afterAll(async () => {
  await bot.close();
});

const COMMANDS = [
  'bills due',
  'bills overdue',
  'bill',
  'invoice',
  'invoices overdue',
  'vendor',
  'customer',
  'payments',
  'spend',
  'status',
  'help',
  'bils due',
  'invoise',
  'vendors',
  'BILLS   DUE',
  'Vendor',
  '',
];
const HOSTILE = [
  'a",name:sw:"b',
  'x",archived:eq:true',
  'acme,archived:eq:true',
  'acme:eq:1',
  'name:sw:a',
  '"',
  '\\',
  '\\"',
  '%22%2C',
  '**bold** _it_ [x](javascript:alert(1))',
  '<at>everyone</at>',
  '&lt;at&gt;x&lt;/at&gt;',
  '<script>alert(1)</script>',
  '${jndi:ldap://x}',
  "'; DROP TABLE bills; --",
  '# heading\n- list\n1. item',
  '-1',
  '0',
  '91',
  '1e9',
  'NaN',
  '0x10',
  '14 days',
  '9999999999999999999999',
  'transactions',
  'budgets',
  'reimbursements',
  '1001',
  '#1002',
  'Acme',
  'Smith, Barney',
  'Café',
  'Müller & Söhne',
  'Zürich',
  '𝕭𝖎𝖑𝖑𝖘 🧾💸',
  '\u202eevil\u202c',
  '\u200b\u200d\ufeff',
  '\ud800',
  'A'.repeat(501),
];

function randomText(rng: Rng, max: number): string {
  const n = rng.int(0, max);
  let s = '';
  for (let i = 0; i < n; i++) {
    const k = rng.int(0, 9);
    s +=
      k < 5
        ? String.fromCharCode(rng.int(32, 126))
        : k < 7
          ? String.fromCodePoint(rng.int(0xa0, 0x2fff))
          : k < 8
            ? String.fromCodePoint(rng.int(0x1f300, 0x1faff))
            : k < 9
              ? rng.pick(['"', ',', ':', '\\', '*', '_', '[', ']', '<', '>', '\n', '\t', '\u0000', '\u2028'])
              : String.fromCharCode(rng.int(0, 0xffff));
  }
  return s;
}

function commandLine(rng: Rng): string {
  const r = rng.next();
  if (r < 0.01) return rng.pick(COMMANDS) + ' ' + 'x'.repeat(10 * 1024);
  if (r < 0.05) return randomText(rng, 200);
  const name = rng.pick(COMMANDS);
  const arg = rng.chance(0.6) ? rng.pick(HOSTILE) : randomText(rng, 40);
  const parts = [rng.chance(0.2) ? '<at>billbridge</at>' : '', name, rng.chance(0.85) ? arg : '', rng.chance(0.1) ? rng.pick(HOSTILE) : ''];
  return parts.filter(Boolean).join(rng.pick([' ', '  ', '\u00a0', ' \t ']));
}

function expectValidReply(reply: { card: unknown; summary: string }, input: string): void {
  const check = checkCard(reply.card);
  expect(check.problems, `seed ${SEED}: ${JSON.stringify(input).slice(0, 200)}`).toEqual([]);
  expect(check.bytes).toBeLessThan(40 * 1024);
  expect(reply.summary.length).toBeGreaterThan(0);
  expect(reply.summary).not.toMatch(/\n/);
}

describe(`${TOTAL} random and hostile commands (seed ${SEED})`, () => {
  it('every one gets a valid card and none crashes; BILL only ever sees the filters the commands mean', async () => {
    const rng = new Rng(SEED);
    const inputs: string[] = [];
    bot.app.sandbox!.clearRequests();
    const outcomes: Record<string, number> = {};

    // Most through the dispatcher (the whole command path without HTTP), 20 at a time.
    const direct = TOTAL - OVER_HTTP;
    for (let i = 0; i < direct; i += 20) {
      const batch = Array.from({ length: Math.min(20, direct - i) }, () => ({
        text: commandLine(rng),
        page: rng.pick([0, 0, 0, 1, 2, -3, 1e9, Number.NaN]),
      }));
      inputs.push(...batch.map((b) => b.text));
      const results = await Promise.all(batch.map((b) => ask(bot.app, b.text, { page: b.page })));
      results.forEach((result, k) => {
        outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
        expectValidReply(result.reply, batch[k]!.text);
        // A refusal of the input is fine; anything else (an unexpected error, BILL refusing a request) is a bug.
        if (result.error !== undefined)
          expect(
            result.error instanceof InputError || result.error instanceof FilterValueError,
            `seed ${SEED}: ${result.error instanceof Error ? `${result.error.name}: ${result.error.message}` : JSON.stringify(result.error)} for ${JSON.stringify(batch[k]!.text).slice(0, 200)}`,
          ).toBe(true);
      });
    }

    // A few hundred over the real HTTP path, as Teams would post them.
    for (let i = 0; i < OVER_HTTP; i += 50) {
      const texts = Array.from({ length: 50 }, () => commandLine(rng));
      inputs.push(...texts);
      // One channel each: the Bot Connector budget is per conversation, and this clock never moves its windows on.
      const sent = await Promise.all(texts.map((t, k) => bot.say(t, { channel: `19:fuzz-${i + k}@thread.tacv2` })));
      for (const s of sent) expect(s.status).toBe(200);
      const ids = new Set(sent.map((s) => s.activity.conversation.id));
      const replies = await bot.connector.waitFor(
        (calls) => {
          const got = calls.filter((c) => c.body?.type === 'message' && ids.has(c.conversationId!));
          return got.length >= ids.size ? got : undefined;
        },
        30_000,
        `${ids.size} replies`,
      );
      for (const r of replies) expectValidReply({ card: r.body?.attachments?.[0]?.content, summary: r.body?.summary ?? '' }, '(over HTTP)');
    }

    // Everything BILL received was well formed and meant what the command means.
    const log = bot.app.sandbox!.requests();
    expect(log.length).toBeGreaterThan(0);
    expect(log.filter((r) => r.status >= 400)).toEqual([]);
    expect(bot.app.sandbox!.stats().errorsByCode).toEqual({});
    // What the person typed, as the bot reads it (mentions, markup and runs of white space normalised).
    const typed = inputs.map(normalizeCommandText).join('\u0001');
    const org = bot.app.sandbox!.org;
    const allowed: Record<string, string[]> = {
      'GET /v3/bills': [
        'dueDate:gte',
        'dueDate:lte',
        'dueDate:lt',
        'archived:eq',
        'paymentStatus:ne',
        'vendorId:eq',
        'vendorId:in',
        'updatedTime:gte',
      ],
      'GET /v3/invoices': ['updatedTime:gte', 'customerId:eq', 'customerId:in', 'archived:eq'],
      'GET /v3/vendors': ['name:sw', 'archived:eq', 'id:in'],
      'GET /v3/customers': ['name:sw', 'archived:eq', 'id:in'],
      'GET /v3/spend/transactions': ['occurredTime:gte'],
      'GET /v3/spend/budgets': ['retired:eq'],
    };
    for (const r of log) {
      if (!r.filters) continue;
      const terms = parseFilters(r.filters);
      for (const t of terms) {
        expect(allowed[r.route], r.route).toContain(`${t.field}:${t.op}`);
        if (t.field === 'name') expect(typed.includes(t.value), `name filter "${t.value}" is not something a person typed`).toBe(true);
        if (t.field === 'archived') expect(t.value).toBe('false');
        if (t.field === 'paymentStatus') expect(t.value).toBe('PAID');
        if (t.field === 'vendorId') for (const id of t.value.split(',')) expect(org.vendors.has(id)).toBe(true);
        if (t.field === 'customerId') for (const id of t.value.split(',')) expect(org.customers.has(id)).toBe(true);
      }
      // A name search is always exactly one prefix term plus archived:eq:false.
      if (r.route === 'GET /v3/vendors' || r.route === 'GET /v3/customers') {
        expect(terms.map((t) => `${t.field}:${t.op}`).sort(), r.filters).toEqual(
          terms.some((t) => t.field === 'id') ? ['id:in'] : ['archived:eq', 'name:sw'],
        );
      }
    }
    expect(outcomes.ok).toBeGreaterThan(100);
    expect(outcomes.error).toBeGreaterThan(100);
  }, 120_000);
});
