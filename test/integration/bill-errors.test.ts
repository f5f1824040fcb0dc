// Every way BILL says no, produced by the sandbox over HTTP and classified by the client — and never a secret in a log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { BillApiError, type BillErrorCategory } from '../../src/errors.js';
import {
  billClient,
  billFailure,
  leaks,
  RecordingLimiter,
  secretsOf,
  startTestSandbox,
  type TestClient,
  type TestSandbox,
} from '../harness/sandbox.js';

// 14:20 UTC: the hourly budget resets in 40 minutes.
const clock = new ManualClock(Date.UTC(2025, 5, 3, 14, 20, 0));
let sb: TestSandbox;
const clients: TestClient[] = [];

function client(opts: Parameters<typeof billClient>[1] = {}): TestClient {
  const c = billClient(sb, { clock, ...opts });
  clients.push(c);
  return c;
}

function expectClass(err: BillApiError, category: BillErrorCategory, code?: string): void {
  expect(err.category).toBe(category);
  if (code) expect(err.code).toBe(code);
}

beforeAll(async () => {
  sb = await startTestSandbox({ clock });
  sb.sandbox.model.devKeys.set('inactive-developer-key-0001', { active: false });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  const secrets = [...(await secretsOf(sb)), 'wrong-password-do-not-log', 'unknown-developer-key-0001'];
  for (const c of clients) expect(leaks(c.logs.text(), secrets)).toEqual([]);
  await sb.stop();
});

describe('sign-in refusals', () => {
  it('a wrong password is BDC_1101 (credentials), and the client does not burn logins retrying it', async () => {
    const c = client({ overrides: { user: { ...sb.credentials, password: 'wrong-password-do-not-log' } } });
    const org = c.gateway.org(sb.credentials.orgId);
    expectClass(await billFailure(org.whoami()), 'credentials', 'BDC_1101');
    const before = await sb.stats();
    expectClass(await billFailure(org.whoami()), 'credentials', 'BDC_1101');
    expect((await sb.stats()).requestsByPath['POST /v3/login']).toBe(before.requestsByPath['POST /v3/login']);
    expect(c.gateway.ready()).toBe(false);
  });

  it('an unknown developer key is BDC_1102 and an inactive one BDC_1103', async () => {
    const unknown = client({ overrides: { user: { ...sb.credentials, devKey: 'unknown-developer-key-0001' } } });
    expectClass(await billFailure(unknown.gateway.org(sb.credentials.orgId).whoami()), 'credentials', 'BDC_1102');
    const inactive = client({ overrides: { user: { ...sb.credentials, devKey: 'inactive-developer-key-0001' } } });
    expectClass(await billFailure(inactive.gateway.org(sb.credentials.orgId).whoami()), 'credentials', 'BDC_1103');
  });
});

describe('limits', () => {
  it('a spent hourly budget is BDC_1144: not retried, reported to the limiter, resets at the top of the hour', async () => {
    const limiter = new RecordingLimiter();
    const c = client({ limiter });
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    await sb.control('POST', '/hourly-budget', { limit: 0 });
    try {
      const before = (await sb.stats()).errorsByCode.BDC_1144 ?? 0;
      const err = await billFailure(org.bills.list({ maxPages: 1 }).all());
      expectClass(err, 'hourlyLimit', 'BDC_1144');
      expect(err.retryAfterMs).toBe(40 * 60_000);
      expect((await sb.stats()).errorsByCode.BDC_1144).toBe(before + 1);
      expect(limiter.throttles).toContainEqual({
        upstream: { service: 'bill', devKey: sb.credentials.devKey, orgId: sb.credentials.orgId },
        throttle: { kind: 'hourly', untilMs: Date.UTC(2025, 5, 3, 15, 0, 0) },
      });
    } finally {
      await sb.control('POST', '/hourly-budget', { limit: 20_000 });
    }
  });

  it('BDC_1322 is backed off and retried, then reported when it does not clear', async () => {
    const limiter = new RecordingLimiter();
    const c = client({ limiter, overrides: { retry: { baseDelayMs: 5, maxDelayMs: 20, maxThrottleRetries: 4 } } });
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    sb.sandbox.gate.limits.concurrency = 0;
    try {
      const before = (await sb.stats()).errorsByCode.BDC_1322 ?? 0;
      expectClass(await billFailure(org.whoami()), 'concurrencyLimit', 'BDC_1322');
      expect((await sb.stats()).errorsByCode.BDC_1322).toBe(before + 5);
      expect(limiter.throttles.filter((t) => t.throttle.kind === 'concurrency')).toHaveLength(5);
    } finally {
      sb.sandbox.gate.limits.concurrency = 3;
    }
  });

  it('without any local limiting, a burst above 3 in flight is refused by BILL and still completes through backoff', async () => {
    const c = client({
      limiter: new RecordingLimiter(),
      overrides: { retry: { baseDelayMs: 20, maxDelayMs: 400, maxThrottleRetries: 10 } },
    });
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    const before = await sb.stats();
    sb.sandbox.setLatency(30);
    try {
      const results = await Promise.all(Array.from({ length: 8 }, () => org.invoices.list({ pageSize: 100, maxPages: 1 }).all()));
      expect(results.every((r) => r.items.length > 0)).toBe(true);
    } finally {
      sb.sandbox.setLatency(0);
    }
    const after = await sb.stats();
    expect(after.maxConcurrentByOrg[sb.credentials.orgId]).toBe(3);
    expect(after.limitErrors.concurrency - before.limitErrors.concurrency).toBeGreaterThan(0);
  });

  it('Spend & Expense above 60 calls a minute is a 429 with Retry-After (rateLimited)', async () => {
    const limiter = new RecordingLimiter();
    const c = client({ limiter });
    const spend = c.gateway.spend(sb.credentials.orgId)!;
    const budget = sb.sandbox.org.spend.budgets.all()[0]!;
    let err: BillApiError | undefined;
    for (let i = 0; i < 61 && !err; i++)
      err = await spend.budgets.get(budget.id).then(
        () => undefined,
        (e: unknown) => e as BillApiError,
      );
    expect(err).toBeInstanceOf(BillApiError);
    expectClass(err!, 'rateLimited');
    expect(err!.status).toBe(429);
    expect(err!.retryAfterMs).toBe(60_000);
    expect(limiter.throttles.at(-1)).toEqual({
      upstream: { service: 'spend', token: sb.credentials.spendApiToken },
      throttle: { kind: 'retryAfter', ms: 60_000 },
    });
    clock.advance(60_000);
  });
});

describe('not found and bad requests', () => {
  it('an unknown bill id is BDC_1205 (notFound)', async () => {
    const c = client();
    const err = await billFailure(c.gateway.org(sb.credentials.orgId).bills.get('00n01DOESNOTEXIST000'));
    expectClass(err, 'notFound', 'BDC_1205');
    expect(err.status).toBe(404);
    expectClass(await billFailure(c.gateway.spend(sb.credentials.orgId)!.transactions.get('VHJhbnNhY3Rpb246MQ==')), 'notFound');
  });

  it('an error entry without a code is a validation error', async () => {
    const c = client();
    await sb.fault({ kind: 'noCodeError', path: '/v3/customers' });
    const err = await billFailure(c.gateway.org(sb.credentials.orgId).customers.list().all());
    expectClass(err, 'validation');
    expect(err.code).toBeUndefined();
    expect(err.entries[0]!.message).toBe('Request could not be processed');
  });
});

describe('BILL or the network failing', () => {
  it('two 5xx answers are retried and the third attempt succeeds; three fail as server', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    await sb.fault({ kind: 'serverError', path: '/v3/vendors', count: 2 });
    expect((await org.vendors.list({ maxPages: 1 }).all()).items.length).toBeGreaterThan(0);
    await sb.fault({ kind: 'serverError', path: '/v3/vendors', count: 3 });
    expectClass(await billFailure(org.vendors.list({ maxPages: 1 }).all()), 'server');
  });

  it('a non-JSON body and an empty body are classified as server errors', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    await sb.fault({ kind: 'nonJson', path: '/v3/payments', count: 3 });
    const html = await billFailure(org.payments.list({ maxPages: 1 }).all());
    expectClass(html, 'server');
    expect(html.status).toBe(502);
    expect(html.message).toMatch(/non-JSON/);
    await sb.fault({ kind: 'emptyError', path: '/v3/payments', count: 3 });
    const empty = await billFailure(org.payments.list({ maxPages: 1 }).all());
    expectClass(empty, 'server');
    expect(empty.message).toMatch(/empty body/);
  });

  it('a dropped connection is retried for a read, and not for a change', async () => {
    const c = client();
    const org = c.gateway.org(sb.credentials.orgId);
    await org.whoami();
    await sb.fault({ kind: 'reset', path: '/v3/payments' });
    expect((await org.payments.list({ maxPages: 1 }).all()).items.length).toBeGreaterThan(0);

    const sub = await org.subscriptions.create({
      name: 'network check',
      events: [{ type: 'invoice.created', version: '1' }],
      notificationUrl: 'http://127.0.0.1:9/n',
    });
    await sb.fault({ kind: 'reset', method: 'PATCH', path: '/v3/subscriptions' });
    const before = (await sb.stats()).requestsByPath['PATCH /connect-events/v3/subscriptions/{id}'] ?? 0;
    expectClass(await billFailure(org.subscriptions.update(sub.id, { name: 'renamed' })), 'network');
    expect((await sb.stats()).requestsByPath['PATCH /connect-events/v3/subscriptions/{id}']).toBe(before + 1);
    await org.subscriptions.remove(sub.id);
  });
});
