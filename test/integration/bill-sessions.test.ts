// The bot signs in to BILL once and keeps that session alive: many calls share one login, an expired session is
// replaced exactly once however many callers notice, and nothing secret reaches the logs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { BillApiError, LimitExceeded } from '../../src/errors.js';
import { billClient, leaks, RecordingLimiter, secretsOf, startTestSandbox, type TestClient, type TestSandbox } from '../harness/sandbox.js';

const MIN = 60_000;
let sb: TestSandbox;
const clock = new ManualClock(Date.UTC(2025, 5, 2, 15, 0, 0));
const clients: TestClient[] = [];

function client(opts: Parameters<typeof billClient>[1] = {}): TestClient {
  const c = billClient(sb, { clock, ...opts });
  clients.push(c);
  return c;
}

async function logins(): Promise<number> {
  return (await sb.stats()).logins;
}

beforeAll(async () => {
  sb = await startTestSandbox({ clock, latencyMs: 2 });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  // No client ever logged a password, dev key, API token or any sessionId the sandbox issued.
  const secrets = await secretsOf(sb);
  for (const c of clients) expect(leaks(c.logs.text(), secrets)).toEqual([]);
  await sb.stop();
});

describe('one login for many calls', () => {
  it('50 concurrent calls on a cold start, then 100 sequential calls, sign in exactly once', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    const before = await logins();
    const concurrent = await Promise.all(Array.from({ length: 50 }, () => org.whoami()));
    expect(concurrent.every((s) => s.organizationId === sb.credentials.orgId)).toBe(true);
    for (let i = 0; i < 100; i++) await org.bills.get(sb.sandbox.org.bills.all()[i % 10]!.id);
    const stats = await sb.stats();
    expect(stats.logins - before).toBe(1);
    // The shared limiter kept BILL's 3-in-flight rule, so BILL never refused for concurrency.
    expect(stats.maxConcurrentByOrg[sb.credentials.orgId]).toBeLessThanOrEqual(3);
    expect(stats.limitErrors.concurrency).toBe(0);
    expect(c.gateway.status().sessions).toEqual([expect.objectContaining({ orgId: sb.credentials.orgId, loggedIn: true, logins: 1 })]);
  });

  it('registers the live sessionId as a secret and forgets it at logout', async () => {
    const c = client();
    await c.gateway.org(sb.credentials.orgId).whoami();
    const issued = (await sb.stats()).sessionsIssued.at(-1)!;
    expect(c.secrets.list()).toContain(issued);
    const logoutsBefore = (await sb.stats()).logouts;
    await c.gateway.close();
    expect((await sb.stats()).logouts).toBe(logoutsBefore + 1);
    expect(c.secrets.list()).not.toContain(issued);
    expect(sb.sandbox.gate.sessions.has(issued)).toBe(false);
  });
});

describe('expired sessions', () => {
  it('keeps a session alive while it is used (sliding idle clock)', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    const before = await logins();
    for (let i = 0; i < 4; i++) {
      await org.whoami();
      clock.advance(20 * MIN);
    }
    await org.whoami();
    expect((await logins()) - before).toBe(1);
  });

  it('after 35 idle minutes on the shared clock, signs in again before calling: one more login, no refused call', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    const before = await sb.stats();
    clock.advance(36 * MIN);
    await org.whoami();
    const after = await sb.stats();
    expect(after.logins - before.logins).toBe(1);
    expect(after.errorsByCode.BDC_1109 ?? 0).toBe(before.errorsByCode.BDC_1109 ?? 0);
  });

  it('when BILL expired the session on its own clock, the next call gets BDC_1109, signs in once and succeeds', async () => {
    // The client's clock stands still; only BILL's moves, so the client cannot see it coming.
    const own = new ManualClock(clock.now());
    const c = client({ clock: own });
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    const before = await sb.stats();
    clock.advance(36 * MIN);
    const me = await org.whoami();
    expect(me.userId).toBe(sb.credentials.userId);
    const after = await sb.stats();
    expect(after.logins - before.logins).toBe(1);
    expect((after.errorsByCode.BDC_1109 ?? 0) - (before.errorsByCode.BDC_1109 ?? 0)).toBe(1);
  });

  it('a session expired through /__sandbox/ is replaced with exactly one more login', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    const before = await logins();
    expect((await sb.control('POST', '/sessions/expire')).json?.expired).toBeGreaterThan(0);
    const page = await org.invoices.list({ pageSize: 10, maxPages: 1 }).all();
    expect(page.items).toHaveLength(10);
    expect((await logins()) - before).toBe(1);
  });

  it('20 concurrent callers hitting the expired session cause exactly one re-login (through the shared limiter)', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    await sb.control('POST', '/sessions/expire');
    const before = await logins();
    const answers = await Promise.all(Array.from({ length: 20 }, () => org.whoami()));
    expect(answers).toHaveLength(20);
    expect((await logins()) - before).toBe(1);
  });

  it('20 callers that all get BDC_1109 at the same moment still cause exactly one re-login', async () => {
    // No local limiting and room for all 20 at BILL: every caller sees the expired session at once.
    sb.sandbox.gate.limits.concurrency = 100;
    try {
      const c = client({ limiter: new RecordingLimiter() });
      const org = c.gateway.org(sb.credentials.orgId);
      await org.whoami();
      await sb.control('POST', '/sessions/expire');
      const before = await sb.stats();
      const answers = await Promise.all(Array.from({ length: 20 }, () => org.whoami()));
      expect(answers.every((a) => a.userId === sb.credentials.userId)).toBe(true);
      const after = await sb.stats();
      expect(after.logins - before.logins).toBe(1);
      expect((after.errorsByCode.BDC_1109 ?? 0) - (before.errorsByCode.BDC_1109 ?? 0)).toBe(20);
    } finally {
      sb.sandbox.gate.limits.concurrency = 3;
    }
  });

  it('does not replay a call that changes something, but signs in again for the next one', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    const sub = await org.subscriptions.create({
      name: 'replay check',
      events: [{ type: 'bill.updated', version: '1' }],
      notificationUrl: 'http://127.0.0.1:9/hook',
    });
    await sb.control('POST', '/sessions/expire');
    const err = await org.subscriptions.update(sub.id, { name: 'renamed' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BillApiError);
    expect((err as BillApiError).category).toBe('session');
    expect((await org.subscriptions.get(sub.id)).name).toBe('replay check');
    await org.subscriptions.remove(sub.id);
  });
});

describe('the login budget', () => {
  it('fails fast with a typed error once the hourly logins are spent, without calling BILL', async () => {
    const c = client({ limiterEnv: { LIMIT_BILL_LOGINS_PER_HOUR: '2' } });
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    await sb.control('POST', '/sessions/expire');
    await org.whoami();
    await sb.control('POST', '/sessions/expire');
    const before = await sb.stats();
    const err = await org.whoami().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LimitExceeded);
    expect(err).toMatchObject({ reason: 'logins', budget: 'bill.logins' });
    expect((err as LimitExceeded).retryInMs).toBeGreaterThan(59 * MIN);
    const after = await sb.stats();
    expect(after.logins).toBe(before.logins);
    expect(after.requestsByPath['POST /v3/login']).toBe(before.requestsByPath['POST /v3/login']);
  });
});
