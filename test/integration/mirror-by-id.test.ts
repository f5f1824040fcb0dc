// `bill <BILL id>` from the org's mirror: once it holds every bill the answer costs no BILL call and nothing is kept
// beside it; a card's Refresh reads that one bill from BILL (one GET) and the mirror keeps what BILL answered; a bill
// BILL no longer has is dropped; before the mirror holds every bill, BILL is asked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ask, expectValidCard, factsOf, money, textOf } from '../harness/finance.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
let clock: ManualClock;
let bot: TestBot;
const byIdCalls = () => bot.app.sandbox!.requests().filter((r) => r.route === 'GET /v3/bills/{id}').length;

beforeAll(async () => {
  clock = new ManualClock(NOW);
  bot = await startBot({ clock, env: { USER_COMMANDS_PER_MINUTE: '10000' } });
});
afterAll(async () => {
  await bot.close();
});

describe('bill <BILL id>', () => {
  it('asks BILL before the mirror holds every bill, then answers from the mirror without keeping an answer', async () => {
    const org = bot.app.sandbox!.org;
    const [first, second] = org.bills.all().filter((b) => !b.archived);
    bot.app.sandbox!.clearRequests();
    const cold = await ask(bot.app, `bill ${first!.id}`);
    expect(cold.outcome).toBe('ok');
    expect(factsOf(cold.reply.card).Vendor).toBe(first!.vendorName);
    expect(byIdCalls()).toBe(1);
    // A lookup by number builds the collection of every bill.
    const r = await bot.app.mirror.lookup(org.id, 'bill', first!.invoice!.invoiceNumber!, { waitMs: 30_000 });
    expect('rows' in r ? r.rows.map((b) => b.id) : []).toContain(first!.id);
    bot.app.sandbox!.clearRequests();
    const entries = bot.app.mirror.answers.stats().entries;
    const warm = await ask(bot.app, `bill ${second!.id}`);
    expect(warm.outcome).toBe('ok');
    expectValidCard(warm.reply.card);
    expect(factsOf(warm.reply.card).Vendor).toBe(second!.vendorName);
    expect(factsOf(warm.reply.card).Amount).toBe(money(second!.amount));
    expect(bot.app.sandbox!.requests()).toEqual([]);
    expect(bot.app.mirror.answers.stats().entries).toBe(entries);
  });

  it('Refresh reads that bill from BILL now and the mirror keeps it; a bill BILL no longer has is said so and dropped', async () => {
    const org = bot.app.sandbox!.org;
    const [, , bill, gone] = org.bills.all().filter((b) => !b.archived);
    clock.advance(1_000);
    org.bills.put({ ...bill!, description: 'Changed at BILL', amount: 1234.5, updatedTime: new Date(clock.now()).toISOString() });
    // Without Refresh: the mirror's copy (its refresh interval has not passed, no webhook told it).
    const held = await ask(bot.app, `bill ${bill!.id}`);
    expect(factsOf(held.reply.card).Amount).toBe(money(bill!.amount));
    bot.app.sandbox!.clearRequests();
    const refreshed = await ask(bot.app, `bill ${bill!.id}`, { refresh: true });
    expect(refreshed.outcome).toBe('ok');
    expect(factsOf(refreshed.reply.card).Amount).toBe(money(1234.5));
    expect(bot.app.sandbox!.requests().map((q) => q.route)).toEqual(['GET /v3/bills/{id}']);
    // The mirror kept what BILL answered: the next answer shows it without a call.
    bot.app.sandbox!.clearRequests();
    const after = await ask(bot.app, `bill ${bill!.id}`);
    expect(factsOf(after.reply.card).Amount).toBe(money(1234.5));
    expect(bot.app.sandbox!.requests()).toEqual([]);

    expect(org.bills.delete(gone!.id)).toBe(true);
    const missing = await ask(bot.app, `bill ${gone!.id}`, { refresh: true });
    expect(missing.outcome).toBe('error');
    expect(textOf(missing.reply.card)).toContain('No bill with BILL id');
    const rows = await bot.app.mirror.rows(org.id, 'bill', { waitMs: 1_000, where: (b) => b.id === gone!.id });
    expect('rows' in rows && rows.rows).toEqual([]);
  });
});
