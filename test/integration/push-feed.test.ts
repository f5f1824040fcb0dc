// Lists are kept longer while BILL webhooks bring every change to the bot: CACHE_TTL_PUSHED_S (900 s) instead of
// CACHE_TTL_LIST_S (60 s) for bills, invoices and payments once billbridge's subscription is set up and BILL says it
// is enabled. Each event still makes the next answer read the change (one incremental call), and when BILL disables
// the subscription the next check notices and lists are polled every minute again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { sandboxControlOk } from '../harness/sandbox.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ask, factsOf, tableRows, textOf } from '../harness/finance.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
let clock: ManualClock;
let bot: TestBot;
const orgId = () => bot.app.sandbox!.org.id;
const calls = (route?: string) => bot.app.sandbox!.requests().filter((r) => r.route !== 'POST /v3/login' && (!route || r.route === route));

const control = (method: string, path: string, body?: unknown) => sandboxControlOk(bot.app.sandbox!.url, method, path, body);

/** The same three questions a channel asks all day. */
async function askLists(): Promise<void> {
  for (const text of ['bills due 30', 'invoices overdue', 'payments']) expect((await ask(bot.app, text)).outcome).toBe('ok');
}

beforeAll(async () => {
  clock = new ManualClock(NOW);
  bot = await startBot({ clock, env: { USER_COMMANDS_PER_MINUTE: '10000' } });
  // Replicas built and the first answers cached.
  await askLists();
  await bot.app.mirror.rows(orgId(), 'bill', { waitMs: 60_000, scope: 'open' });
  await bot.app.mirror.rows(orgId(), 'invoice', { waitMs: 60_000 });
});
afterAll(async () => {
  await bot.close();
});

describe('lists and webhooks', () => {
  it('without a webhook subscription, each list is read again after CACHE_TTL_LIST_S', async () => {
    expect(bot.app.notify.push.fed(orgId(), 'bill')).toBe(false);
    clock.advance(61_000);
    bot.app.sandbox!.clearRequests();
    await askLists();
    expect(calls('GET /v3/bills')).toHaveLength(1);
    expect(calls('GET /v3/invoices')).toHaveLength(1);
    expect(calls('GET /v3/payments')).toHaveLength(1);
    // No subscription of billbridge's: nothing was asked about subscriptions.
    expect(calls('GET /connect-events/v3/subscriptions/{id}')).toEqual([]);
    expect(factsOf((await ask(bot.app, 'status')).reply.card)['Kept current by webhooks']).toBe(
      'nothing: lists are read again every 1 min (webhooks setup changes that)',
    );
  });

  it("with billbridge's subscription enabled, lists are kept CACHE_TTL_PUSHED_S with no call", async () => {
    await bot.app.notify.setup.setup(orgId(), `${bot.url}/api/bill/webhooks`);
    bot.app.sandbox!.clearRequests();
    await bot.app.notify.push.refresh(orgId());
    expect(calls('GET /connect-events/v3/subscriptions/{id}')).toHaveLength(1);
    for (const e of ['bill', 'invoice', 'payment', 'vendor'] as const) expect(bot.app.notify.push.fed(orgId(), e)).toBe(true);
    // BILL has no customer events: customers are never push-fed.
    expect(bot.app.notify.push.fed(orgId(), 'customer')).toBe(false);
    const status = factsOf((await ask(bot.app, 'status')).reply.card);
    expect(status['Kept current by webhooks']).toBe(
      'bills, invoices, payments, vendors (their lists are read again after each event, and every 15 min in any case)',
    );
    expect(status['Invoice index']).toMatch(/^[\d,]+ records, updated /);
    // Answers cached before keep the lifetime they were cached with; the payments page is read again once it expires.
    clock.advance(61_000);
    await askLists();
    bot.app.sandbox!.clearRequests();
    clock.advance(10 * 60_000);
    await askLists();
    expect(calls()).toEqual([]);
  });

  it("a paid bill's events make the next answers read the change: one call per list, and the card shows it", async () => {
    const bill = bot.app
      .sandbox!.org.bills.all()
      .find(
        (b) =>
          !b.archived && b.paymentStatus === 'UNPAID' && b.invoice?.invoiceNumber && b.dueDate >= '2026-03-10' && b.dueDate <= '2026-04-09',
      )!;
    const before = tableRows((await ask(bot.app, 'bills due 30')).reply.card).map((r) => r[1]);
    expect(before).toContain(bill.invoice!.invoiceNumber);
    const paid = await control('POST', `/bills/${bill.id}/pay`, {});
    await control('POST', '/webhooks/flush');
    await bot.app.notify.worker.drain();
    bot.app.sandbox!.clearRequests();
    const after = await ask(bot.app, 'bills due 30');
    expect(tableRows(after.reply.card).map((r) => r[1])).not.toContain(bill.invoice!.invoiceNumber);
    expect(calls('GET /v3/bills')).toHaveLength(1);
    expect(calls('GET /v3/bills')[0]!.filters).toMatch(/^updatedTime:gte:/);
    const payments = await ask(bot.app, 'payments');
    expect(textOf(payments.reply.card)).toContain(bill.vendorName!);
    expect(paid?.payment).toMatchObject({ billId: bill.id });
    expect(calls('GET /v3/payments')).toHaveLength(1);
    // The invoices were not touched: still no call.
    await ask(bot.app, 'invoices overdue');
    expect(calls('GET /v3/invoices')).toEqual([]);
  });

  it('when BILL disables the subscription, the next check sees it and lists are polled every minute again', async () => {
    const sub = bot.app.sandbox!.org.subscriptions.all()[0]!;
    sub.status.enabled = false;
    clock.advance(13 * 60_000);
    // The last check is 23 min old, but the paid bill's events (13 min ago) still vouch that BILL delivers; a new
    // check starts meanwhile and finds the subscription disabled.
    expect(bot.app.notify.push.fed(orgId(), 'bill')).toBe(true);
    await bot.app.notify.push.refresh(orgId());
    clock.advance(2 * 60_000 + 1);
    expect(bot.app.notify.push.fed(orgId(), 'bill')).toBe(false);
    await bot.app.notify.push.refresh(orgId());
    expect(bot.app.notify.push.fed(orgId(), 'bill')).toBe(false);
    clock.advance(61_000);
    bot.app.sandbox!.clearRequests();
    await askLists();
    expect(calls('GET /v3/bills')).toHaveLength(1);
    expect(calls('GET /v3/payments')).toHaveLength(1);
  });
});
