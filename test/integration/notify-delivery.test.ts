// A finance team hears about BILL changes in the channels that follow them: a paid bill in BILL becomes exactly one
// card in each subscribed channel (and none elsewhere), through the real webhook route, the outbox and proactive sends.
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxControlOk } from '../harness/sandbox.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { checkCard } from '../harness/cards.js';
import { ConnectorStandIn, type ConnectorCall } from '../harness/connector.js';
import { channelMessage, DEFAULT_USER, executeInvoke, TENANT, teamIds } from '../harness/activities.js';
import { NS } from '../../src/infra/state/types.js';
import type { AuditRecord } from '../../src/infra/audit.js';

const ADMIN = DEFAULT_USER.aadObjectId;
const AP = '19:channel-ap@thread.tacv2';
const PAY = '19:channel-payments@thread.tacv2';
const QUIET = '19:channel-quiet@thread.tacv2';
const GONE = '19:channel-gone@thread.tacv2';

let bot: TestBot;

beforeAll(async () => {
  // SECRETS_KEY seals the webhook keys at rest.
  bot = await startBot({ env: { ADMIN_AAD_OBJECT_IDS: ADMIN, LOG_LEVEL: 'info', SECRETS_KEY: randomBytes(32).toString('base64') } });
});
afterAll(async () => {
  await bot.close();
});

/** Says something in a channel and returns the card of the bot's reply in that thread. */
async function say(text: string, channel: string) {
  const res = await bot.say(text, { channel });
  expect(res.status).toBe(200);
  const conv = res.activity.conversation.id;
  const [reply] = await bot.connector.waitForMessages(1, conv);
  const card = ConnectorStandIn.card(reply!);
  // Every answer is a valid Adaptive Card 1.5 well under Teams' limits.
  expect(checkCard(card).problems).toEqual([]);
  expect(checkCard(card).bytes).toBeLessThan(40 * 1024);
  return card;
}

const sandbox = (method: string, path: string, body?: unknown) => sandboxControlOk(bot.app.sandbox!.url, method, path, body);

/** Posts in a channel (top level: the bare channel id), as opposed to replies in a command's thread. */
const posts = (channel: string): ConnectorCall[] => bot.connector.messages(channel);

function unpaidBill(): { id: string; vendorName: string; number: string; dueAmount: number } {
  const b = bot.app
    .sandbox!.org.bills.all()
    .find((x) => x.paymentStatus === 'UNPAID' && !x.archived && (x.dueAmount ?? x.amount) > 100 && x.invoice?.invoiceNumber)!;
  return { id: b.id, vendorName: b.vendorName!, number: b.invoice!.invoiceNumber!, dueAmount: b.dueAmount ?? b.amount };
}

const usd = (n: number) => new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(n);

async function settled(): Promise<void> {
  await sandbox('POST', '/webhooks/flush');
  await bot.app.notify.worker.drain();
}

describe('setting up', () => {
  it('two admins typing webhooks setup at the same moment both get the set-up card, and BILL holds one subscription whose key billbridge has', async () => {
    const url = `${bot.url}/api/bill/webhooks`;
    const cards = await Promise.all([say(`webhooks setup ${url}`, AP), say(`webhooks setup ${url}`, PAY)]);
    for (const card of cards) expect(JSON.stringify(card)).toContain('Webhooks set up');
    const subs = bot.app.sandbox!.org.subscriptions.all();
    expect(subs).toHaveLength(1);
    expect(bot.app.secrets.list()).toContain(subs[0]!.securityKey);
    expect((await bot.app.notify.keys.list(bot.app.sandbox!.org.id)).map((k) => k.subscriptionId)).toEqual([subs[0]!.id]);
  });

  it('a setup URL carrying a password is refused without repeating the password on the card, its Try again or in the audit trail', async () => {
    const card = await say('webhooks setup https://ops:Hunter2Secret@bot.example/api/bill/webhooks', AP);
    expect(JSON.stringify(card)).toContain('must not carry credentials');
    expect(JSON.stringify(card)).not.toContain('Hunter2Secret');
    expect(await readFile(bot.app.audit.location, 'utf8')).not.toContain('Hunter2Secret');
    expect(bot.logs.text()).not.toContain('Hunter2Secret');
  });

  it('an admin points BILL at the bot once; the key is stored sealed away from logs and cards', async () => {
    const card = await say(`webhooks setup ${bot.url}/api/bill/webhooks`, AP);
    expect(JSON.stringify(card)).toContain('Webhooks set up');
    expect(checkCard(card).problems).toEqual([]);
    const subs = bot.app.sandbox!.org.subscriptions.all();
    expect(subs).toHaveLength(1);
    expect(subs[0]!.notificationUrl).toBe(`${bot.url}/api/bill/webhooks`);
    expect(subs[0]!.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['bill.updated', 'payment.updated', 'payment.failed', 'invoice.updated', 'vendor.created']),
    );
    const key = subs[0]!.securityKey;
    expect(JSON.stringify(card)).not.toContain(key);
    expect(bot.app.secrets.list()).toContain(key);
    expect(bot.logs.text()).not.toContain(key);
    // The key as stored (through the running bot's store), and the bytes on disk (database and WAL).
    const stored = JSON.stringify(await bot.app.state.entries(NS.webhookKeys));
    const disk = (await Promise.all((await readdir(bot.stateDir)).map((f) => readFile(`${bot.stateDir}/${f}`, 'latin1')))).join('\n');
    expect(disk).toContain(subs[0]!.id);
    expect(disk).not.toContain(key);
    expect(stored).toContain(subs[0]!.id);
    expect(stored).toContain('aes-256-gcm');
    expect(stored).not.toContain(key);

    // Again: nothing new in BILL (10 per org, no duplicates), the same subscription is reused.
    const again = await say(`webhooks setup ${bot.url}/api/bill/webhooks`, AP);
    expect(JSON.stringify(again)).toContain('already sends events');
    expect(bot.app.sandbox!.org.subscriptions.all()).toHaveLength(1);
    const listed = JSON.stringify(await say('webhooks', AP));
    expect(listed).toContain('1 of 10 allowed');
    expect(listed).toContain(subs[0]!.id);
    expect(listed).not.toContain('billbridge has no key for it');
  });

  it("a subscription BILL names with 60,000 characters (made in BILL's own tools) is listed with its name cut short, not as a 'too large' card", async () => {
    const sub = bot.app.sandbox!.org.subscriptions.all()[0]!;
    const name = sub.name;
    sub.name = `Ops ${'N'.repeat(60_000)}`;
    try {
      const listed = JSON.stringify(await say('webhooks', AP));
      expect(listed).toContain(sub.id);
      expect(listed).toMatch(/Ops N{100,}…/);
    } finally {
      sub.name = name;
    }
  });

  it('refuses people who are not billbridge admins, and records the refusal', async () => {
    const res = await bot.say('webhooks', {
      channel: AP,
      from: { id: '29:mallory', aadObjectId: '99999999-0000-4000-8000-000000000099', name: 'Mallory' },
    });
    const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
    expect(JSON.stringify(ConnectorStandIn.card(reply!))).toContain('Only billbridge admins');
  });

  it('channels choose what they hear about', async () => {
    const ap = await say('subscribe bills', AP);
    expect(JSON.stringify(ap)).toContain('Subscribed');
    expect(JSON.stringify(ap)).toContain('Bills (created, changed, paid, archived)');
    expect(checkCard(ap).problems).toEqual([]);
    expect(JSON.stringify(await say('subscribe payments', PAY))).toContain('Payments to vendors');
    expect(JSON.stringify(await say('subscribe bills', GONE))).toContain('Subscribed');
    const listed = await say('subscriptions', PAY);
    expect(JSON.stringify(listed)).toContain('Payments to vendors');
    expect(JSON.stringify(listed)).not.toContain('Bills (created');
    const nonsense = await say('subscribe lunch', QUIET);
    expect(JSON.stringify(nonsense)).toContain('subscribe payments bills');
    const audit = (await readAudit()).filter((r) => r.kind === 'admin' && r.action === 'subscribe');
    expect(audit.map((r) => r.channelId)).toEqual(expect.arrayContaining([AP, PAY, GONE]));
  });
});

async function readAudit(): Promise<AuditRecord[]> {
  const text = await readFile(`${bot.stateDir}/audit.log`, 'utf8');
  return text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AuditRecord);
}

describe('a bill is paid in BILL', () => {
  it('posts exactly one card in each subscribed channel and none elsewhere', async () => {
    bot.connector.failSends(
      1,
      { status: 403, body: { error: { code: 'BotNotInConversationRoster', message: 'The bot is not part of the conversation roster.' } } },
      GONE,
    );
    const bill = unpaidBill();
    await sandbox('POST', `/bills/${bill.id}/pay`, {});
    await settled();

    const [billCard] = await bot.connector.waitForMessages(1, AP);
    const [payCard] = await bot.connector.waitForMessages(1, PAY);
    expect(posts(AP)).toHaveLength(1);
    expect(posts(PAY)).toHaveLength(1);
    expect(posts(QUIET)).toHaveLength(0);

    const billText = JSON.stringify(ConnectorStandIn.card(billCard!));
    expect(billText).toContain(`Bill ${bill.number} from ${bill.vendorName} is paid`);
    const payText = JSON.stringify(ConnectorStandIn.card(payCard!));
    // The payment payload names only the bill id; the card says the vendor's invoice number.
    expect(payText).toContain(`Payment to ${bill.vendorName} is being processed — ${usd(bill.dueAmount)}, bill ${bill.number}`);
    for (const c of [billCard!, payCard!]) {
      const card = ConnectorStandIn.card(c);
      expect(checkCard(card).problems).toEqual([]);
      expect(checkCard(card).bytes).toBeLessThan(40 * 1024);
      expect(JSON.stringify(card)).toContain('notify.refresh');
      expect(c.body?.conversation?.id).toBe(c.conversationId);
    }
    expect(bot.app.sandbox!.stats().webhooks.failed).toBe(0);
  });

  it('removes the subscriptions of a channel the bot was taken out of (403 BotNotInConversationRoster)', async () => {
    await bot.connector.waitFor((calls) => calls.some((c) => c.conversationId === GONE && c.status === 403));
    await bot.app.notify.worker.drain();
    expect(posts(GONE)).toHaveLength(0);
    const target = { tenantId: TENANT, teamId: teamIds().team, channelId: GONE };
    expect(await bot.app.notify.subscriptions.forChannel(target)).toEqual([]);
    expect(
      bot.logs.records().some((r) => r.msg === 'bot is no longer in the channel; its subscriptions are removed' && r.channelId === GONE),
    ).toBe(true);
    const audit = (await readAudit()).filter((r) => r.kind === 'admin' && r.action === 'unsubscribe' && r.channelId === GONE);
    expect(audit).toHaveLength(1);
  });

  it('says in words when a payment failed', async () => {
    const bill = unpaidBill();
    await sandbox('POST', `/bills/${bill.id}/pay`, { singleStatus: 'DISBURSEMENT_FAILED_ACTION_NEEDED' });
    await settled();
    const cards = await bot.connector.waitForMessages(2, PAY);
    const text = JSON.stringify(ConnectorStandIn.card(cards[1]!));
    expect(text).toContain(`Payment to ${bill.vendorName} failed — ${usd(bill.dueAmount)}, bill ${bill.number}`);
    expect(text).not.toMatch(/"color":"(Attention|Warning|Good)"/);
  });

  it("Refresh redraws the card from BILL's current record", async () => {
    const [billCard] = posts(AP);
    const action = ConnectorStandIn.card(billCard!).actions?.find((a) => a.title === 'Refresh');
    const base = channelMessage('', { serviceUrl: bot.connector.url, channel: AP });
    const res = await bot.send(executeInvoke(action!.data!, base));
    expect(res.status).toBe(200);
    expect(res.json?.type).toBe('application/vnd.microsoft.card.adaptive');
    const text = JSON.stringify(res.json?.value);
    expect(text).toContain('is paid');
    expect(text).toContain('Refreshed from BILL');
    expect(checkCard(res.json?.value).problems).toEqual([]);
  });
});

describe('Teams pushes back', () => {
  it('a throttled send (429) is delivered once, after Retry-After', async () => {
    bot.connector.failSends(
      1,
      { status: 429, headers: { 'Retry-After': '1' }, body: { error: { code: 'Throttled', message: 'slow down' } } },
      AP,
    );
    const created = await sandbox('POST', '/invoices', { totalAmount: 1234 });
    await sandbox('PATCH', `/invoices/${String(created?.id)}`, { archived: false, dueDate: '2031-01-01' });
    // Invoices are not followed by AP; a bill change is.
    const bill = unpaidBill();
    await sandbox('POST', `/bills/${bill.id}/pay`, { schedule: true });
    await settled();
    const cards = await bot.connector.waitForMessages(3, AP);
    const attempts = bot.connector.calls.filter((c) => c.conversationId === AP && c.kind === 'reply').slice(-2);
    expect(attempts.map((c) => c.status)).toEqual([429, 200]);
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1_000);
    expect(JSON.stringify(ConnectorStandIn.card(cards[2]!))).toContain(`Payment scheduled for bill ${bill.number} from ${bill.vendorName}`);
    expect(posts(AP)).toHaveLength(3);
  });

  it('a channel Teams holds back does not hold back the others', async () => {
    expect(JSON.stringify(await say('subscribe invoices', QUIET))).toContain('Subscribed');
    bot.connector.failSends(
      1,
      { status: 429, headers: { 'Retry-After': '2' }, body: { error: { code: 'Throttled', message: 'slow down' } } },
      AP,
    );
    const before = posts(AP).length;
    await sandbox('POST', `/bills/${unpaidBill().id}/pay`, {});
    // Created after the bill was paid: its event comes after the one the throttled channel waits on.
    await sandbox('POST', '/invoices', { totalAmount: 321 });
    await settled();
    const apCard = (await bot.connector.waitForMessages(before + 1, AP)).at(-1)!;
    const [invoiceCard] = await bot.connector.waitForMessages(1, QUIET);
    expect(JSON.stringify(ConnectorStandIn.card(invoiceCard!))).toContain('was created — $321.00');
    expect(apCard.at - invoiceCard!.at).toBeGreaterThanOrEqual(1_500);
    await say('unsubscribe', QUIET);
  });

  it('a send Teams refuses outright is dead-lettered and shows in status', async () => {
    bot.connector.failSends(1, { status: 413, body: { error: { code: 'MessageSizeTooBig', message: 'too big' } } }, PAY);
    const bill = unpaidBill();
    await sandbox('POST', `/bills/${bill.id}/pay`, {});
    await settled();
    await bot.connector.waitFor((calls) => calls.some((c) => c.conversationId === PAY && c.status === 413));
    await bot.app.notify.worker.drain();
    const letters = await bot.app.state.entries<{ channelId: string; status: number }>(NS.deadLetters);
    expect(letters.map(([, d]) => [d.channelId, d.status])).toEqual([[PAY, 413]]);
    const status = JSON.stringify(await say('status', PAY));
    expect(status).toContain('Notifications');
    expect(status).toContain('Dead letters');
    expect(status).toContain('1 in the last 30 days, 1 here');
    expect(status).toContain('payments');
  });
});

describe('unsubscribing', () => {
  it('stops the cards', async () => {
    expect(JSON.stringify(await say('unsubscribe', AP))).toContain('No more cards here for: bills');
    const before = posts(AP).length;
    await sandbox('POST', `/bills/${unpaidBill().id}/pay`, {});
    await settled();
    await bot.app.notify.worker.drain();
    expect(posts(AP)).toHaveLength(before);
  });
});
