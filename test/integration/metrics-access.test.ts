// /metrics is for the operator only: behind METRICS_TOKEN on the bot's port, or on its own METRICS_PORT, and
// its labels name no organisation or tenant.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { TENANT } from '../harness/activities.js';
import { get } from '../harness/net.js';

const TOKEN = `mt-${randomBytes(24).toString('base64url')}`;
const CHANNEL = '19:channel-metrics@thread.tacv2';

describe('with METRICS_TOKEN set', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({ env: { METRICS_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('a browser without the token gets 401 and no metrics', async () => {
    const res = await get(`${bot.url}/metrics`);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.text).not.toContain('billbridge_');
  });

  it('a wrong or differently spelled token gets 401', async () => {
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN, 'Bearer ']) {
      const res = await get(`${bot.url}/metrics`, { authorization });
      expect(res.status, authorization).toBe(401);
      expect(res.text).not.toContain('billbridge_');
    }
  });

  it("the operator's scraper with the bearer token gets the metrics", async () => {
    const res = await get(`${bot.url}/metrics`, { authorization: `Bearer ${TOKEN}` });
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.text).toMatch(/^billbridge_cache_entries \d+$/m);
  });

  it('a scrape right after another shows what changed in between', async () => {
    const scrape = async () => (await get(`${bot.url}/metrics`, { authorization: `Bearer ${TOKEN}` })).text;
    const identity = /^billbridge_budget_used\{budget="identity",key="h[0-9a-f]{12}"\} \d+$/m;
    expect(await scrape()).not.toMatch(identity);
    await bot.app.limiter.run({ service: 'identity', tenantId: 'tenant-scraped-twice' }, { priority: 'background' }, async () => 'ok');
    expect(await scrape()).toMatch(identity);
  });

  it("after a team's commands ran, no organisation id or tenant id appears in the metrics", async () => {
    const orgId = bot.app.sandbox!.credentials.orgId;
    const res = await bot.say('bills due', { channel: CHANNEL });
    await bot.connector.waitForMessages(1, res.activity.conversation.id);
    // What Graph calls for a tenant (install, roster) count against: its per-tenant budget.
    await bot.app.limiter.run(
      { service: 'graph', tenantId: TENANT, teamId: '19:team-metrics@thread.tacv2' },
      { priority: 'background' },
      async () => 'ok',
    );
    await bot.app.limiter.run({ service: 'identity', tenantId: TENANT }, { priority: 'background' }, async () => 'ok');
    const body = (await get(`${bot.url}/metrics`, { authorization: `Bearer ${TOKEN}` })).text;
    // The per-org and per-tenant rows are there, under one-way names.
    expect(body).toMatch(/^billbridge_budget_running\{budget="bill\.concurrency",key="k[0-9a-f]{12}\/h[0-9a-f]{12}"\} \d+$/m);
    expect(body).toMatch(/^billbridge_budget_used\{budget="graph\.tenant",key="h[0-9a-f]{12}"\} \d+$/m);
    expect(body).not.toContain(orgId);
    expect(body.toLowerCase()).not.toContain(TENANT.toLowerCase());
    expect(body).not.toContain('team-metrics');
  });
});

describe('with neither METRICS_TOKEN nor METRICS_PORT', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot();
  });
  afterAll(async () => {
    await bot.close();
  });

  it("the bot's port does not serve /metrics at all", async () => {
    const res = await get(`${bot.url}/metrics`);
    expect(res.status).toBe(404);
    expect(res.text).not.toContain('billbridge_');
  });
});

describe('with METRICS_PORT', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({ env: { METRICS_PORT: '0' } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it("serves /metrics on its own listener on 127.0.0.1, and not on the bot's port", async () => {
    const url = bot.app.metricsUrl!;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toBe(bot.url);
    const res = await get(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/^billbridge_cache_entries \d+$/m);
    expect((await get(`${url}/api/messages`)).status).toBe(404);
    expect((await get(`${bot.url}/metrics`)).status).toBe(404);
  });
});

describe('with METRICS_PORT and METRICS_TOKEN', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({ env: { METRICS_PORT: '0', METRICS_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('the metrics listener asks for the token too', async () => {
    const url = bot.app.metricsUrl!;
    expect((await get(`${url}/metrics`)).status).toBe(401);
    expect((await get(`${url}/metrics`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });
});
