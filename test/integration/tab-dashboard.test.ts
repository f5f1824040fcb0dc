// The dashboard tab's data API over real HTTP: Teams single sign-on checked against a local issuer's published keys,
// a team's figures only for its members (the bot's own roster call, cached), the same figures as the cards.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelMessage, DEFAULT_USER, installationUpdate, OTHER_TENANT, TENANT, teamIds } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { factsOf, textOf } from '../harness/finance.js';
import { get, post } from '../harness/net.js';
import { sandboxControlOk } from '../harness/sandbox.js';
import { LoginStandIn, OpenIdIssuer, type SsoMintOptions } from '../harness/openid.js';
import { startMultiOrgBot, startTwoOrgSandbox, type TwoOrgs } from '../harness/orgs.js';

const APP_ID = '5b0e8a64-2c1f-4c8e-9d7a-1f2e3d4c5b6a';
const HOST = 'billbridge.example.com';
const AUDIENCE = `api://${HOST}/${APP_ID}`;
const DANA = DEFAULT_USER.aadObjectId;
const ERIN = '22222222-0000-4000-8000-00000000e1e1';
const WEBHOOK_KEY = 'tab-test-webhook-key-0123456789';
const { team: TEAM } = teamIds();

let issuer: OpenIdIssuer;
let login: LoginStandIn;
let bot: TestBot;

/** The environment of a bot with a real app registration trusting `issuer` for Bot Framework and Teams sign-in tokens. */
const tabEnv = (): Record<string, string> => ({ ...issuer.env(APP_ID, TENANT), TabSsoKeysUrl: issuer.ssoKeysUrl, PUBLIC_HOSTNAME: HOST });

const sso = (o: Partial<SsoMintOptions> = {}) => issuer.ssoToken({ tenantId: TENANT, aadObjectId: DANA, aud: AUDIENCE, ...o });
const botToken = () => issuer.token({ aud: APP_ID, serviceUrl: bot.connector.url });

/** GET /api/tab/dashboard as the page asks it: with the channel tab's team, or none (null: personal tab, chat meeting). */
function dashboard(on: TestBot, authorization: string | undefined, team: string | null = TEAM) {
  const query = team === null ? '' : `?team=${encodeURIComponent(team)}`;
  return get(`${on.url}/api/tab/dashboard${query}`, authorization === undefined ? {} : { authorization });
}

const rosterCalls = () => bot.connector.calls.filter((c) => c.kind === 'member').length;

beforeAll(async () => {
  issuer = await OpenIdIssuer.start();
  login = (await LoginStandIn.start()).intercept();
  bot = await startBot({
    env: {
      ...tabEnv(),
      BILL_WEBHOOK_SECURITY_KEY: WEBHOOK_KEY,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      USER_COMMANDS_PER_MINUTE: '1000',
    },
  });
  // billbridge is added to the finance team (its stored conversation is what the roster call goes through).
  const installed = await bot.send(installationUpdate('add', { serviceUrl: bot.connector.url }), {
    authorization: `Bearer ${await botToken()}`,
  });
  expect(installed.status).toBe(200);
  bot.connector.rosters.set(TEAM, new Set([DANA]));
});
afterAll(async () => {
  await bot.close();
  await login.stop();
  await issuer.stop();
});

describe('a Teams sign-in the tab API refuses', () => {
  const cases: Array<[string, () => Promise<string | undefined>]> = [
    ['no Authorization header', async () => undefined],
    ['a bearer value that is not a JWT', async () => 'Bearer not-a-jwt'],
    ['a token signed with a key Microsoft does not publish (forged)', async () => `Bearer ${await sso({ signWith: 'unpublished' })}`],
    ['an expired token', async () => `Bearer ${await sso({ notBefore: -7200, expiresIn: -600 })}`],
    [
      'a token for another app (audience)',
      async () => `Bearer ${await sso({ aud: `api://${HOST}/9c8b7a65-4321-4fed-8cba-0987654321fe` })}`,
    ],
    [
      'a token whose issuer is another tenant than its tid',
      async () => `Bearer ${await sso({ iss: `https://login.microsoftonline.com/${OTHER_TENANT}/v2.0` })}`,
    ],
    ['a token without the access_as_user scope', async () => `Bearer ${await sso({ scp: 'User.Read' })}`],
    ['a Bot Framework token instead of a sign-in', async () => `Bearer ${await botToken()}`],
  ];
  it.each(cases)('%s: 401 with a sentence, and no roster call', async (_name, authorization) => {
    const before = rosterCalls();
    const res = await dashboard(bot, await authorization());
    expect(res.status).toBe(401);
    expect(typeof res.json?.error).toBe('string');
    expect(res.json).not.toHaveProperty('payables');
    expect(rosterCalls()).toBe(before);
  });

  it("a valid token of a tenant the deployment does not serve: 403, and nothing of the team's is asked", async () => {
    const before = rosterCalls();
    const res = await dashboard(bot, `Bearer ${await sso({ tenantId: OTHER_TENANT })}`);
    expect(res.status).toBe(403);
    expect(res.json?.error).toMatch(/tenant/);
    expect(rosterCalls()).toBe(before);
  });
});

describe('a channel tab of the finance team', () => {
  it("someone outside the team gets 403: the team's roster, asked by the bot, does not list them", async () => {
    const res = await dashboard(bot, `Bearer ${await sso({ aadObjectId: ERIN, name: 'Erin' })}`);
    expect(res.status).toBe(403);
    expect(res.json?.error).toMatch(/not a member/);
    const call = bot.connector.calls.filter((c) => c.kind === 'member').at(-1);
    expect(call?.path).toBe(`/v3/conversations/${encodeURIComponent(TEAM)}/members/${ERIN}`);
    // The bot's own token, as for every connector call.
    expect(call?.headers.authorization).toMatch(/^Bearer bf-out-/);
  });

  it('a member gets the figures the bills due card shows for the same organisation', async () => {
    const res = await dashboard(bot, `Bearer ${await sso()}`);
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json as {
      locale: string;
      payables: {
        dueCount: number;
        due: Array<{ text: string; amount: number }>;
        overdueCount: number;
        overdue: Array<{ text: string }>;
        byDay: unknown[];
      };
      receivables: { owedCount: number; aging: Array<{ label: string }> };
      approvals: unknown;
      events: unknown[];
    };
    expect(body.locale).toBe('en-US');
    const said = channelMessage('bills due', { serviceUrl: bot.connector.url });
    expect((await bot.send(said, { authorization: `Bearer ${await botToken()}` })).status).toBe(200);
    const [reply] = await bot.connector.waitForMessages(1, said.conversation.id);
    const card = ConnectorStandIn.card(reply!);
    const p = body.payables;
    expect(p.dueCount).toBeGreaterThan(0);
    expect(factsOf(card).Due).toBe(`${p.due.map((m) => m.text).join(' + ')} · ${p.dueCount} bill${p.dueCount === 1 ? '' : 's'}`);
    expect(textOf(card)).toContain(`Overdue: ${p.overdueCount} bills, ${p.overdue.map((m) => m.text).join(' + ')}, not counted above.`);
    // A bar a day for the week, as the card's chart has.
    expect(p.byDay).toHaveLength(8);
    expect(body.receivables.aging.map((a) => a.label)).toEqual(['1–30 days', '31–60 days', '61–90 days', '90+ days']);
    // Dana never connected her own BILL sign-in: nothing is said about approvals waiting for her.
    expect(body.approvals).toBeNull();
  });

  it('the second load asks the roster nothing: membership is kept for a few minutes', async () => {
    const before = rosterCalls();
    const res = await dashboard(bot, `Bearer ${await sso()}`);
    expect(res.status).toBe(200);
    expect(rosterCalls()).toBe(before);
  });

  it('a v1 token (issuer sts.windows.net, audience the bare app id) of a member is accepted too', async () => {
    const res = await dashboard(bot, `Bearer ${await sso({ iss: `https://sts.windows.net/${TENANT}/`, aud: APP_ID })}`);
    expect(res.status).toBe(200);
  });

  it('each load a person is known for leaves an audit line: who, which team, which organisation, how it went', async () => {
    expect((await dashboard(bot, `Bearer ${await sso()}`)).status).toBe(200);
    expect((await dashboard(bot, `Bearer ${await sso({ aadObjectId: ERIN })}`)).status).toBe(403);
    expect((await dashboard(bot, undefined)).status).toBe(401);
    const lines = readFileSync(join(bot.stateDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.command === 'dashboard tab');
    expect(lines.slice(-2)).toEqual([
      expect.objectContaining({ tenantId: TENANT, teamId: TEAM, aadObjectId: DANA, orgId: bot.app.sandbox!.org.id, result: 'ok' }),
      expect.objectContaining({ aadObjectId: ERIN, teamId: TEAM, result: 'refused', reason: 'TabRefused:not a member' }),
    ]);
    // A request without a sign-in names nobody: it is logged, not audited.
    expect(lines.filter((r) => r.aadObjectId === undefined)).toEqual([]);
  });

  it('a team billbridge was never added to gets 404, without a roster call', async () => {
    const before = rosterCalls();
    const res = await dashboard(bot, `Bearer ${await sso()}`, teamIds('elsewhere').team);
    expect(res.status).toBe(404);
    expect(rosterCalls()).toBe(before);
  });

  it("lists the organisation's last webhook events, most recent first", async () => {
    const sandbox = bot.app.sandbox!;
    const invoice = sandbox.org.invoices.all().find((i) => !i.archived)!;
    const raw = JSON.stringify({
      metadata: {
        eventId: randomUUID(),
        subscriptionId: 'sub-made-in-bill',
        organizationId: sandbox.credentials.orgId,
        eventType: 'invoice.updated',
        version: '1',
      },
      invoice,
    });
    const signature = createHmac('sha256', WEBHOOK_KEY).update(raw).digest('base64');
    expect((await post(`${bot.url}/api/bill/webhooks`, raw, { 'x-bill-sha-signature': signature })).json).toMatchObject({
      status: 'accepted',
    });
    const res = await dashboard(bot, `Bearer ${await sso()}`);
    const events = (res.json as { events: Array<{ at: string; text: string }> }).events;
    expect(events[0]?.text).toBe(`Invoice ${invoice.invoiceNumber} updated`);
    expect(Date.parse(events[0]?.at ?? '')).not.toBeNaN();
  });

  it('lists the bills waiting for the person in BILL once they have connected their own BILL sign-in', async () => {
    const sandbox = bot.app.sandbox!;
    const control = (method: string, path: string, body?: unknown) => sandboxControlOk(sandbox.url, method, path, body);
    const priya = sandbox.org.users.all().find((u) => u.firstName === 'Priya')!;
    const bill = sandbox.org.bills.all().find((b) => !b.archived && b.paymentStatus === 'UNPAID' && b.approvalStatus === 'UNASSIGNED')!;
    await control('POST', `/bills/${bill.id}/approvers`, { userIds: [priya.id] });
    const token = (await control('POST', `/users/${priya.id}/sync-tokens`, {})) as { name: string; value: string };
    // Dana's link to Priya's BILL sign-in, as `connect` stores it.
    await bot.app.approvals!.links.put({
      tenantId: TENANT,
      aadObjectId: DANA,
      orgId: sandbox.credentials.orgId,
      billUserId: priya.id,
      token: { name: token.name, value: token.value },
      teamsUserId: DEFAULT_USER.id,
    });
    const res = await dashboard(bot, `Bearer ${await sso()}`);
    expect(res.status).toBe(200);
    const approvals = (res.json as { approvals: Array<{ kind: string; number: string; party: string; amount: { amount: number } }> })
      .approvals;
    const waiting = approvals.find((a) => a.number === bill.invoice!.invoiceNumber);
    expect(waiting).toMatchObject({ kind: 'bill', party: bill.vendorName, amount: { amount: bill.amount } });
  });

  it('in single-organisation mode a personal tab (no team) shows the deployment’s organisation', async () => {
    const res = await dashboard(bot, `Bearer ${await sso()}`, null);
    expect(res.status).toBe(200);
    expect(res.json).toHaveProperty('payables');
  });
});

describe("when Microsoft's signing keys cannot be read", () => {
  it('a sign-in gets 503 with Retry-After (the page asks again then), not a 401 that blames the token', async () => {
    const blind = await startBot({ env: { ...tabEnv(), TabSsoKeysUrl: 'http://127.0.0.1:1/common/discovery/v2.0/keys' } });
    try {
      const res = await dashboard(blind, `Bearer ${await sso()}`, null);
      expect(res.status).toBe(503);
      expect(res.json?.error).toMatch(/Microsoft sign-in cannot be checked right now/);
      expect(res.headers['retry-after']).toBe('60');
      expect(res.headers['cache-control']).toBe('no-store');
    } finally {
      await blind.close();
    }
  });
});

describe('multi-organisation mode', () => {
  let orgs: TwoOrgs;
  let multi: TestBot;
  beforeAll(async () => {
    orgs = await startTwoOrgSandbox();
    multi = await startMultiOrgBot(orgs, DANA, { env: { ...tabEnv(), USER_COMMANDS_PER_MINUTE: '2' } });
  });
  afterAll(async () => {
    await multi.close();
    await orgs.sandbox.stop();
  });

  it('a tab opened without a team (personal, or a chat meeting) gets 404: nothing says which organisation', async () => {
    const res = await dashboard(multi, `Bearer ${await sso()}`, null);
    expect(res.status).toBe(404);
    expect(res.json?.error).toMatch(/open the tab in a channel of a linked team/);
  });

  it("the person's rate applies as for commands: beyond it, 429 with Retry-After", async () => {
    await dashboard(multi, `Bearer ${await sso()}`, null);
    const res = await dashboard(multi, `Bearer ${await sso()}`, null);
    expect(res.status).toBe(429);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  });
});
