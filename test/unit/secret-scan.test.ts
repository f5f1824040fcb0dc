// The suite-wide secret scan can fail: a leaking line is found in every encoding, for a real bot's captured log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { post } from '../harness/net.js';
import { LogCapture } from '../harness/logs.js';
import { describeLeaks, findLeaks, registerSecrets, scanRegistered } from '../harness/secretScan.js';

const PASSWORD = 'app-password-4f1c9e2b7d';

describe('findLeaks', () => {
  const secret = 'p@ss word/"quoted"+1';
  it.each([
    ['raw', `{"msg":"login with ${secret}"}`],
    ['json-escaped', JSON.stringify({ msg: `login with ${secret}` })],
    ['url-encoded', `{"url":"https://x/?p=${encodeURIComponent(secret)}"}`],
    ['base64', `{"header":"Basic ${Buffer.from(secret).toString('base64')}"}`],
  ] as const)('finds a secret written %s', (form, line) => {
    const leaks = findLeaks(['{"msg":"clean"}', line], [secret]);
    expect(leaks.map((l) => [l.form, l.line])).toContainEqual([form, 1]);
    // The report names the secret by its first characters only.
    expect(describeLeaks(leaks)).not.toContain(secret);
  });

  it('finds nothing in clean lines, and ignores values too short to be told from chance', () => {
    expect(findLeaks(['{"msg":"[REDACTED]"}', '{"n":1234}'], [secret, '1234', 'test'])).toEqual([]);
  });
});

describe('the registered scan over a real bot', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({
      env: {
        MicrosoftAppId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
        MicrosoftAppPassword: PASSWORD,
        MicrosoftAppTenantId: 'aaaaaaaa-0000-4000-8000-000000000001',
        ALLOWED_TENANT_IDS: 'aaaaaaaa-0000-4000-8000-000000000001',
      },
    });
  });
  afterAll(async () => {
    await bot?.close();
  });

  it('passes while the bot logs through its scrubbing logger, even when asked to log the password', async () => {
    bot.app.log.warn({ detail: `password is ${PASSWORD}` }, 'test line');
    bot.app.log.flush();
    expect(bot.logs.text()).toContain('[REDACTED]');
    expect(await scanRegistered()).toEqual([]);
  });

  it('fails on a line that carries the app password, a sandbox sessionId or a registered token', async () => {
    // A session issued by the embedded sandbox, as BILL's POST /v3/login hands one out.
    const demo = bot.app.sandbox!.credentials;
    const login = await post(`${bot.app.sandbox!.baseUrl}/v3/login`, {
      username: demo.username,
      password: demo.password,
      organizationId: demo.orgId,
      devKey: demo.devKey,
    });
    expect(login.status).toBe(200);
    const sessionId = String(login.json?.sessionId);
    expect(bot.app.sandbox!.stats().sessionsIssued).toContain(sessionId);
    const extra = new LogCapture('extra capture');
    registerSecrets(() => ['minted-token-0123456789']);
    bot.logs.lines.push(`{"msg":"oops ${PASSWORD}"}\n`);
    extra.lines.push(`{"sessionId":"${sessionId}"}\n`, '{"token":"minted-token-0123456789"}\n');
    try {
      const leaks = await scanRegistered();
      expect(leaks.map((l) => l.source).sort()).toEqual(['bot log', 'extra capture', 'extra capture']);
    } finally {
      // Take the planted lines back out so this file's own scan (after all tests) passes.
      bot.logs.lines.pop();
      extra.lines.length = 0;
    }
    expect(await scanRegistered()).toEqual([]);
  });
});
