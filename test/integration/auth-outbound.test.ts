// The bot's own replies: a client-credentials token from the login endpoint, fetched once and reused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { channelMessage, TENANT } from '../harness/activities.js';
import { LoginStandIn, OpenIdIssuer } from '../harness/openid.js';

let issuer: OpenIdIssuer;
let login: LoginStandIn;

beforeAll(async () => {
  issuer = await OpenIdIssuer.start();
  login = (await LoginStandIn.start()).intercept();
});
afterAll(async () => {
  await login.stop();
  await issuer.stop();
});

async function helpInNewThreads(bot: TestBot, appId: string, n: number) {
  const replies = [];
  for (let i = 0; i < n; i++) {
    const activity = channelMessage('help', { serviceUrl: bot.connector.url });
    const token = await issuer.token({ aud: appId, serviceUrl: bot.connector.url });
    expect((await bot.send(activity, { authorization: `Bearer ${token}` })).status).toBe(200);
    const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id);
    replies.push(reply!);
  }
  return replies;
}

describe('a single-tenant bot replying in five threads', () => {
  const appId = '0d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
  const password = 'single-tenant-client-secret-value';
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({ env: issuer.env(appId, TENANT, password) });
  });
  afterAll(async () => {
    await bot.close();
  });

  it("asks its tenant's token endpoint once, for the Bot Framework scope, and signs every reply with that token", async () => {
    const before = login.tokenRequests.length;
    const replies = await helpInNewThreads(bot, appId, 5);
    const asked = login.tokenRequests.slice(before);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({
      tenant: TENANT,
      grantType: 'client_credentials',
      clientId: appId,
      clientSecret: password,
      scope: 'https://api.botframework.com/.default',
    });
    const headers = new Set(replies.map((r) => r.headers.authorization));
    expect(headers.size).toBe(1);
    expect([...headers][0]).toBe(`Bearer ${login.issued.at(-1)}`);
  });

  it('never writes the client secret or the access token to its log', () => {
    expect(bot.logs.text()).not.toContain(password);
    for (const token of login.issued) expect(bot.logs.text()).not.toContain(token);
  });
});

describe('a multi-tenant bot', () => {
  it('gets its token from the botframework.com tenant, as botbuilder does in production', async () => {
    const appId = '7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d';
    const bot = await startBot({ env: { ...issuer.env(appId, TENANT), MicrosoftAppType: 'MultiTenant', MicrosoftAppTenantId: '' } });
    try {
      const before = login.tokenRequests.length;
      const [reply] = await helpInNewThreads(bot, appId, 2);
      const asked = login.tokenRequests.slice(before);
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatchObject({ tenant: 'botframework.com', clientId: appId });
      expect(reply!.headers.authorization).toBe(`Bearer ${login.issued.at(-1)}`);
    } finally {
      await bot.close();
    }
  });
});

describe('local mode (no app id)', () => {
  it('sends replies without any Authorization header and never asks for a token', async () => {
    const bot = await startBot();
    try {
      const before = login.requests.length;
      const activity = channelMessage('help', { serviceUrl: bot.connector.url });
      expect((await bot.send(activity)).status).toBe(200);
      const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id);
      expect(reply!.headers.authorization).toBeUndefined();
      expect(login.requests.length).toBe(before);
    } finally {
      await bot.close();
    }
  });
});
