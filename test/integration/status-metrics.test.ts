// An operator asks `status` in a channel and scrapes /metrics (with METRICS_TOKEN): both show every budget and the cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { checkCard } from '../harness/cards.js';
import { get } from '../harness/net.js';
import { OTHER_TENANT, TENANT, type Who } from '../harness/activities.js';

const DEV_KEY = 'status-test-dev-key-0001';
const BILL = { service: 'bill', devKey: DEV_KEY, orgId: '00801STATUSORG000001' } as const;
const METRICS_TOKEN = 'status-test-metrics-token-0001';
const scraper = { authorization: `Bearer ${METRICS_TOKEN}` };
const ADMIN: Who = { id: '29:user-admin', name: 'Avery Admin', aadObjectId: '44444444-0000-4000-8000-0000000000ad' };
let bot: TestBot;

beforeAll(async () => {
  bot = await startBot({ env: { METRICS_TOKEN, ADMIN_AAD_OBJECT_IDS: ADMIN.aadObjectId! } });
});
afterAll(async () => {
  await bot.close();
});

async function statusCard(from?: Who) {
  const res = await bot.say('status', { channel: '19:channel-ops@thread.tacv2', from });
  const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
  return ConnectorStandIn.card(reply!);
}

describe('status', () => {
  it('shows the upstream budgets, the cache and the version in a valid card', async () => {
    await bot.app.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok');
    await bot.connector.waitForMessages(1, (await bot.say('help', { channel: '19:channel-ops@thread.tacv2' })).activity.conversation.id);
    const { answers } = bot.app.mirror;
    await answers.get('00801STATUSORG000001', 'bills due', { ttlS: 60, kinds: ['bill'] }, async () => [1, 2, 3]);
    await answers.get('00801STATUSORG000001', 'bills due', { ttlS: 60, kinds: ['bill'] }, async () => [1, 2, 3]);

    const card = await statusCard();
    const text = JSON.stringify(card);
    expect(checkCard(card).problems).toEqual([]);
    expect(Buffer.byteLength(text)).toBeLessThan(40 * 1024);
    expect(text).toContain('Upstream budgets');
    expect(text).toContain('BILL requests');
    expect(text).toContain('Teams sends (busiest thread)');
    expect(text).toContain('Hit ratio: 50%');
    expect(text).toContain(`billbridge ${bot.app.config.version}`);
    expect(text).not.toContain(DEV_KEY);
  });

  it('says when a budget is paused by the upstream and until when', async () => {
    bot.app.limiter.throttled(BILL, { kind: 'hourly', untilMs: Date.now() + 3_600_000 });
    const text = JSON.stringify(await statusCard());
    expect(text).toMatch(/BILL requests\*\* is paused until \d\d?:\d\d( [AP]M)? \(hourly limit reached\)/);
    expect(text).toContain('Last server-side throttle: BILL requests, hourly limit reached');
  });
});

describe('GET /metrics', () => {
  it('exposes per-budget gauges, refusals and cache counters in Prometheus text', async () => {
    await bot.app.limiter.run(BILL, { priority: 'interactive' }, async () => 'ok').catch(() => undefined); // refused: frozen above
    const res = await get(`${bot.url}/metrics`, scraper);
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^text\/plain; version=0\.0\.4/);
    const body = res.text;
    expect(body).toMatch(/^billbridge_budget_used\{budget="connector\.thread",key="\*"\} \d+$/m);
    expect(body).toMatch(/^billbridge_budget_remaining\{budget="bill\.requests",key="k[0-9a-f]{12}"\} \d+$/m);
    expect(body).toMatch(/^billbridge_budget_running\{budget="bill\.concurrency",key="k[0-9a-f]{12}\/h[0-9a-f]{12}"\} 0$/m);
    expect(body).not.toContain('00801STATUSORG000001');
    expect(body).toMatch(/^billbridge_budget_rejected_total\{budget="bill\.requests",reason="hourly"\} [1-9]\d*$/m);
    expect(body).toMatch(/^billbridge_budget_throttles_total\{budget="bill\.requests",kind="hourly"\} 1$/m);
    expect(body).toMatch(/^billbridge_budget_blocked_until_timestamp_seconds\{budget="bill\.requests",key="k[0-9a-f]{12}"\} \d+(\.\d+)?$/m);
    expect(body).toMatch(/^billbridge_cache_hits_total 1$/m);
    expect(body).toMatch(/^billbridge_cache_misses_total 1$/m);
    expect(body).toMatch(/^billbridge_cache_entries 1$/m);
    expect(body).not.toContain(DEV_KEY);
  });

  it('keeps counters monotonic across scrapes', async () => {
    const scrape = async () =>
      Number(
        /^billbridge_budget_granted_total\{budget="connector\.thread"\} (\d+)$/m.exec((await get(`${bot.url}/metrics`, scraper)).text)![1],
      );
    const first = await scrape();
    await statusCard();
    const second = await scrape();
    expect(second).toBeGreaterThan(first);
  });
});

describe('who sees which budgets', () => {
  it("a member's status shows only the channel's own organisation and tenant; an admin's shows every row", async () => {
    // Another dev key: the first one is paused above. Tenant ids are compared without regard to case.
    const bill = { service: 'bill', devKey: 'status-test-dev-key-0002' } as const;
    const own = bot.app.sandbox!.credentials.orgId;
    for (const orgId of [own, '00801OTHERORG0000001'])
      await bot.app.limiter.run({ ...bill, orgId }, { priority: 'interactive' }, async () => 0);
    for (const tenantId of [TENANT.toUpperCase(), OTHER_TENANT])
      await bot.app.limiter.run({ service: 'graph', tenantId }, { priority: 'interactive' }, async () => 0);

    const member = JSON.stringify(await statusCard());
    expect(member).toContain('BILL requests');
    expect(member).toContain('BILL calls in flight · this organisation');
    expect(member).toContain(`Graph (tenant) · tenant ${TENANT.toUpperCase().slice(0, 8)}…`);
    expect(member).not.toContain('00801OTHERORG0000001');
    expect(member).not.toContain(OTHER_TENANT.slice(0, 8));

    const admin = JSON.stringify(await statusCard(ADMIN));
    expect(admin).toContain(`BILL calls in flight · org ${own}`);
    expect(admin).toContain('BILL calls in flight · org 00801OTHERORG0000001');
    expect(admin).toContain(`Graph (tenant) · tenant ${OTHER_TENANT.slice(0, 8)}…`);
    // A member's "this organisation" rows are exactly the admin's rows for the channel's organisation.
    expect(member.split('· this organisation').length).toBe(admin.split(`· org ${own}`).length);
  });

  it("a member's status does not name another organisation or show its network invitation emails (bill.email is kept per organisation)", async () => {
    const bill = { service: 'bill', devKey: 'status-test-dev-key-0003', email: true } as const;
    const own = bot.app.sandbox!.credentials.orgId;
    await bot.app.limiter.run({ ...bill, orgId: own }, { priority: 'interactive' }, async () => 0);
    for (let i = 0; i < 3; i++)
      await bot.app.limiter.run({ ...bill, orgId: '00801EMAILINGORG0001' }, { priority: 'interactive' }, async () => 0);

    const member = JSON.stringify(await statusCard());
    expect(member).not.toContain('00801EMAILINGORG0001');
    expect(member).toContain('BILL emails (network invitations) · this organisation');
    expect(member.match(/BILL emails \(network invitations\)/g)).toHaveLength(1);
    const admin = JSON.stringify(await statusCard(ADMIN));
    expect(admin).toContain('BILL emails (network invitations) · org 00801EMAILINGORG0001');
    expect(admin).toContain(`BILL emails (network invitations) · org ${own}`);
  });
});
