// The dashboard tab's recent BILL events live in the state store: in cluster mode an event one instance accepted is
// shown by another sharing Redis, and a single instance still shows it after a restart on the same STATE_DIR.
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_USER, TENANT } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { get, post } from '../harness/net.js';
import { LoginStandIn, OpenIdIssuer } from '../harness/openid.js';
import { TestRedis } from '../harness/redis.js';

const APP_ID = '5b0e8a64-2c1f-4c8e-9d7a-1f2e3d4c5b6a';
const WEBHOOK_KEY = 'tab-events-webhook-key-0123456789';

let issuer: OpenIdIssuer;
let login: LoginStandIn;
let connector: ConnectorStandIn;

beforeAll(async () => {
  issuer = await OpenIdIssuer.start();
  login = (await LoginStandIn.start()).intercept();
  connector = await new ConnectorStandIn().start();
});
afterAll(async () => {
  await connector.stop();
  await login.stop();
  await issuer.stop();
});

const env = (extra: Record<string, string> = {}): Record<string, string> => ({
  ...issuer.env(APP_ID, TENANT),
  TabSsoKeysUrl: issuer.ssoKeysUrl,
  BILL_WEBHOOK_SECURITY_KEY: WEBHOOK_KEY,
  ...extra,
});

/** BILL telling `bot` that a vendor was created in its (sandbox) organisation; the answer must be "accepted". */
async function vendorCreated(bot: TestBot, name: string): Promise<void> {
  const orgId = bot.app.sandbox!.credentials.orgId;
  const raw = JSON.stringify({
    metadata: {
      eventId: randomUUID(),
      subscriptionId: 'sub-made-in-bill',
      organizationId: orgId,
      eventType: 'vendor.created',
      version: '1',
    },
    vendor: { id: `00901${randomUUID().replace(/-/g, '').slice(0, 15)}`, name },
  });
  const signature = createHmac('sha256', WEBHOOK_KEY).update(raw).digest('base64');
  const res = await post(`${bot.url}/api/bill/webhooks`, raw, { 'x-bill-sha-signature': signature });
  expect(res.json).toMatchObject({ status: 'accepted' });
}

/** The events a personal tab (single-organisation mode) shows Dana on `bot`. */
async function eventsOn(bot: TestBot): Promise<string[]> {
  const token = await issuer.ssoToken({ tenantId: TENANT, aadObjectId: DEFAULT_USER.aadObjectId, aud: APP_ID });
  const res = await get(`${bot.url}/api/tab/dashboard`, { authorization: `Bearer ${token}` });
  expect(res.status).toBe(200);
  return (res.json as { events: Array<{ text: string }> }).events.map((e) => e.text);
}

describe('two instances sharing Redis', () => {
  let redis: TestRedis;
  let a: TestBot;
  let b: TestBot;
  beforeAll(async () => {
    redis = await TestRedis.start();
    [a, b] = await Promise.all([
      startBot({ env: env({ REDIS_URL: redis.url }), connector }),
      startBot({ env: env({ REDIS_URL: redis.url }), connector }),
    ]);
    expect(a.app.sandbox!.credentials.orgId).toBe(b.app.sandbox!.credentials.orgId);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await redis.close();
  });

  it('an event accepted by one instance is shown by the other, newest first, and an org keeps only its last 10', async () => {
    await vendorCreated(a, 'Acme Supplies');
    expect(await eventsOn(b)).toEqual(['Vendor Acme Supplies created']);
    for (let i = 1; i <= 11; i++) await vendorCreated(i % 2 ? b : a, `Vendor no ${i}`);
    const shown = await eventsOn(a);
    expect(shown).toHaveLength(10);
    expect(shown[0]).toBe('Vendor Vendor no 11 created');
    expect(shown.at(-1)).toBe('Vendor Vendor no 2 created');
    expect(await eventsOn(b)).toEqual(shown);
  });
});

describe('one instance restarted on the same STATE_DIR', () => {
  let stateDir: string;
  beforeAll(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'billbridge-tab-events-'));
  });
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  it('still shows the events it accepted before the restart', async () => {
    const first = await startBot({ env: env(), connector, stateDir });
    try {
      await vendorCreated(first, 'Northwind Traders');
    } finally {
      await first.close();
    }
    const second = await startBot({ env: env(), connector, stateDir });
    try {
      expect(await eventsOn(second)).toEqual(['Vendor Northwind Traders created']);
    } finally {
      await second.close();
    }
  });
});
