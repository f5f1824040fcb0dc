// Time-driven notifications with a fake clock: a channel's digest is posted at its slot in BOT_TIMEZONE, skipped when
// nothing changed, never posted twice for one slot (also after a restart); a delivery Teams keeps refusing is retried
// with backoff a bounded number of times, then dead-lettered.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { checkCard } from '../harness/cards.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { post } from '../harness/net.js';
import { sandboxControlOk } from '../harness/sandbox.js';
import { ManualClock } from '../../src/infra/clock.js';
import { NS } from '../../src/infra/state/types.js';
import { RETRY_DELAYS_MS } from '../../src/notify/worker.js';

const KEY = randomBytes(32).toString('base64');
const ZONE = 'America/New_York';
// Monday 2 March 2026, 08:00 in New York (EST, UTC-5).
const START = Date.parse('2026-03-02T13:00:00Z');
const DIGEST = '19:channel-digest@thread.tacv2';
const FLAKY = '19:channel-flaky@thread.tacv2';
const WAITING = '19:channel-bill-down@thread.tacv2';
const REFUSED = '19:channel-bill-refuses@thread.tacv2';
const HOUR = 3_600_000;

const clock = new ManualClock(START);
const stateDir = mkdtempSync(join(tmpdir(), 'billbridge-schedule-'));
let connector: ConnectorStandIn;
let bot: TestBot;
let overdueBillId = '';

const env = { BOT_TIMEZONE: ZONE, BILL_WEBHOOK_SECURITY_KEY: KEY, LOG_LEVEL: 'info' };

/** The demo organisation reduced to one long-overdue bill, so what a digest shows only changes when the test says. */
function quietOrganisation(b: TestBot): void {
  const org = b.app.sandbox!.org;
  for (const bill of org.bills.all()) org.bills.put({ ...bill, archived: true });
  for (const inv of org.invoices.all()) org.invoices.put({ ...inv, archived: true });
  const one = org.bills.all().find((x) => x.invoice?.invoiceNumber)!;
  overdueBillId = one.id;
  org.bills.put({ ...one, archived: false, paymentStatus: 'UNPAID', dueDate: '2025-06-01', amount: 500, dueAmount: 500, paidAmount: 0 });
}

async function start(): Promise<TestBot> {
  const b = await startBot({ env, clock, stateDir, connector });
  quietOrganisation(b);
  return b;
}

beforeAll(async () => {
  connector = await new ConnectorStandIn().start();
  bot = await start();
});
afterAll(async () => {
  await bot.close();
  await connector.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

async function say(text: string, channel: string) {
  const res = await bot.say(text, { channel });
  expect(res.status).toBe(200);
  const [reply] = await connector.waitForMessages(1, res.activity.conversation.id);
  const card = ConnectorStandIn.card(reply!);
  expect(checkCard(card).problems).toEqual([]);
  return card;
}

const digests = () => connector.messages(DIGEST);
const at = (iso: string) => clock.set(Date.parse(iso));

describe('a daily digest at 09:00 New York time', () => {
  it("is scheduled from the channel, in the bot's time zone", async () => {
    const card = JSON.stringify(await say('digest daily 09:00', DIGEST));
    expect(card).toContain('Digest scheduled');
    expect(card).toContain('every day at 09:00 (America/New_York)');
    expect(card).toContain('Mar 2, 2026, 9:00 AM');
  });

  it('is not posted before its slot', async () => {
    at('2026-03-02T13:59:00Z');
    expect(await bot.app.notify.scheduler.tick()).toMatchObject({ posted: 0 });
    expect(digests()).toHaveLength(0);
  });

  it('is posted at the slot: bills due this week, overdue bills, overdue invoices', async () => {
    at('2026-03-02T14:00:30Z');
    expect(await bot.app.notify.scheduler.tick()).toMatchObject({ posted: 1 });
    const [posted] = await connector.waitForMessages(1, DIGEST);
    const card = ConnectorStandIn.card(posted!);
    expect(checkCard(card).problems).toEqual([]);
    expect(checkCard(card).bytes).toBeLessThan(40 * 1024);
    const text = JSON.stringify(card);
    expect(text).toContain('Daily digest');
    expect(text).toContain('Bills due in the next 7 days: none');
    expect(text).toContain('Overdue bills: 1, $500.00');
    expect(text).toContain('Overdue invoices: none');
    expect(posted!.body?.conversation?.id).toBe(DIGEST);
  });

  it('is never posted twice for one slot, not even after a restart', async () => {
    at('2026-03-02T14:20:00Z');
    expect(await bot.app.notify.scheduler.tick()).toMatchObject({ posted: 0 });
    await bot.close();
    bot = await start();
    expect(await bot.app.notify.scheduler.tick()).toMatchObject({ posted: 0 });
    expect(digests()).toHaveLength(1);
  });

  it('is skipped the next morning when nothing changed', async () => {
    at('2026-03-03T14:00:10Z');
    expect(await bot.app.notify.scheduler.tick()).toMatchObject({ posted: 0, unchanged: 1 });
    expect(digests()).toHaveLength(1);
  });

  it('is posted again once something changed (the overdue bill was paid)', async () => {
    const res = await post(`${bot.app.sandbox!.url}/__sandbox/bills/${overdueBillId}/pay`, {});
    expect(res.status).toBe(200);
    at('2026-03-04T14:00:10Z');
    expect(await bot.app.notify.scheduler.tick()).toMatchObject({ posted: 1 });
    const cards = await connector.waitForMessages(2, DIGEST);
    expect(JSON.stringify(ConnectorStandIn.card(cards[1]!))).toContain('Overdue bills: none');
  });

  it('a slot missed by hours (the bot was down) is not posted late', async () => {
    at('2026-03-05T20:00:00Z');
    expect(await bot.app.notify.scheduler.tick()).toMatchObject({ posted: 0 });
    expect(digests()).toHaveLength(2);
  });

  it('digest now shows one on demand; digest off stops the schedule', async () => {
    const now = JSON.stringify(await say('digest now', DIGEST));
    expect(now).toContain('Overdue bills: none');
    expect(JSON.stringify(await say('digest off', DIGEST))).toContain('Digest off');
    at('2026-03-06T14:00:10Z');
    expect(await bot.app.notify.scheduler.tick()).toMatchObject({ posted: 0, unchanged: 0 });
    expect(digests()).toHaveLength(2);
  });

  it('explains a schedule it cannot read', async () => {
    const card = JSON.stringify(await say('digest weekly someday 9', DIGEST));
    expect(card).toContain('a weekly digest needs a day such as monday');
    expect(card).toContain('digest weekly monday 09:00');
  });
});

/** An invoice.created event about a new invoice BILL (the sandbox) has: cards show BILL's record, not `payload`. */
function signedInvoiceEvent(
  id = '00e01flakyinvoice0001',
  number = 'INV-9001',
  payload: Record<string, unknown> = {},
): { body: string; signature: string } {
  const org = bot.app.sandbox!.org;
  const invoice = {
    ...org.invoices.all()[0]!,
    id,
    invoiceNumber: number,
    totalAmount: 75,
    dueAmount: 75,
    dueDate: '2026-04-01',
    status: 'OPEN' as const,
    archived: false,
  };
  org.invoices.put(invoice);
  const body = JSON.stringify({
    metadata: {
      eventId: randomUUID(),
      subscriptionId: 'sub-outside',
      organizationId: bot.app.sandbox!.credentials.orgId,
      eventType: 'invoice.created',
      version: '1',
    },
    invoice: { ...invoice, ...payload },
  });
  return { body, signature: createHmac('sha256', KEY).update(body).digest('base64') };
}

describe('Teams keeps answering 412', () => {
  it('retries with backoff, a bounded number of times, then dead-letters the card and shows it in status', async () => {
    await say('subscribe invoices', FLAKY);
    const attempts = () => connector.calls.filter((c) => c.conversationId === FLAKY && (c.kind === 'reply' || c.kind === 'send'));
    connector.failSends(100, { status: 412, body: { error: { code: 'PreconditionFailed', message: 'concurrent operation' } } }, FLAKY);
    const event = signedInvoiceEvent();
    expect((await post(`${bot.url}/api/bill/webhooks`, event.body, { 'x-bill-sha-signature': event.signature })).json?.status).toBe(
      'accepted',
    );
    await bot.app.notify.worker.drain();
    expect(attempts()).toHaveLength(1);

    // Not before the backoff has passed...
    clock.advance(RETRY_DELAYS_MS[0]! * 0.5);
    await bot.app.notify.worker.drain();
    expect(attempts()).toHaveLength(1);
    // ...then once per backoff step.
    for (let i = 0; i < RETRY_DELAYS_MS.length; i++) {
      clock.advance(RETRY_DELAYS_MS[i]! * 1.3);
      await bot.app.notify.worker.drain();
      expect(attempts()).toHaveLength(i + 2);
    }
    clock.advance(10 * HOUR);
    await bot.app.notify.worker.drain();
    expect(attempts()).toHaveLength(RETRY_DELAYS_MS.length + 1);
    expect(connector.messages(FLAKY)).toHaveLength(0);

    const letters = (await bot.app.state.entries<{ channelId: string; status: number; tries: number }>(NS.deadLetters)).map(([, d]) => d);
    expect(letters).toEqual([expect.objectContaining({ channelId: FLAKY, status: 412, tries: RETRY_DELAYS_MS.length + 1 })]);
    expect(await bot.app.state.entries(NS.outbox)).toEqual([]);
    const status = JSON.stringify(await say('status', FLAKY));
    expect(status).toContain('1 in the last 30 days, 1 here');
    // The event type is BILL's text, escaped for Teams markdown (Teams shows "invoice.created").
    expect(status).toContain(JSON.stringify('Not delivered here: invoice\\.created').slice(1, -1));
  });
});

describe('BILL cannot answer when an event arrives', () => {
  it("no card goes out (never one from the payload) while BILL fails; the event waits and posts BILL's record once BILL answers", async () => {
    // Only this channel follows invoices now (Teams still refuses the flaky channel's sends).
    await say('unsubscribe invoices', FLAKY);
    await say('subscribe invoices', WAITING);
    const sends = () => connector.calls.filter((c) => c.conversationId === WAITING && (c.kind === 'reply' || c.kind === 'send'));
    await sandboxControlOk(bot.app.sandbox!.url, 'POST', '/faults', { kind: 'serverError', path: '/v3/invoices', count: 1_000 });
    try {
      const event = signedInvoiceEvent('00e01billdowninvoice1', 'INV-9002', { totalAmount: 50_000, dueAmount: 50_000 });
      expect((await post(`${bot.url}/api/bill/webhooks`, event.body, { 'x-bill-sha-signature': event.signature })).json?.status).toBe(
        'accepted',
      );
      await bot.app.notify.worker.drain();
      expect(sends()).toHaveLength(0);
      clock.advance(RETRY_DELAYS_MS[0]! * 1.3);
      await bot.app.notify.worker.drain();
      expect(sends()).toHaveLength(0);
      const waiting = (
        await bot.app.state.entries<{ eventId: string; confirmed?: boolean; targets?: Record<string, { state: string }> }>(NS.outbox)
      ).map(([, ev]) => ev);
      expect(waiting).toHaveLength(1);
      expect(Object.values(waiting[0]!.targets ?? {}).map((t) => t.state)).toEqual(['pending']);
      expect(waiting[0]!.confirmed).toBeUndefined();
    } finally {
      await sandboxControlOk(bot.app.sandbox!.url, 'DELETE', '/faults');
    }
    clock.advance(RETRY_DELAYS_MS[2]! * 1.3);
    await bot.app.notify.worker.drain();
    const [card] = await connector.waitForMessages(1, WAITING);
    const shown = JSON.stringify(ConnectorStandIn.card(card!));
    expect(shown).toContain('INV-9002');
    expect(shown).toContain('$75.00');
    expect(shown).not.toContain('50,000');
    expect(await bot.app.state.entries(NS.outbox)).toEqual([]);
  });
});

describe('BILL refuses to read the record of an event', () => {
  it("the dead letter a refused read leaves says on `status` why it was set aside, not that it failed 'after 0 tries'", async () => {
    await say('unsubscribe invoices', WAITING);
    await say('subscribe invoices', REFUSED);
    // A 400 without a code: BILL calls the read a wrong request, which asking again cannot change.
    await sandboxControlOk(bot.app.sandbox!.url, 'POST', '/faults', { kind: 'noCodeError', path: '/v3/invoices', count: 1_000 });
    try {
      const event = signedInvoiceEvent('00e01billrefusesinv01', 'INV-9003');
      expect((await post(`${bot.url}/api/bill/webhooks`, event.body, { 'x-bill-sha-signature': event.signature })).json?.status).toBe(
        'accepted',
      );
      await bot.app.notify.worker.drain();
    } finally {
      await sandboxControlOk(bot.app.sandbox!.url, 'DELETE', '/faults');
    }
    const letters = (await bot.app.state.entries<{ channelId: string; tries: number }>(NS.deadLetters)).map(([, d]) => d);
    expect(letters.filter((d) => d.channelId === REFUSED)).toEqual([expect.objectContaining({ tries: 0 })]);
    const status = JSON.stringify(await say('status', REFUSED));
    expect(status).toContain(JSON.stringify('Not delivered here: invoice\\.created').slice(1, -1));
    expect(status).not.toMatch(/after 0 tries/);
    expect(status).toContain('BILL refused to read the record');
  });
});
