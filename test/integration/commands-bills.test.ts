// Accounts payable in a channel: bills due, overdue bills, one bill, recent payments — each card lists exactly the
// records the BILL sandbox holds for the question, with the right totals, over the real HTTP path.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import type { Bill } from '../../src/bill/types.js';
import { channelMessage, executeInvoke } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { allRows, ask, button, expectValidCard, factsOf, money, tableRows, textOf, total } from '../harness/finance.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
const TODAY = '2026-03-10';
let bot: TestBot;
let clock: ManualClock;

const addDays = (d: string, n: number) => new Date(Date.parse(`${d}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
const daysLate = (due: string, today = TODAY) =>
  Math.round((Date.parse(`${today}T00:00:00Z`) - Date.parse(`${due}T00:00:00Z`)) / 86_400_000);

/** What the sandbox holds, read straight from its model (not through the bot's client). */
function sandboxBills(): Bill[] {
  return bot.app.sandbox!.org.bills.all();
}
const unpaid = (b: Bill) => !b.archived && b.paymentStatus !== 'PAID';
const soonestFirst = (a: Bill, b: Bill) =>
  a.dueDate.localeCompare(b.dueDate) || (a.vendorName ?? '').localeCompare(b.vendorName ?? '') || a.id.localeCompare(b.id);
const due = (b: Bill) => b.dueAmount ?? b.amount;

beforeAll(async () => {
  clock = new ManualClock(NOW);
  bot = await startBot({ clock, env: { USER_COMMANDS_PER_MINUTE: '10000' } });
});
afterAll(async () => {
  await bot.close();
});

async function sayAndRead(text: string) {
  const res = await bot.say(text);
  expect(res.status).toBe(200);
  const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
  return ConnectorStandIn.card(reply!);
}

describe('bills due', () => {
  it('a channel asks for bills due and gets every unpaid bill due this week, soonest first, with their total and the overdue line', async () => {
    const card = await sayAndRead('bills due');
    expectValidCard(card);
    const expected = sandboxBills()
      .filter((b) => unpaid(b) && b.dueDate >= TODAY && b.dueDate <= addDays(TODAY, 7))
      .sort(soonestFirst);
    const overdue = sandboxBills().filter((b) => unpaid(b) && b.dueDate < TODAY);
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThanOrEqual(10);
    const rows = tableRows(card);
    expect(rows.map((r) => r[1])).toEqual(expected.map((b) => b.invoice!.invoiceNumber));
    expect(rows.map((r) => r[0])).toEqual(expected.map((b) => b.vendorName));
    expect(rows.map((r) => r.at(-1))).toEqual(expected.map((b) => money(due(b))));
    expect(factsOf(card).Due).toBe(`${money(total(expected.map(due)))} · ${expected.length} bill${expected.length === 1 ? '' : 's'}`);
    expect(textOf(card)).toContain(`Overdue: ${overdue.length} bills, ${money(total(overdue.map(due)))}, not counted above.`);
    expect(textOf(card)).toMatch(/As of \d\d:\d\d/);
    // A typing indicator went out before the answer (the command calls BILL).
    const thread = bot.connector.calls
      .filter((c) => c.body?.type === 'typing' || c.body?.type === 'message')
      .filter((c) => c.conversationId === bot.connector.messages().at(-1)!.conversationId);
    expect(thread.map((c) => c.body?.type)).toEqual(['typing', 'message']);
  });

  it('a longer window lists every bill across pages (Show more over Action.Execute), totals over all of them', async () => {
    const expected = sandboxBills()
      .filter((b) => unpaid(b) && b.dueDate >= TODAY && b.dueDate <= addDays(TODAY, 60))
      .sort(soonestFirst);
    expect(expected.length).toBeGreaterThan(10);
    const first = await ask(bot.app, 'bills due 60');
    expect(first.outcome).toBe('ok');
    expectValidCard(first.reply.card);
    expect(tableRows(first.reply.card)).toHaveLength(10);
    expect(factsOf(first.reply.card).Due).toBe(`${money(total(expected.map(due)))} · ${expected.length} bills`);
    expect(textOf(first.reply.card)).toContain(`Showing 1–10 of ${expected.length} bills`);
    // The Show more button, clicked in Teams: an adaptiveCard/action invoke answered with the next page's card.
    const more = button(first.reply.card, 'Show more')!;
    expect(more.data).toEqual({ verb: 'run', command: 'bills due 60', page: 1 });
    const base = (await bot.say('help')).activity;
    const invoke = await bot.send(executeInvoke(more.data, base));
    expect(invoke.status).toBe(200);
    expect(invoke.json?.type).toBe('application/vnd.microsoft.card.adaptive');
    expectValidCard(invoke.json?.value);
    expect(tableRows(invoke.json?.value).map((r) => r[1])).toEqual(expected.slice(10, 20).map((b) => b.invoice!.invoiceNumber));
    const { rows } = await allRows(bot.app, 'bills due 60');
    expect(rows.map((r) => r[1])).toEqual(expected.map((b) => b.invoice!.invoiceNumber));
  });

  it('asks BILL only for open bills (server-side filters, never a full scan), then only for what changed', async () => {
    const orgId = bot.app.sandbox!.org.id;
    // The first question was answered with BILL's dueDate filters and started the org's open-bills replica, which is
    // built with the archived and paymentStatus filters.
    await vi.waitFor(() =>
      expect(bot.app.mirror.info(orgId).find((i) => i.kind === 'bill')).toMatchObject({ complete: true, scope: 'open' }),
    );
    const earlier = bot.app.sandbox!.requests().filter((r) => r.route === 'GET /v3/bills');
    expect(earlier.map((r) => r.filters)).toContain(
      `dueDate:gte:"${TODAY}",dueDate:lte:"${addDays(TODAY, 7)}",archived:eq:false,paymentStatus:ne:PAID`,
    );
    expect(earlier.filter((r) => r.sort === 'updatedTime:asc').map((r) => r.filters)).toContain('archived:eq:false,paymentStatus:ne:PAID');
    for (const r of earlier) expect(r.filters).toMatch(/archived:eq:false,paymentStatus:ne:PAID$|^updatedTime:gte:/);
    // A minute later, any window is cut from the replica after one call that reads only the changes.
    clock.advance(61_000);
    bot.app.sandbox!.clearRequests();
    const card = (await ask(bot.app, 'bills due 45')).reply.card;
    const expected = sandboxBills().filter((b) => unpaid(b) && b.dueDate >= TODAY && b.dueDate <= addDays(TODAY, 45));
    expect(factsOf(card).Due).toBe(`${money(total(expected.map(due)))} · ${expected.length} bills`);
    const refresh = bot.app.sandbox!.requests().filter((r) => r.route === 'GET /v3/bills');
    expect(refresh.map((r) => r.filters)).toEqual([expect.stringMatching(/^updatedTime:gte:"\d{4}-\d\d-\d\dT[\d:.]+Z"$/)]);
    expect(refresh[0]!.sort).toBe('updatedTime:asc');
    // Asked again within the minute, in any window: no list call at all.
    bot.app.sandbox!.clearRequests();
    await ask(bot.app, 'bills due 14');
    await ask(bot.app, 'bills overdue');
    expect(bot.app.sandbox!.requests().filter((r) => r.route === 'GET /v3/bills')).toEqual([]);
  });

  it('an empty window says so plainly, and still counts what is overdue', async () => {
    const org = bot.app.sandbox!.org;
    // Moved in BILL (which stamps updatedTime on every change); the bot reads the change once its list is a minute old.
    for (const b of sandboxBills().filter((x) => unpaid(x) && x.dueDate === TODAY))
      org.bills.put({ ...b, dueDate: addDays(TODAY, 2), updatedTime: new Date(clock.now()).toISOString() });
    clock.advance(61_000);
    const card = (await ask(bot.app, 'bills due 0')).reply.card;
    expectValidCard(card);
    expect(tableRows(card)).toEqual([]);
    expect(textOf(card)).toContain('No bills due today.');
    expect(textOf(card)).toMatch(/Overdue: \d+ bills/);
    expect(button(card, 'Refresh')).toBeDefined();
  });

  it('answers a bad number with what it understood and what to type', async () => {
    for (const [typed, words] of [
      ['bills due soon', 'I can\'t read "soon" as a number of days'],
      ['bills due 91', '91 is out of range: use 0 to 90 days'],
      ['bills due -3', 'as a number of days'],
    ] as const) {
      const r = await ask(bot.app, typed);
      expect(r.outcome).toBe('error');
      expectValidCard(r.reply.card);
      expect(textOf(r.reply.card)).toContain(words);
      expect(textOf(r.reply.card)).toContain(`I understood: ${typed}`);
      expect(textOf(r.reply.card)).toContain('bills due 14');
    }
  });

  it('Refresh answers from BILL, not from the cached answer', async () => {
    const before = await ask(bot.app, 'bills due 7');
    const target = sandboxBills()
      .filter((b) => unpaid(b) && b.paymentStatus === 'UNPAID' && b.dueDate >= TODAY && b.dueDate <= addDays(TODAY, 7))
      .sort(soonestFirst)[0]!;
    expect(tableRows(before.reply.card).map((r) => r[1])).toContain(target.invoice!.invoiceNumber);
    const paid = await fetch(`${bot.app.sandbox!.url}/__sandbox/bills/${target.id}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(paid.status).toBe(200);
    const cached = await ask(bot.app, 'bills due 7');
    expect(tableRows(cached.reply.card).map((r) => r[1])).toContain(target.invoice!.invoiceNumber);
    const refresh = button(cached.reply.card, 'Refresh')!;
    expect(refresh.data).toMatchObject({ verb: 'run', command: 'bills due 7', refresh: true });
    // Clicked in Teams: the invoke carries refresh:true through the bot to the command.
    const base = (await bot.say('help')).activity;
    const clicked = await bot.send(executeInvoke(refresh.data, base));
    expect(clicked.status).toBe(200);
    expectValidCard(clicked.json?.value);
    expect(tableRows(clicked.json?.value).map((r) => r[1])).not.toContain(target.invoice!.invoiceNumber);
  });

  it("speaks the conversation's language: a German Teams client gets German dates and numbers", async () => {
    const activity = channelMessage('bills due', { serviceUrl: bot.connector.url, channel: '19:channel-de@thread.tacv2' });
    activity.locale = 'de-DE';
    expect((await bot.send(activity)).status).toBe(200);
    const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id);
    const card = ConnectorStandIn.card(reply!);
    expectValidCard(card);
    const expected = sandboxBills()
      .filter((b) => unpaid(b) && b.dueDate >= TODAY && b.dueDate <= addDays(TODAY, 7))
      .sort(soonestFirst)[0]!;
    const row = tableRows(card)[0]!;
    expect(row.at(-1)).toBe(new Intl.NumberFormat('de-DE', { style: 'currency', currency: 'USD' }).format(due(expected)));
    expect(row[2]).toContain(
      new Intl.DateTimeFormat('de-DE', { year: 'numeric', month: 'short', day: 'numeric', timeZone: 'UTC' }).format(
        new Date(`${expected.dueDate}T00:00:00Z`),
      ),
    );
    // A locale Intl does not know falls back to BOT_LOCALE rather than failing.
    const odd = channelMessage('bills due', { serviceUrl: bot.connector.url, channel: '19:channel-xx@thread.tacv2' });
    odd.locale = 'not a locale!';
    expect((await bot.send(odd)).status).toBe(200);
    const [oddReply] = await bot.connector.waitForMessages(1, odd.conversation.id);
    expect(tableRows(ConnectorStandIn.card(oddReply!))[0]!.at(-1)).toMatch(/^\$/);
  });
});

describe('bills overdue', () => {
  it('lists every unpaid bill past due, oldest first, with days overdue and the total', async () => {
    const expected = sandboxBills()
      .filter((b) => unpaid(b) && b.dueDate < TODAY)
      .sort(soonestFirst);
    expect(expected.length).toBeGreaterThan(0);
    const { rows, first } = await allRows(bot.app, 'bills overdue');
    expectValidCard(first.reply.card);
    expect(rows.map((r) => r[1])).toEqual(expected.map((b) => b.invoice!.invoiceNumber));
    expect(rows.map((r) => Number(r[3]))).toEqual(expected.map((b) => daysLate(b.dueDate)));
    expect(rows.map((r) => r.at(-1))).toEqual(expected.map((b) => money(due(b))));
    expect(factsOf(first.reply.card).Overdue).toBe(
      `${money(total(expected.map(due)))} · ${expected.length} bill${expected.length === 1 ? '' : 's'}`,
    );
  });
});

describe('bill', () => {
  it('shows one bill by its vendor invoice number: vendor, amounts, dates, statuses, approvers and line items', async () => {
    const numbers = new Map<string, number>();
    for (const b of sandboxBills()) numbers.set(b.invoice!.invoiceNumber!, (numbers.get(b.invoice!.invoiceNumber!) ?? 0) + 1);
    const bill = sandboxBills().find(
      (b) => numbers.get(b.invoice!.invoiceNumber!) === 1 && (b.approvers?.length ?? 0) > 0 && (b.billLineItems?.length ?? 0) > 0,
    )!;
    const r = await ask(bot.app, `bill ${bill.invoice!.invoiceNumber!.toLowerCase()}`);
    expect(r.outcome).toBe('ok');
    expectValidCard(r.reply.card);
    const f = factsOf(r.reply.card);
    expect(f.Vendor).toBe(bill.vendorName);
    expect(f.Amount).toBe(money(bill.amount));
    expect(f.Paid).toBe(money(bill.paidAmount ?? 0));
    expect(f.Due).toBe(money(due(bill)));
    expect(f.Scheduled).toBe(money(bill.scheduledAmount ?? 0));
    expect(f['Invoice #']).toBe(bill.invoice!.invoiceNumber);
    expect(f['Approver 1']).toBeDefined();
    expect(textOf(r.reply.card)).toContain(`Line items (${bill.billLineItems!.length})`);
    expect(JSON.stringify(r.reply.card)).not.toContain(bill.id);
  });

  it("finds a bill by its BILL id, and several vendors' bills sharing a number come as a list to pick from", async () => {
    const [a, b] = sandboxBills()
      .filter((x) => x.vendorId !== sandboxBills()[0]!.vendorId)
      .slice(0, 2);
    const byId = await ask(bot.app, `bill ${a!.id}`);
    expect(byId.outcome).toBe('ok');
    expect(factsOf(byId.reply.card).Vendor).toBe(a!.vendorName);
    // Two bills with one number: the index learns of it through the refresh a stale mark (a webhook) brings.
    for (const x of [a!, b!])
      bot.app.sandbox!.org.bills.put({
        ...x,
        invoice: { ...x.invoice, invoiceNumber: 'SHARED-77' },
        updatedTime: new Date(clock.now()).toISOString(),
      });
    await bot.app.mirror.markStale(bot.app.sandbox!.org.id, 'bill');
    const list = await ask(bot.app, 'bill shared-77');
    expectValidCard(list.reply.card);
    expect(textOf(list.reply.card)).toContain('2 bills have invoice number\nshared-77 · ');
    expect(
      tableRows(list.reply.card)
        .map((r) => r[0])
        .sort(),
    ).toEqual([a!.vendorName, b!.vendorName].sort());
  });

  it('an unknown number or id gets a card saying what was understood', async () => {
    const r = await ask(bot.app, 'bill NOPE-00000');
    expect(r.outcome).toBe('error');
    expect(textOf(r.reply.card)).toContain('No bill with invoice number "NOPE-00000"');
    expect(textOf(r.reply.card)).toContain('I understood: bill NOPE-00000');
    const id = await ask(bot.app, 'bill 00n01AAAAAAAAAAAAAAA');
    expect(textOf(id.reply.card)).toContain('No bill with BILL id');
    const none = await ask(bot.app, 'bill');
    expect(textOf(none.reply.card)).toContain('Which bill?');
  });
});

describe('payments', () => {
  it('lists the last 10 payments, newest process date first, with the status in words and the total', async () => {
    const words: Record<string, string> = {
      CLEARED: 'Cleared',
      DELIVERED: 'Delivered',
      SENT: 'Sent to the vendor',
      PROCESSED: 'Processed',
      FUNDING_STARTED: 'Collecting funds',
      SCHEDULED: 'Scheduled',
      CANCELED: 'Canceled',
      VOIDED: 'Voided',
      DISBURSEMENT_FAILED_ACTION_NEEDED: 'Delivery failed — action needed',
    };
    // BILL's order: processDate descending; the sandbox breaks ties by id.
    const all = bot.app.sandbox!.org.payments.all().sort((a, b) => b.processDate.localeCompare(a.processDate) || a.id.localeCompare(b.id));
    const expected = all.slice(0, 10);
    const { rows, first } = await allRows(bot.app, 'payments');
    expectValidCard(first.reply.card);
    expect(rows).toEqual(
      expected.map((p) => [
        p.vendorName,
        new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' }).format(new Date(`${p.processDate}T00:00:00Z`)),
        words[p.singleStatus],
        money(p.amount),
      ]),
    );
    // The total is money that moved or will move: canceled, voided and failed payments are listed but not counted.
    const moved = expected.filter((p) => !['CANCELED', 'VOIDED', 'DISBURSEMENT_FAILED_ACTION_NEEDED'].includes(p.singleStatus));
    expect(factsOf(first.reply.card).Total).toBe(
      `${money(total(moved.map((p) => p.amount)))} · ${moved.length} payment${moved.length === 1 ? '' : 's'}`,
    );
    bot.app.sandbox!.clearRequests();
    const twenty = await allRows(bot.app, 'payments 20');
    expect(twenty.rows.map((r) => r.at(-1))).toEqual(all.slice(0, 20).map((p) => money(p.amount)));
    // Every count is cut from the one page of the last 50 that `payments` read: no second call.
    expect(bot.app.sandbox!.requests().filter((r) => r.route === 'GET /v3/payments')).toHaveLength(0);
  });
});

describe('time zones', () => {
  let tokyo: TestBot;
  beforeAll(async () => {
    // 15:30 UTC on March 10 is 00:30 on March 11 in Tokyo.
    tokyo = await startBot({ clock: new ManualClock(NOW), env: { BOT_TIMEZONE: 'Asia/Tokyo' } });
  });
  afterAll(async () => {
    await tokyo.close();
  });

  it('a bill due "today" in BOT_TIMEZONE but "tomorrow" in UTC is listed as due today', async () => {
    const bills = tokyo.app.sandbox!.org.bills.all().filter((b) => unpaid(b) && b.paymentStatus === 'UNPAID');
    const tomorrowUtc = addDays(TODAY, 1);
    const dueThere = tokyo.app.sandbox!.org.bills.put({ ...bills[0]!, dueDate: tomorrowUtc }); // today in Tokyo
    const dueHereYesterday = tokyo.app.sandbox!.org.bills.put({ ...bills[1]!, dueDate: TODAY }); // yesterday in Tokyo
    const r = await ask(tokyo.app, 'bills due 0');
    expectValidCard(r.reply.card);
    expect(textOf(r.reply.card)).toContain('Bills due today');
    const rows = tableRows(r.reply.card);
    const row = rows.find((x) => x[1] === dueThere.invoice!.invoiceNumber);
    expect(row?.[2]).toBe('Mar 11, 2026 · today');
    expect(rows.map((x) => x[1])).not.toContain(dueHereYesterday.invoice!.invoiceNumber);
    const overdue = await allRows(tokyo.app, 'bills overdue');
    const late = overdue.rows.find((x) => x[1] === dueHereYesterday.invoice!.invoiceNumber);
    expect(late?.[3]).toBe('1');
  });
});
