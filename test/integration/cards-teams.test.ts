// What Teams shows, asked for over HTTP as Teams sends it: user and BILL text that cannot format or link, help that
// shows its arguments and fits the conversation, suggestions with a button, a payments total of money that moved,
// and a status card that keeps hosts and paths for admins.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Payment } from '../../src/bill/types.js';
import { channelMessage, executeInvoke, groupChatMessage, personalMessage, type Who } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { expectValidCard, factsOf, money, plain, tableRows, textOf, total } from '../harness/finance.js';
import { actionUrls, liveMarkup, markdownTexts } from '../harness/markdown.js';

const ADMIN: Who = { id: '29:admin-ana', name: 'Ana Admin', aadObjectId: '22222222-0000-4000-8000-0000000000ad' };
const HOSTILE_VENDOR = '*Star* [x](https://evil.example) <b>bold</b> _it_';
let bot: TestBot;

beforeAll(async () => {
  // The real clock: Teams send budgets (7 a second per thread) count in it, and this file sends over HTTP.
  bot = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '10000', ADMIN_AAD_OBJECT_IDS: ADMIN.aadObjectId! } });
  // BILL data with markdown in it, there before the bot reads anything: the vendor of the newest payment is renamed.
  const org = bot.app.sandbox!.org;
  const payment = org.payments.all().sort((a, b) => b.processDate.localeCompare(a.processDate))[0]!;
  const vendor = org.vendors.find((v) => v.id === payment.vendorId)!;
  org.vendors.put({ ...vendor, name: HOSTILE_VENDOR });
  for (const p of org.payments.all().filter((x) => x.vendorId === vendor.id)) org.payments.put({ ...p, vendorName: HOSTILE_VENDOR });
  for (const b of org.bills.all().filter((x) => x.vendorId === vendor.id)) org.bills.put({ ...b, vendorName: HOSTILE_VENDOR });
});
afterAll(async () => {
  await bot.close();
});

async function reply(activity: { id: string }) {
  const res = await bot.send(activity);
  expect(res.status).toBeLessThan(300);
  const [call] = await bot.connector.waitFor(
    (calls) => {
      const m = calls.filter(
        (c) => (c.kind === 'reply' || c.kind === 'send') && c.body?.type === 'message' && c.activityId === activity.id,
      );
      return m.length > 0 ? m : undefined;
    },
    10_000,
    `the reply to ${activity.id}`,
  );
  const card = ConnectorStandIn.card(call!);
  expectValidCard(card);
  return card;
}

const inChannel = (text: string, from?: Who) => reply(channelMessage(text, { serviceUrl: bot.connector.url, from }));
const inPersonalChat = (text: string, from?: Who) => reply(personalMessage(text, { serviceUrl: bot.connector.url, from }));
const inGroupChat = (text: string) => reply(groupChatMessage(text, { serviceUrl: bot.connector.url }));

describe('user and BILL text cannot format or link', () => {
  it('a vendor search for "[Session expired - sign in](https://evil.example)" answers with the text escaped and no link anywhere', async () => {
    const card = await inChannel('vendor [Session expired - sign in](https://evil.example)');
    const texts = markdownTexts(card);
    const echoing = texts.filter((t) => plain(t).includes('Session expired'));
    expect(echoing.length).toBeGreaterThan(0);
    expect(texts.join('\n')).toContain('\\[Session expired - sign in\\]\\(https\\://evil\\.example\\)');
    for (const t of texts) expect(liveMarkup(t), t).toEqual([]);
    expect(actionUrls(card).filter((u) => u.includes('evil'))).toEqual([]);
    expect(plain(echoing[0]!)).toContain('[Session expired - sign in](https://evil.example)');
  });

  it('a vendor BILL named with *, [x](y) and <b> shows in payments and in its vendor card exactly as named, escaped', async () => {
    const payments = await inChannel('payments 50');
    expect(tableRows(payments).map((r) => r[0])).toContain(HOSTILE_VENDOR);
    for (const t of markdownTexts(payments)) expect(liveMarkup(t), t).toEqual([]);

    const found = await inChannel('vendor *Star*');
    expect(textOf(found).split('\n')[0]).toBe(HOSTILE_VENDOR);
    for (const t of markdownTexts(found)) expect(liveMarkup(t), t).toEqual([]);
    expect(actionUrls(found).filter((u) => u.includes('evil'))).toEqual([]);
  });

  it('an unknown command full of markup is echoed escaped', async () => {
    const card = await inChannel('frobnicate &lt;img src=x&gt; **now** [here](http://evil.example)');
    expect(textOf(card)).toContain('frobnicate <img src=x> **now** [here](http://evil.example)');
    for (const t of markdownTexts(card).filter((x) => plain(x).includes('frobnicate'))) expect(liveMarkup(t), t).toEqual([]);
  });
});

describe('help', () => {
  it('shows every argument in a form Teams displays: no <...> for Teams to drop', async () => {
    const card = await inChannel('help');
    const texts = markdownTexts(card);
    for (const t of texts) expect(t, t).not.toMatch(/[<>]/);
    const all = texts.join('\n');
    expect(all).toContain('invoice {number}');
    expect(all).toContain('vendor {name}');
    expect(all).toContain('bills due [days]');
    expect(all).toContain('link {BILL organisation id}');
  });

  it('in a channel it says to mention the bot; in a personal chat it does not', async () => {
    const channel = textOf(await inChannel('help'));
    expect(channel).toContain('Mention me');
    const group = textOf(await inGroupChat('help'));
    expect(group).toContain('Mention me');
    const personal = textOf(await inPersonalChat('help'));
    expect(personal).not.toMatch(/mention/i);
    expect(personal).toContain('Type a command here');
  });

  it('the hint on an unknown command fits the conversation', async () => {
    expect(textOf(await inChannel('what is the weather'))).toContain('@billbridge help');
    const personal = textOf(await inPersonalChat('what is the weather'));
    expect(personal).toContain('Type **help**');
    expect(personal).not.toContain('@billbridge');
  });
});

describe('suggestions', () => {
  it('"bils due" is answered with "Did you mean bills due?" and a button that runs bills due', async () => {
    const base = channelMessage('bils due', { serviceUrl: bot.connector.url });
    const card = await reply(base);
    expect(textOf(card)).toContain('Did you mean **bills due [days]**?');
    const run = card.actions?.find((a) => a.data?.command === 'bills due');
    expect(run, JSON.stringify(card.actions)).toBeDefined();
    const before = bot.connector.calls.length;
    const clicked = await bot.send(executeInvoke(run!.data!, base));
    expect(clicked.status).toBe(200);
    // A button that opens another view answers with a new reply in the same thread (the suggestion card stays).
    const [posted] = await bot.connector.waitFor(
      (calls) => {
        const m = calls.slice(before).filter((c) => c.kind === 'reply' && c.body?.type === 'message');
        return m.length > 0 ? m : undefined;
      },
      10_000,
      'the bills due reply',
    );
    const due = ConnectorStandIn.card(posted!);
    expectValidCard(due);
    expect(textOf(due)).toMatch(/Bills due/i);
  });

  it('a misspelt command with an argument offers a button that runs it with that argument', async () => {
    const card = await inChannel('invoise 1001');
    const run = card.actions?.find((a) => a.data?.command === 'invoice 1001');
    expect(run, JSON.stringify(card.actions)).toBeDefined();
  });
});

describe('payments total', () => {
  it('counts only money that moved or will move; canceled, voided and failed payments are listed and left out, and the card says so', async () => {
    const all = bot.app
      .sandbox!.org.payments.all()
      .sort((a, b) => b.processDate.localeCompare(a.processDate) || a.id.localeCompare(b.id))
      .slice(0, 50);
    const stopped = (p: Payment) => ['CANCELED', 'VOIDED', 'VOID_PENDING'].includes(p.singleStatus) || p.singleStatus.includes('FAILED');
    const notMoved = all.filter(stopped);
    expect(notMoved.length).toBeGreaterThanOrEqual(3);
    const card = await inChannel('payments 50');
    const f = factsOf(card);
    const moved = all.filter((p) => !stopped(p));
    expect(f.Total).toBe(`${money(total(moved.map((p) => p.amount)))} · ${moved.length} payments`);
    expect(f['Not counted']).toBe(`${money(total(notMoved.map((p) => p.amount)))} · ${notMoved.length} payments`);
    expect(textOf(card)).toContain(
      'The total counts paid, scheduled and in process payments only; canceled, voided and failed ones are listed with their status and left out.',
    );
    const statuses = tableRows(card).map((r) => r[2]);
    expect(statuses).toEqual(expect.arrayContaining(['Canceled', 'Voided']));
  });
});

describe('status', () => {
  it('a member sees that the bot is healthy and linked, without the audit log path or the BILL host and port', async () => {
    const card = await inChannel('status');
    const json = JSON.stringify(card);
    expect(json).not.toMatch(/127\.0\.0\.1:\d+/);
    expect(json).not.toContain(bot.app.audit.location);
    expect(json).not.toContain(bot.stateDir);
    const f = factsOf(card);
    expect(f.Connectivity).toBe('reachable');
    expect(f['BILL organisation']).toMatch(/^linked/);
    expect(f['BILL organisation']).not.toContain(bot.app.sandbox!.org.id);
    // Not in the budgets either: this organisation's BILL slots are "this organisation" to a member.
    expect(json).toContain('BILL calls in flight · this organisation');
    expect(json).not.toContain(bot.app.sandbox!.org.id);
  });

  it('an admin sees the audit log path, the BILL host and the organisation id', async () => {
    const card = await inChannel('status', ADMIN);
    const f = factsOf(card);
    expect(f.Backend).toMatch(/^embedded sandbox at 127\.0\.0\.1:\d+/);
    expect(f['BILL organisation']).toContain(bot.app.sandbox!.org.id);
    expect(textOf(card)).toContain(bot.app.audit.location);
  });
});

describe('a card someone shares with the bot', () => {
  // What Teams (and Microsoft's Agents Playground) send when a person posts a card they inserted from the compose
  // box: the text is only the inline card's placeholder span, the card itself is the attachment.
  const insertedCardText =
    '\n<span class="inline-compose-card" itemid="0" itemtype="http://schema.skype.com/InputExtension">\n' +
    '  <span content="0" itemprop="cardId"></span>\n</span>\n';
  const sharedCard = {
    contentType: 'application/vnd.microsoft.card.adaptive',
    content: { type: 'AdaptiveCard', version: '1.5', body: [{ type: 'TextBlock', text: 'Bill 1042' }] },
  };

  it('is not answered with the help card; a command typed next to a card still runs', async () => {
    const shared = { ...personalMessage(insertedCardText, { serviceUrl: bot.connector.url }), attachments: [sharedCard] };
    expect((await bot.send(shared)).status).toBeLessThan(300);
    // Sends in one chat go out in order: once the next message's answer is there, an answer to the card would be too.
    const typed = {
      ...personalMessage(`bills due ${insertedCardText}`, { serviceUrl: bot.connector.url }),
      attachments: [sharedCard],
    };
    expect(textOf(await reply(typed))).toContain('Bills due in the next 7 days');
    expect(bot.connector.calls.filter((c) => c.activityId === shared.id)).toEqual([]);
    // An attachment without a content type is no card: the empty line is answered as before, with help.
    const odd = { ...personalMessage('', { serviceUrl: bot.connector.url }), attachments: [{ content: {} }] };
    expect(textOf(await reply(odd))).toContain('billbridge commands');
  });
});
