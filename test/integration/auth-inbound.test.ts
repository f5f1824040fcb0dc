// Only the Bot Framework can talk to the bot: botbuilder's production token checks, against a local issuer.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { format } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startAuthenticatedBot, type AuthenticatedBot } from '../harness/bot.js';
import { channelMessage, TENANT } from '../harness/activities.js';
import type { LoginStandIn, MintOptions, OpenIdIssuer } from '../harness/openid.js';
import { NS } from '../../src/infra/state/types.js';
import { configSecrets } from '../../src/config.js';

const APP_ID = '5b0e8a64-2c1f-4c8e-9d7a-1f2e3d4c5b6a';
const ANOTHER_BOT = '9c8b7a65-4321-4fed-8cba-0987654321fe';

let issuer: OpenIdIssuer;
let login: LoginStandIn;
let bot: AuthenticatedBot;

beforeAll(async () => {
  bot = await startAuthenticatedBot(APP_ID, TENANT);
  ({ issuer, login } = bot);
});
afterAll(async () => {
  await bot.close();
});

function auditLines(): string[] {
  const file = join(bot.stateDir, 'audit.log');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** The fields of an activity the refusal cases change. */
interface Tweakable {
  serviceUrl: string;
  channelId: string;
}

/** Sends "@billbridge help" with the given Authorization header; the activity's serviceUrl is the connector stand-in. */
async function sendHelp(authorization: string | undefined, tweak: (a: Tweakable) => void = () => undefined) {
  const activity = channelMessage('help', { serviceUrl: bot.connector.url });
  tweak(activity);
  const res = await bot.send(activity, authorization === undefined ? {} : { authorization });
  return { res, activity };
}

const valid = (o: Partial<MintOptions> = {}): Promise<string> => issuer.token({ aud: APP_ID, serviceUrl: bot.connector.url, ...o });

describe('a Teams message with a valid Bot Framework token', () => {
  it("gets 200 and the help card, sent with the bot's own bearer token", async () => {
    const { res, activity } = await sendHelp(`Bearer ${await valid()}`);
    expect(res.status).toBe(200);
    const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id);
    expect(JSON.stringify(reply!.body)).toContain('billbridge commands');
    expect(reply!.headers.authorization).toMatch(/^Bearer bf-out-/);
    expect(login.issued).toContain(reply!.headers.authorization!.slice('Bearer '.length));
    // Signing keys were fetched from the configured issuer, the production validation path.
    expect(issuer.requests).toContain('/v1/.well-known/keys');
  });
});

describe('requests that must not reach the bot', () => {
  const cases: Array<[string, () => Promise<string | undefined>, ((a: Tweakable) => void)?]> = [
    ['no Authorization header', async () => undefined],
    ['an empty Authorization header', async () => ''],
    ['a Basic scheme instead of Bearer', async () => `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['a bearer value that is not a JWT', async () => 'Bearer not-a-jwt'],
    ['an expired token (beyond the 5 minute clock tolerance)', async () => `Bearer ${await valid({ notBefore: -7200, expiresIn: -600 })}`],
    ['a token that is not valid yet', async () => `Bearer ${await valid({ notBefore: 600, expiresIn: 3600 })}`],
    ['a token for another bot (audience)', async () => `Bearer ${await valid({ aud: ANOTHER_BOT })}`],
    ['a token from another issuer', async () => `Bearer ${await valid({ iss: 'https://issuer.example.test' })}`],
    [
      'a token signed with a key the issuer does not publish (unknown kid)',
      async () => `Bearer ${await valid({ signWith: 'unpublished' })}`,
    ],
    [
      'a token with a bad signature (published kid, other key)',
      async () => `Bearer ${await valid({ signWith: 'unpublished', kid: issuer.kid })}`,
    ],
    ['an unsigned token (alg: none)', async () => `Bearer ${issuer.unsigned({ aud: APP_ID, serviceUrl: bot.connector.url })}`],
    ['a token issued for another serviceUrl', async () => `Bearer ${await valid({ serviceUrl: 'https://smba.trafficmanager.net/amer/' })}`],
    ['a token without a serviceurl claim', async () => `Bearer ${await valid({ serviceUrl: null })}`],
    [
      'a valid token on an activity pointing at another serviceUrl',
      async () => `Bearer ${await valid()}`,
      (a) => (a.serviceUrl = 'http://127.0.0.1:9/'),
    ],
    [
      'a token whose key is endorsed for msteams, on a webchat activity',
      async () => `Bearer ${await valid()}`,
      (a) => (a.channelId = 'webchat'),
    ],
  ];

  /** What botbuilder itself prints to stderr while refusing (it console.error()s inside token validation). */
  const stderr: string[] = [];
  const presented: string[] = [];
  beforeAll(() => {
    vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void stderr.push(format(...args)));
  });
  afterAll(() => {
    vi.mocked(console.error).mockRestore();
  });

  it.each(cases)('%s gets 401 and no bot logic runs', async (_name, header, tweak) => {
    const callsBefore = bot.connector.calls.length;
    const auditBefore = auditLines().length;
    const authorization = await header();
    if (authorization) presented.push(authorization.replace(/^\S+ /, ''));
    const { res, activity } = await sendHelp(authorization, tweak);
    expect(res.status).toBe(401);
    // A fixed body: never botbuilder's message, which echoes claims from the token.
    expect(res.json).toEqual({ error: 'Unauthorized' });
    // No turn: nothing sent, no delivery recorded, no audit record.
    expect(bot.connector.calls.length).toBe(callsBefore);
    expect(await bot.app.state.get(NS.seenActivities, `${activity.conversation.id}|${activity.id}`)).toBeUndefined();
    expect(auditLines().length).toBe(auditBefore);
  });

  it("logs each refusal once through the bot's logger, with no stack trace and no key material", () => {
    const refusals = bot.logs.records().filter((r) => r.msg === 'request refused: Bot Framework authentication failed');
    expect(refusals.length).toBe(cases.length);
    expect(refusals.every((r) => r.level === 'info' && r.stack === undefined)).toBe(true);
    expect(bot.logs.text()).not.toContain('BEGIN RSA PUBLIC KEY');
  });

  it("leaves botbuilder's own stderr lines (a published public key, an expiry) free of tokens and secrets", () => {
    const printed = stderr.join('\n');
    // botbuilder does print here (the bad-signature and expired cases): the lines are checked, not absent.
    expect(stderr.length).toBeGreaterThan(0);
    for (const secret of [...presented.filter((t) => t.length > 16), ...configSecrets(bot.app.config), ...bot.app.secrets.list()]) {
      if (secret) expect(printed).not.toContain(secret);
    }
    // No private key material either: only the issuer's published key is ever printed.
    expect(printed).not.toContain('PRIVATE KEY');
  });

  it('keeps answering valid requests afterwards', async () => {
    const { res, activity } = await sendHelp(`Bearer ${await valid()}`);
    expect(res.status).toBe(200);
    await bot.connector.waitForMessages(1, activity.conversation.id);
    const audited = auditLines().map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(audited.some((r) => r.correlationId && r.command === 'help' && r.conversationId === activity.conversation.id)).toBe(true);
  });
});
