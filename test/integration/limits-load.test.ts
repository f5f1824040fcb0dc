// A busy organisation against BILL's limits: 200 commands at once from 20 channels stay within 3 calls in flight with
// no BDC_1322; 50 identical questions cost one answer's calls; a spent hourly budget is never exceeded and says
// when it resets. Real HTTP, the embedded sandbox with a little latency so calls overlap.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { channelMessage } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn, type ConnectorCall } from '../harness/connector.js';
import { expectValidCard, tableRows, textOf } from '../harness/finance.js';

const channel = (n: number) => `19:channel-load-${n}@thread.tacv2`;
const user = (n: number) => ({
  id: `29:user-${n}`,
  aadObjectId: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  name: `User ${n}`,
});

/**
 * Posts every command at once (a line with `refresh` is the Refresh button of its card, clicked) and waits until each
 * conversation has its answer; returns the answer cards in order.
 */
async function sayAll(bot: TestBot, lines: Array<{ text: string; channel: string; from: ReturnType<typeof user>; refresh?: boolean }>) {
  const activities = lines.map((l) =>
    l.refresh
      ? channelMessage('', {
          serviceUrl: bot.connector.url,
          channel: l.channel,
          from: l.from,
          noMention: true,
          value: { verb: 'run', command: l.text, refresh: true },
        })
      : channelMessage(l.text, { serviceUrl: bot.connector.url, channel: l.channel, from: l.from }),
  );
  const sent = await Promise.all(activities.map((a) => bot.send(a)));
  for (const s of sent) expect(s.status).toBe(200);
  const ids = activities.map((a) => a.conversation.id);
  const replies = await bot.connector.waitFor(
    (calls) => {
      const byConversation = new Map<string, ConnectorCall>();
      for (const c of calls) if (c.body?.type === 'message' && c.status < 300) byConversation.set(c.conversationId!, c);
      return ids.every((id) => byConversation.has(id)) ? ids.map((id) => byConversation.get(id)!) : undefined;
    },
    15_000,
    `${ids.length} answers`,
  );
  return replies.map((r) => ConnectorStandIn.card(r));
}

describe('200 concurrent commands across 20 channels on one organisation', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({ env: { SANDBOX_LATENCY_MS: '20' } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('never has more than 3 BILL calls in flight, gets no BDC_1322, and answers every command', async () => {
    const org = bot.app.sandbox!.org;
    const vendorPrefixes = [
      ...new Set(
        org.vendors
          .all()
          .filter((v) => !v.archived)
          .map((v) => v.name.slice(0, 4)),
      ),
    ];
    const billNumbers = org.bills.all().map((b) => b.invoice!.invoiceNumber!);
    const invoiceNumbers = org.invoices.all().map((i) => i.invoiceNumber);
    // Refresh clicks on bills shown by BILL id: each reads its bill from BILL (names come from the org's mirror once
    // built, and every `payments N` shares one page).
    const billIds = org.bills.all().map((b) => b.id);
    const customerNames = org.customers.all().map((c) => c.name);
    const refreshOf = (text: string) => ({ text, refresh: true });
    const kinds: Array<(k: number) => string | { text: string; refresh: boolean }> = [
      (k: number) => `bills due ${k % 91}`,
      (k: number) => refreshOf(`bill ${billIds[k % billIds.length]}`),
      (k: number) => `customer ${customerNames[k % customerNames.length]}`,
      (k: number) => refreshOf(`bill ${billIds[(k * 7 + 1) % billIds.length]}`),
      (k: number) => `payments ${1 + (k % 50)}`,
      (k: number) => `vendor ${vendorPrefixes[k % vendorPrefixes.length]}`,
      (k: number) => `bill ${billNumbers[k % billNumbers.length]}`,
      (k: number) => `invoice ${invoiceNumbers[k % invoiceNumbers.length]}`,
      () => 'bills overdue',
      () => 'invoices overdue',
      (k: number) => (k % 2 ? 'spend transactions' : 'spend budgets'),
    ];
    const lines = Array.from({ length: 200 }, (_, k) => {
      const line = kinds[k % kinds.length]!(k);
      return { ...(typeof line === 'string' ? { text: line } : line), channel: channel(k % 20), from: user(k % 40) };
    });
    bot.app.sandbox!.resetStats();
    const cards = await sayAll(bot, lines);
    const stats = bot.app.sandbox!.stats();
    // Enough BILL work to queue (most of these answers come from the org's mirror once it is built).
    expect(stats.requests).toBeGreaterThan(40);
    expect(stats.maxConcurrentByOrg[org.id]).toBeLessThanOrEqual(3);
    expect(stats.maxConcurrentByOrg[org.id]).toBeGreaterThanOrEqual(2);
    expect(stats.errorsByCode.BDC_1322 ?? 0).toBe(0);
    expect(stats.limitErrors.concurrency).toBe(0);
    expect(cards).toHaveLength(200);
    for (const [k, card] of cards.entries()) {
      expectValidCard(card);
      const text = textOf(card);
      expect(text, lines[k]!.text).not.toMatch(/BILL is busy|Something went wrong|didn't answer as expected/);
    }
  }, 20_000);
});

describe('50 identical questions at once', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({ clock: new ManualClock(Date.parse('2026-03-10T15:30:00.000Z')), env: { SANDBOX_LATENCY_MS: '20' } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it("cost BILL one answer's list calls, not 50 times as many", async () => {
    const before = bot.app.sandbox!.stats().requestsByPath;
    bot.app.sandbox!.clearRequests();
    // A channel each: this clock does not move, so a channel's Bot Connector window would never slide.
    const cards = await sayAll(
      bot,
      Array.from({ length: 50 }, (_, k) => ({ text: 'bills due', channel: channel(100 + k), from: user(k) })),
    );
    // The first answer in an organisation starts its open-bills replica in the background; once it is built, BILL
    // has seen every call these 50 answers caused.
    const orgId = bot.app.sandbox!.org.id;
    await vi.waitFor(() => expect(bot.app.mirror.info(orgId).find((i) => i.kind === 'bill')?.complete).toBe(true));
    const after = bot.app.sandbox!.stats().requestsByPath;
    // One answer reads the due-this-week bills and the overdue bills: one page each (fewer than 100 rows).
    const org = bot.app.sandbox!.org;
    const today = '2026-03-10';
    const open = org.bills.all().filter((b) => !b.archived && b.paymentStatus !== 'PAID');
    const pages = (n: number) => Math.max(1, Math.ceil(n / 100));
    const oneAnswer =
      pages(
        open.filter((b) => b.dueDate >= today && b.dueDate <= new Date(Date.parse(today) + 7 * 86_400_000).toISOString().slice(0, 10))
          .length,
      ) + pages(open.filter((b) => b.dueDate < today).length);
    const lists = bot.app.sandbox!.requests().filter((r) => r.route === 'GET /v3/bills');
    expect(lists.filter((r) => r.filters?.includes('dueDate')).length).toBe(oneAnswer);
    // ...and the replica was built once, open bills only, 100 a page.
    expect(lists.filter((r) => r.filters === 'archived:eq:false,paymentStatus:ne:PAID').length).toBe(pages(open.length));
    expect((after['GET /v3/bills'] ?? 0) - (before['GET /v3/bills'] ?? 0)).toBe(oneAnswer + pages(open.length));
    // The vendor currencies those rows need are fetched once too.
    expect((after['GET /v3/vendors'] ?? 0) - (before['GET /v3/vendors'] ?? 0)).toBe(1);
    const first = JSON.stringify(tableRows(cards[0]));
    for (const card of cards) {
      expectValidCard(card);
      expect(JSON.stringify(tableRows(card))).toBe(first);
    }
  });
});

describe('an hourly budget of 10 BILL requests', () => {
  let bot: TestBot;
  beforeAll(async () => {
    // Half past ten UTC: the budget comes back at 11:00.
    bot = await startBot({ clock: new ManualClock(Date.parse('2026-03-10T10:30:00.000Z')), env: { LIMIT_BILL_REQUESTS_PER_HOUR: '10' } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('makes exactly 10 calls; the command that would make the 11th says when the budget resets', async () => {
    // The org's mirror answers most of these once built; bills by BILL id each need their own call.
    const byId = bot.app
      .sandbox!.org.bills.all()
      .slice(0, 3)
      .map((b) => `bill ${b.id}`);
    const commands = [
      'bills due',
      'payments',
      'vendor acme',
      'customer contoso',
      'bills due 30',
      'payments 25',
      'vendor summit',
      'customer fabrikam',
      'bills due 60',
      'payments 40',
      ...byId,
    ];
    let refused: ReturnType<typeof ConnectorStandIn.card> | undefined;
    let n = 0;
    for (const text of commands) {
      // A channel each: this clock does not move, so one channel's Bot Connector window would never slide.
      const [card] = await sayAll(bot, [{ text, channel: channel(200 + n++), from: user(1) }]);
      expectValidCard(card);
      if (textOf(card).includes('BILL hourly limit reached')) {
        refused = card;
        break;
      }
    }
    expect(refused, 'no command was refused').toBeDefined();
    expect(bot.app.sandbox!.stats().requests).toBe(10);
    expect(textOf(refused)).toContain('They reset at 11:00 AM (in about 30 min)');
    // Later commands that need BILL are refused at once, without calling it (answers still cached are still given).
    const someBill = bot.app.sandbox!.org.bills.all()[7]!.id;
    const [again] = await sayAll(bot, [{ text: `bill ${someBill}`, channel: channel(299), from: user(2) }]);
    expect(textOf(again)).toContain('BILL hourly limit reached');
    expect(bot.app.sandbox!.stats().requests).toBe(10);
    expect(bot.app.sandbox!.stats().limitErrors.hourly).toBe(0);
  });
});
