// How the bot reaches BILL: the embedded sandbox without credentials, the configured BILL with them.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BillFilter } from '../../src/bill/filters.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { get } from '../harness/net.js';
import { leaks, startTestSandbox, type TestSandbox } from '../harness/sandbox.js';

describe('without BILL credentials', () => {
  let bot: TestBot;

  beforeAll(async () => {
    bot = await startBot();
  });
  afterAll(async () => {
    await bot.close();
  });

  it('starts the embedded sandbox and says so in exactly one log line', () => {
    const sandbox = bot.app.sandbox!;
    expect(sandbox).toBeDefined();
    const lines = bot.logs.lines.filter((l) => l.includes('demo organisation — simulated data'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(sandbox.baseUrl);
    expect(bot.app.bill.backend).toBe('sandbox');
    expect(bot.app.config.bill).toMatchObject({
      baseUrl: sandbox.baseUrl,
      spendBaseUrl: sandbox.spendBaseUrl,
      eventsBaseUrl: sandbox.eventsBaseUrl,
    });
    expect(sandbox.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/connect$/);
  });

  it('binds every team to the demo organisation and answers through the BILL gateway', async () => {
    const scope = {
      kind: 'channel',
      tenantId: 'any',
      teamId: '19:team@thread.tacv2',
      aadGroupId: undefined,
      channelId: '19:c@thread.tacv2',
      conversationId: 'c',
      serviceUrl: 'http://x',
    } as const;
    const orgId = await bot.app.orgBindings.resolve(scope);
    expect(orgId).toBe(bot.app.sandbox!.credentials.orgId);
    const org = bot.app.bill.org(orgId!);
    const due = await org.bills.list({ filter: new BillFilter().add('paymentStatus', 'eq', 'UNPAID'), maxPages: 2 }).all();
    expect(due.items.length).toBeGreaterThan(0);
    const spend = bot.app.bill.spend(orgId!);
    expect((await spend!.budgets.list().all()).items.length).toBeGreaterThan(0);
    const status = bot.app.bill.status();
    expect(status).toMatchObject({ backend: 'sandbox', spendConfigured: true, reachable: true, loginsLastHour: 1 });
    expect(status.sessions[0]).toMatchObject({ orgId, loggedIn: true, logins: 1 });
  });

  it('reports BILL in /readyz', async () => {
    const res = await get(`${bot.url}/readyz`);
    expect(res.json?.parts).toMatchObject({ bill: true });
  });

  it('never logs the demo password, dev key, API token or a sessionId', async () => {
    const sandbox = bot.app.sandbox!;
    await bot.app.bill.org(sandbox.credentials.orgId).whoami();
    const secrets = [
      sandbox.credentials.password,
      sandbox.credentials.devKey,
      sandbox.credentials.spendApiToken,
      ...sandbox.stats().sessionsIssued,
    ];
    expect(sandbox.stats().sessionsIssued.length).toBeGreaterThan(0);
    expect(leaks(bot.logs.text(), secrets)).toEqual([]);
    for (const s of secrets.slice(0, 3)) expect(bot.app.secrets.list()).toContain(s);
  });

  it('logs out of BILL and stops the sandbox when the bot closes', async () => {
    const sandbox = bot.app.sandbox!;
    const logoutsBefore = sandbox.stats().logouts;
    await bot.close();
    expect(sandbox.stats().logouts).toBe(logoutsBefore + 1);
    await expect(request(`${sandbox.url}/__sandbox/stats`)).rejects.toThrow();
  });
});

describe('with BILL credentials', () => {
  let sb: TestSandbox;
  let bot: TestBot;

  beforeAll(async () => {
    // A separate "real" BILL: the bot must talk to the configured URL and start no sandbox of its own.
    sb = await startTestSandbox();
    bot = await startBot({
      env: {
        BILL_BASE_URL: sb.baseUrl,
        BILL_DEV_KEY: sb.credentials.devKey,
        BILL_USERNAME: sb.credentials.username,
        BILL_PASSWORD: sb.credentials.password,
        BILL_ORG_ID: sb.credentials.orgId,
        BILL_SPEND_API_TOKEN: sb.credentials.spendApiToken,
      },
    });
  });
  afterAll(async () => {
    await bot.close();
    await sb.stop();
  });

  it('talks to the configured BILL and starts no sandbox', async () => {
    expect(bot.app.sandbox).toBeUndefined();
    expect(bot.logs.text()).not.toContain('simulated data');
    expect(bot.app.bill.backend).toBe('bill');
    expect(bot.app.config.bill.eventsBaseUrl).toBe(`${sb.url}/connect-events`);
    const before = await sb.stats();
    const invoice = await bot.app.bill.org(sb.credentials.orgId).invoices.get(sb.sandbox.org.invoices.all()[0]!.id);
    expect(invoice.invoiceNumber).toBe('1001');
    const after = await sb.stats();
    expect(after.logins - before.logins).toBe(1);
    expect(after.requestsByPath['GET /v3/invoices/{id}']).toBe((before.requestsByPath['GET /v3/invoices/{id}'] ?? 0) + 1);
    expect(
      leaks(bot.logs.text(), [sb.credentials.password, sb.credentials.devKey, sb.credentials.spendApiToken, ...after.sessionsIssued]),
    ).toEqual([]);
  });
});
