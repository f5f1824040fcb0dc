// `bill <BILL id>` reads BILL's answer for that id from the answers a notification's Refresh keeps too: the card is drawn
// from the bill as the mirror keeps it, whoever asked BILL first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import type { Bill } from '../../src/bill/types.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ask, expectValidCard, factsOf } from '../harness/finance.js';

let bot: TestBot;

beforeAll(async () => {
  bot = await startBot({ clock: new ManualClock(Date.parse('2026-03-10T15:30:00.000Z')), env: { USER_COMMANDS_PER_MINUTE: '10000' } });
});
afterAll(async () => {
  await bot.close();
});

describe('a bill by its BILL id after a payment card was refreshed', () => {
  it('a null approver BILL sent, kept raw by the payment card Refresh, does not turn `bill <id>` into an error card', async () => {
    const org = bot.app.sandbox!.org;
    const payment = org.payments.all().find((p) => p.billId && org.bills.get(p.billId)?.approvers?.length);
    expect(payment).toBeDefined();
    const bill = org.bills.get(payment!.billId!)!;
    // BILL may send a list entry without fields (null): the mirror's keepBill leaves it out.
    org.bills.put({ ...bill, approvers: [null as unknown as NonNullable<Bill['approvers']>[number], ...bill.approvers!] });
    // The payment card's Refresh reads the payment's bills by id and keeps BILL's answers.
    await bot.app.notify.current(org.id, 'payment', payment!.id, 'payment.updated');

    const r = await ask(bot.app, `bill ${bill.id}`);
    expect(r.outcome).toBe('ok');
    expectValidCard(r.reply.card);
    expect(factsOf(r.reply.card).Vendor).toBe(bill.vendorName);
    // As the mirror keeps it: the approvers BILL named, without the empty entry.
    const facts = factsOf(r.reply.card);
    expect(facts[`Approver ${bill.approvers!.length}`]).toBeDefined();
    expect(facts[`Approver ${bill.approvers!.length + 1}`]).toBeUndefined();
  });
});
