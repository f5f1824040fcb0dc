// Data must not cross organisations: a Spend & Expense token answers only for the organisation it belongs to, a
// webhook key verifies only events of the organisation it was made for, and a signed webhook payload is a hint that
// BILL confirms, never a record the cards show as BILL's (a forged amount dated 2099 cannot outrank BILL's answer).
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestBot } from '../harness/bot.js';
import { post } from '../harness/net.js';
import { askInTeam, startMultiOrgBot, startTwoOrgSandbox, type TwoOrgs } from '../harness/orgs.js';
import type { TestSandbox } from '../harness/sandbox.js';
import { factsOf, money } from '../harness/finance.js';
import { ManualClock } from '../../src/infra/clock.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { NS } from '../../src/infra/state/types.js';

const ADMIN = { id: '29:user-admin', name: 'Avery Admin', aadObjectId: '44444444-0000-4000-8000-0000000000ad' };
const KEY_A = randomBytes(32).toString('base64');
const KEY_B = randomBytes(32).toString('base64');
const clock = new ManualClock(Date.parse('2026-03-02T15:00:00Z'));

let sandbox: TestSandbox;
let orgA: string;
let orgB: string;
let tokenA: string;
let tokenB: string;
let orgs: TwoOrgs;
const bots: TestBot[] = [];

async function botWith(extra: Record<string, string>): Promise<TestBot> {
  const bot = await startMultiOrgBot(orgs, ADMIN.aadObjectId, { clock, env: { USER_COMMANDS_PER_MINUTE: '10000', ...extra } });
  bots.push(bot);
  return bot;
}

beforeAll(async () => {
  orgs = await startTwoOrgSandbox({ clock });
  ({ sandbox, orgA, orgB, tokenA, tokenB } = orgs);
  // One budget in each organisation with a name only it has: a card naming it shows whose data it is.
  const rename = (orgId: string, name: string) => {
    const spend = sandbox.sandbox.model.org(orgId)!.spend;
    const budget = spend.budgets.all().find((x) => !x.retired)!;
    spend.budgets.put({ ...budget, name });
  };
  rename(orgA, 'Alpha Only Budget');
  rename(orgB, 'Beta Only Budget');
});
afterAll(async () => {
  for (const bot of bots) await bot.close();
  await sandbox.stop();
});

async function ask(bot: TestBot, text: string, team: string): Promise<unknown> {
  // The clock is a manual one: moving it on keeps the channel's Bot Connector budget (8 sends per 2 s) open.
  clock.advance(2_000);
  return askInTeam(bot, text, team, ADMIN);
}

const askText = async (bot: TestBot, text: string, team: string) => JSON.stringify(await ask(bot, text, team));
const spendCalls = () => sandbox.sandbox.requests().filter((r) => r.route.includes('/v3/spend'));

async function linkTeams(bot: TestBot): Promise<void> {
  expect(await askText(bot, `link ${orgA}`, 'alpha')).toContain('Linked');
  expect(await askText(bot, `link ${orgB}`, 'beta')).toContain('Linked');
}

describe('a Spend & Expense token answers for its own organisation only', () => {
  it("with BILL_SPEND_API_TOKEN (organisation A's), a team linked to B is told S&E is not set up for it, and S&E gets no call", async () => {
    const bot = await botWith({ BILL_SPEND_API_TOKEN: tokenA });
    await linkTeams(bot);
    sandbox.sandbox.clearRequests();
    const beta = await askText(bot, 'spend budgets', 'beta');
    expect(beta).toContain('Spend & Expense is not set up for this organisation');
    expect(beta).not.toContain('Alpha Only Budget');
    expect(spendCalls()).toEqual([]);

    const alpha = await askText(bot, 'spend budgets', 'alpha');
    expect(alpha).toContain('Alpha Only Budget');
    expect(spendCalls().length).toBeGreaterThan(0);
  });

  it('with BILL_SPEND_API_TOKENS naming a token for each organisation, each team sees its own budgets', async () => {
    const bot = await botWith({ BILL_SPEND_API_TOKENS: `${orgA}:${tokenA},${orgB}:${tokenB}` });
    await linkTeams(bot);
    const alpha = await askText(bot, 'spend budgets', 'alpha');
    const beta = await askText(bot, 'spend budgets', 'beta');
    expect(alpha).toContain('Alpha Only Budget');
    expect(alpha).not.toContain('Beta Only Budget');
    expect(beta).toContain('Beta Only Budget');
    expect(beta).not.toContain('Alpha Only Budget');
  });

  it('a malformed BILL_SPEND_API_TOKENS stops start-up naming the variable, without echoing the token', () => {
    const secret = 'tok-0123456789abcdef-very-secret';
    const cases = [`${orgA}${secret}`, `unknown-org:${secret}`, `${orgA}:`, `${orgA}:${secret},${orgA}:${secret}x`];
    for (const value of cases) {
      let error: unknown;
      try {
        loadConfig({
          NODE_ENV: 'test',
          BILL_ORG_ID: orgA,
          BILL_DEV_KEY: 'k',
          BILL_USERNAME: 'u',
          BILL_PASSWORD: 'p',
          BILL_ALLOWED_ORG_IDS: `${orgA},${orgB}`,
          BILL_SPEND_API_TOKENS: value,
        });
      } catch (err) {
        error = err;
      }
      expect(error, value).toBeInstanceOf(ConfigError);
      const message = (error as ConfigError).message;
      expect(message).toContain('BILL_SPEND_API_TOKENS');
      expect(message).not.toContain(secret);
    }
  });
});

describe('a webhook key verifies events of its own organisation only', () => {
  let bot: TestBot;
  const sign = (raw: string, key: string) => createHmac('sha256', key).update(raw).digest('base64');
  const hook = () => `${bot.url}/api/bill/webhooks`;

  function invoiceEvent(orgId: string, invoice: object): string {
    return JSON.stringify({
      metadata: {
        eventId: randomUUID(),
        subscriptionId: 'sub-made-in-the-bill-app',
        organizationId: orgId,
        eventType: 'invoice.updated',
        version: '1',
      },
      invoice,
    });
  }

  beforeAll(async () => {
    bot = await botWith({ BILL_WEBHOOK_SECURITY_KEY: KEY_A, BILL_WEBHOOK_SECURITY_KEYS: `${orgB}:${KEY_B}` });
    await linkTeams(bot);
    expect(await askText(bot, 'subscribe invoices', 'beta')).toContain('Subscribed');
  });

  it("an event for organisation B signed with A's key (BILL_WEBHOOK_SECURITY_KEY) is refused and changes nothing", async () => {
    const inv = sandbox.sandbox.model
      .org(orgB)!
      .invoices.all()
      .find((i) => !i.archived)!;
    const before = (await bot.app.state.entries(NS.outbox)).length;
    const body = invoiceEvent(orgB, { ...inv, totalAmount: 1, dueAmount: 1 });
    const res = await post(hook(), body, { 'x-bill-sha-signature': sign(body, KEY_A) });
    expect(res.status).toBe(401);
    expect((await bot.app.state.entries(NS.outbox)).length).toBe(before);
    const refusal = bot.logs.records().find((r) => r.msg?.startsWith('webhook refused') && r.eventOrg === orgB);
    expect(refusal).toBeDefined();
    expect(bot.logs.text()).not.toContain(KEY_A);
  });

  it("B's own key (BILL_WEBHOOK_SECURITY_KEYS) verifies B's events and not A's", async () => {
    const invB = sandbox.sandbox.model
      .org(orgB)!
      .invoices.all()
      .find((i) => !i.archived)!;
    const good = invoiceEvent(orgB, invB);
    expect((await post(hook(), good, { 'x-bill-sha-signature': sign(good, KEY_B) })).json).toMatchObject({ status: 'accepted' });
    const invA = sandbox.sandbox.model
      .org(orgA)!
      .invoices.all()
      .find((i) => !i.archived)!;
    const bad = invoiceEvent(orgA, invA);
    expect((await post(hook(), bad, { 'x-bill-sha-signature': sign(bad, KEY_B) })).status).toBe(401);
  });

  it("a key billbridge stored for A's subscription (webhooks setup) does not verify an event for B", async () => {
    await bot.app.notify.keys.save({
      subscriptionId: 'sub-of-a',
      orgId: orgA,
      name: 'billbridge',
      notificationUrl: hook(),
      events: ['invoice.updated'],
      securityKey: 'stored-key-of-organisation-a',
    });
    const inv = sandbox.sandbox.model
      .org(orgB)!
      .invoices.all()
      .find((i) => !i.archived)!;
    const body = JSON.stringify({
      metadata: { eventId: randomUUID(), subscriptionId: 'sub-of-a', organizationId: orgB, eventType: 'invoice.updated', version: '1' },
      invoice: { ...inv, totalAmount: 1 },
    });
    expect((await post(hook(), body, { 'x-bill-sha-signature': sign(body, 'stored-key-of-organisation-a') })).status).toBe(401);
  });

  it("an admin in a team linked to B cannot delete the key billbridge stored for A's subscription", async () => {
    await bot.app.notify.keys.save({
      subscriptionId: 'sub-kept-for-a',
      orgId: orgA,
      name: 'billbridge',
      notificationUrl: hook(),
      events: ['invoice.updated'],
      securityKey: 'stored-key-kept-for-a',
    });
    expect(await askText(bot, 'webhooks delete sub-kept-for-a', 'beta')).not.toContain('Webhook subscription deleted');
    expect(await bot.app.notify.keys.has('sub-kept-for-a')).toBe(true);
    const inv = sandbox.sandbox.model
      .org(orgA)!
      .invoices.all()
      .find((i) => !i.archived)!;
    const body = JSON.stringify({
      metadata: {
        eventId: randomUUID(),
        subscriptionId: 'sub-kept-for-a',
        organizationId: orgA,
        eventType: 'invoice.updated',
        version: '1',
      },
      invoice: inv,
    });
    expect((await post(hook(), body, { 'x-bill-sha-signature': sign(body, 'stored-key-kept-for-a') })).json).toMatchObject({
      status: 'accepted',
    });
  });

  it("a correctly signed event with a forged amount dated 2099 never shows: the invoice card shows BILL's amount, then BILL's real change", async () => {
    const org = sandbox.sandbox.model.org(orgB)!;
    const inv = org.invoices.all().find((i) => !i.archived && i.status === 'OPEN' && i.totalAmount > 100)!;
    const number = inv.invoiceNumber;
    // The replica is built as a person asking would build it.
    expect(factsOf(await ask(bot, `invoice ${number}`, 'beta')).Total).toBe(money(inv.totalAmount));

    const forged = invoiceEvent(orgB, { ...inv, totalAmount: 999_999.99, dueAmount: 999_999.99, updatedTime: '2099-01-01T00:00:00.000Z' });
    expect((await post(hook(), forged, { 'x-bill-sha-signature': sign(forged, KEY_B) })).json).toMatchObject({ status: 'accepted' });
    await bot.app.notify.worker.drain();
    const afterForgery = factsOf(await ask(bot, `invoice ${number}`, 'beta'));
    expect(afterForgery.Total).toBe(money(inv.totalAmount));
    expect(JSON.stringify(afterForgery)).not.toContain('999,999.99');

    // BILL changes the invoice for real; its own event says so, and the next answer shows the change.
    clock.advance(2_000);
    const changed = {
      ...org.invoices.get(inv.id)!,
      totalAmount: inv.totalAmount + 10,
      dueAmount: inv.dueAmount + 10,
      updatedTime: new Date(clock.now()).toISOString(),
    };
    org.invoices.put(changed);
    const real = invoiceEvent(orgB, changed);
    expect((await post(hook(), real, { 'x-bill-sha-signature': sign(real, KEY_B) })).json).toMatchObject({ status: 'accepted' });
    await bot.app.notify.worker.drain();
    expect(factsOf(await ask(bot, `invoice ${number}`, 'beta')).Total).toBe(money(inv.totalAmount + 10));
  });

  it('a row dated 2099 that an earlier version stored from a webhook does not outrank BILL: the next change BILL makes shows', async () => {
    const org = sandbox.sandbox.model.org(orgB)!;
    const inv = org.invoices.all().filter((i) => !i.archived && i.status === 'OPEN' && i.totalAmount > 100)[1]!;
    const number = inv.invoiceNumber;
    expect(factsOf(await ask(bot, `invoice ${number}`, 'beta')).Total).toBe(money(inv.totalAmount));
    // What the replica held after such an event before this fix (written as if BILL had answered it).
    await bot.app.mirror.apply(orgB, 'invoice', {
      ...inv,
      totalAmount: 888_888.88,
      dueAmount: 888_888.88,
      updatedTime: '2099-01-01T00:00:00.000Z',
    });

    clock.advance(2_000);
    const changed = {
      ...org.invoices.get(inv.id)!,
      totalAmount: inv.totalAmount + 20,
      dueAmount: inv.dueAmount + 20,
      updatedTime: new Date(clock.now()).toISOString(),
    };
    org.invoices.put(changed);
    const real = invoiceEvent(orgB, changed);
    expect((await post(hook(), real, { 'x-bill-sha-signature': sign(real, KEY_B) })).json).toMatchObject({ status: 'accepted' });
    await bot.app.notify.worker.drain();
    expect(factsOf(await ask(bot, `invoice ${number}`, 'beta')).Total).toBe(money(inv.totalAmount + 20));
  });
});
