// The sandbox's demo organisation and the rules it enforces, checked over raw HTTP like any BILL client would see them.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { addDays } from '../../src/sandbox/model.js';
import { BILL_LIMITS } from '../../src/sandbox/gate.js';
import { startTestSandbox, type TestSandbox } from '../harness/sandbox.js';

const T0 = Date.UTC(2025, 2, 12, 16, 30, 0);
const clock = new ManualClock(T0);
let sb: TestSandbox;

beforeAll(async () => {
  sb = await startTestSandbox({ clock, limits: { loginsPerHour: 4 } });
});
afterAll(async () => {
  await sb.stop();
});

/**
 * A BILL answer as these tests read it: an object (a login, a list) or a list of errors from index 0. Every field is
 * optional and each test asserts the ones it reads; an empty answer reads as {}.
 */
interface BillAnswer {
  sessionId?: string;
  userId?: string;
  results?: Array<{ id: string; receipts?: unknown }>;
  nextPage?: string;
  bills?: Array<{ billId: string }>;
  [index: number]: { code?: string; severity?: string } | undefined;
}

async function call(method: string, path: string, opts: { headers?: Record<string, string>; body?: unknown; base?: string } = {}) {
  const res = await request(`${opts.base ?? sb.baseUrl}${path}`, {
    method: method as 'GET',
    headers: { 'content-type': 'application/json', ...opts.headers },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, json: text ? (JSON.parse(text) as BillAnswer) : {} };
}

async function login(over: Record<string, string> = {}) {
  const { devKey, username, password, orgId } = sb.credentials;
  return call('POST', '/v3/login', { body: { username, password, organizationId: orgId, devKey, ...over } });
}

describe('the demo organisation', () => {
  it('has BILL-shaped ids with BILL prefixes', () => {
    const o = sb.sandbox.org;
    expect(o.id).toMatch(/^008[0-9A-Za-z]{17}$/);
    expect(sb.credentials.userId).toMatch(/^006/);
    const prefixes: Array<[string[], string]> = [
      [o.vendors.all().map((x) => x.id), '009'],
      [o.bills.all().map((x) => x.id), '00n'],
      [o.customers.all().map((x) => x.id), '0cu'],
      [o.invoices.all().map((x) => x.id), '00e'],
      [o.payments.all().map((x) => x.id), 'stp'],
      [o.receivablePayments.all().map((x) => x.id), '0rp'],
    ];
    for (const [ids, prefix] of prefixes) {
      expect(ids.length).toBeGreaterThan(0);
      expect(ids.every((id) => id.startsWith(prefix) && id.length === 20)).toBe(true);
    }
  });

  it('spreads bills over overdue, this week and later, unpaid, scheduled and paid, with approvers', () => {
    const today = sb.sandbox.model.today();
    expect(today).toBe('2025-03-12');
    const bills = sb.sandbox.org.bills.all().filter((b) => !b.archived);
    const unpaid = bills.filter((b) => b.paymentStatus === 'UNPAID');
    expect(unpaid.some((b) => b.dueDate < today)).toBe(true);
    expect(unpaid.some((b) => b.dueDate >= today && b.dueDate <= addDays(today, 6))).toBe(true);
    expect(unpaid.some((b) => b.dueDate > addDays(today, 6))).toBe(true);
    expect(bills.some((b) => b.paymentStatus === 'SCHEDULED')).toBe(true);
    expect(bills.some((b) => b.paymentStatus === 'PAID')).toBe(true);
    expect(sb.sandbox.org.bills.all().some((b) => b.archived)).toBe(true);
    expect(bills.some((b) => b.approvalStatus === 'ASSIGNED' && (b.approvers?.length ?? 0) > 0)).toBe(true);
    for (const b of bills) expect(b.billLineItems!.reduce((s, l) => s + l.amount, 0)).toBeCloseTo(b.amount, 2);
  });

  it('has invoices open, overdue, partially paid, paid and archived, numbered from 1001', () => {
    const today = sb.sandbox.model.today();
    const inv = sb.sandbox.org.invoices.all();
    expect(inv.find((i) => i.invoiceNumber === '1001')).toBeDefined();
    expect(inv.some((i) => i.status === 'OPEN' && !i.archived && i.dueDate >= today)).toBe(true);
    expect(inv.some((i) => i.status === 'OPEN' && !i.archived && i.dueDate < today)).toBe(true);
    expect(inv.some((i) => i.status === 'PARTIAL_PAYMENT' && i.dueAmount > 0 && i.dueAmount < i.totalAmount)).toBe(true);
    expect(inv.some((i) => i.status === 'PAID' && i.dueAmount === 0 && i.payments!.length > 0)).toBe(true);
    expect(inv.some((i) => i.archived)).toBe(true);
  });

  it('has payments in several lifecycle states, card spend with missing receipts, reimbursements and budgets', () => {
    const statuses = new Set(sb.sandbox.org.payments.all().map((p) => p.singleStatus));
    expect(statuses.size).toBeGreaterThanOrEqual(4);
    expect(statuses.has('SCHEDULED')).toBe(true);
    const tx = sb.sandbox.org.spend.transactions.all();
    expect(tx.some((t) => t.receiptStatus === 'MISSING')).toBe(true);
    expect(sb.sandbox.org.spend.reimbursements.size).toBeGreaterThan(0);
    expect(sb.sandbox.org.spend.budgets.all().some((b) => b.retired)).toBe(true);
  });

  it('is the same organisation on every start, with dates that move with today', async () => {
    const later = await startTestSandbox({ clock: new ManualClock(T0 + 86_400_000) });
    try {
      const a = sb.sandbox.org.bills.all();
      const b = later.sandbox.org.bills.all();
      expect(b.map((x) => [x.id, x.amount, x.vendorName])).toEqual(a.map((x) => [x.id, x.amount, x.vendorName]));
      expect(b.map((x) => x.dueDate)).toEqual(a.map((x) => addDays(x.dueDate, 1)));
      expect(later.credentials.orgId).toBe(sb.credentials.orgId);
      // Credentials are fresh secrets on every start.
      expect(later.credentials.password).not.toBe(sb.credentials.password);
    } finally {
      await later.stop();
    }
  });

  it('scales to the benchmark size quickly', async () => {
    const started = performance.now();
    const big = await startTestSandbox({ invoices: 10_000, bills: 5_000 });
    try {
      expect(big.sandbox.org.invoices.size).toBe(10_000);
      expect(big.sandbox.org.bills.size).toBe(5_000);
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      await big.stop();
    }
  });
});

describe('what the sandbox enforces', () => {
  it("answers a login with BILL's shape and serves the session details", async () => {
    const res = await login();
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      organizationId: sb.credentials.orgId,
      sessionId: expect.any(String) as unknown,
      trusted: false,
      userId: sb.credentials.userId,
    });
    const me = await call('GET', '/v3/login/session', { headers: { devKey: sb.credentials.devKey, sessionId: res.json.sessionId! } });
    expect(me.json).toMatchObject({ organizationId: sb.credentials.orgId, userId: sb.credentials.userId });
    expect((await sb.stats()).sessionsIssued).toContain(res.json.sessionId);
  });

  it('expires a session after 35 idle minutes, not before', async () => {
    const { json } = await login();
    const headers = { devKey: sb.credentials.devKey, sessionId: json.sessionId! };
    clock.advance(34 * 60_000);
    expect((await call('GET', '/v3/login/session', { headers })).status).toBe(200);
    clock.advance(35 * 60_000 + 1);
    const expired = await call('GET', '/v3/login/session', { headers });
    expect(expired.status).toBe(401);
    expect(expired.json[0]).toMatchObject({ code: 'BDC_1109', severity: 'ERROR' });
  });

  it('binds a session to its dev key, and refuses unknown keys and paths with BILL codes', async () => {
    const { json } = await login();
    expect(
      (await call('GET', '/v3/bills', { headers: { devKey: 'another-key-entirely', sessionId: json.sessionId! } })).json[0]!.code,
    ).toBe('BDC_1102');
    sb.sandbox.model.devKeys.set('second-valid-key-0001', { active: true });
    expect(
      (await call('GET', '/v3/bills', { headers: { devKey: 'second-valid-key-0001', sessionId: json.sessionId! } })).json[0]!.code,
    ).toBe('BDC_1109');
    const missing = await call('GET', '/v3/nope', { headers: { devKey: sb.credentials.devKey, sessionId: json.sessionId! } });
    expect(missing.status).toBe(404);
    expect(missing.json[0]!.code).toBe('BDC_1121');
  });

  it('refuses max above the cap and unsortable fields with 400', async () => {
    const { json } = await login();
    const headers = { devKey: sb.credentials.devKey, sessionId: json.sessionId! };
    for (const q of ['max=101', 'max=0', 'sort=vendorName:asc', 'filters=dueDate:sw:2025']) {
      const res = await call('GET', `/v3/bills?${q}`, { headers });
      expect(res.status, q).toBe(400);
      expect(res.json[0]!.code, q).toBeUndefined();
    }
    expect((await call('GET', '/v3/bills?max=100', { headers })).json.results).toHaveLength(
      sb.sandbox.org.bills.size > 100 ? 100 : sb.sandbox.org.bills.size,
    );
  });

  it('counts logins per hour per dev key', async () => {
    expect(BILL_LIMITS.loginsPerHour).toBe(200);
    clock.advance(3_600_000);
    for (let i = 0; i < 4; i++) expect((await login()).status).toBe(200);
    const refused = await login();
    expect(refused.json[0]!.code).toBe('BDC_1144');
    clock.advance(3_600_000);
    expect((await login()).status).toBe(200);
  });

  it('refuses a wrong password with BDC_1101 and a missing field without a code', async () => {
    expect((await login({ password: 'nope-nope' })).json[0]!.code).toBe('BDC_1101');
    const missing = await call('POST', '/v3/login', { body: { username: 'x' } });
    expect(missing.status).toBe(400);
    expect(missing.json[0]!.code).toBeUndefined();
  });

  it('Spend & Expense: apiToken header, max 50 for transactions, `page` silently ignored', async () => {
    const headers = { apiToken: sb.credentials.spendApiToken };
    expect((await call('GET', '/v3/spend/transactions?max=51', { headers })).status).toBe(400);
    const first = await call('GET', '/v3/spend/transactions?max=50', { headers });
    const ignored = await call('GET', `/v3/spend/transactions?max=50&page=${encodeURIComponent(first.json.nextPage!)}`, { headers });
    expect(ignored.json.results!.map((t) => t.id)).toEqual(first.json.results!.map((t) => t.id));
    expect(Buffer.from(first.json.nextPage!, 'base64').toString()).toBe('arrayconnection:50');
    expect(first.json.results![0]!.receipts).toBeUndefined();
    expect((await call('GET', '/v3/spend/transactions', { headers: { apiToken: 'wrong-token' } })).status).toBe(401);
  });

  it('lists the bills waiting on the signed-in user, in approval order', async () => {
    const { json } = await login();
    const res = await call('GET', '/v3/bill-approvals/pending-user-approvals', {
      headers: { devKey: sb.credentials.devKey, sessionId: json.sessionId! },
    });
    const pending = res.json.bills!;
    expect(pending.length).toBeGreaterThan(0);
    const me = sb.credentials.userId;
    for (const b of sb.sandbox.org.bills.all()) {
      const chain = [...(b.approvers ?? [])].sort((x, y) => x.approverOrder - y.approverOrder);
      const mine = chain.find((a) => a.userId === me && a.status === 'WAITING');
      const myTurn =
        !!mine &&
        b.approvalStatus === 'ASSIGNED' &&
        !b.archived &&
        b.paymentStatus !== 'PAID' &&
        chain.filter((a) => a.approverOrder < mine.approverOrder).every((a) => a.status === 'APPROVED');
      expect(
        pending.some((p) => p.billId === b.id),
        b.id,
      ).toBe(myTurn);
    }
  });

  it('signs an approver in with a sync token: their own pending list, 48 idle hours', async () => {
    const priya = sb.sandbox.org.users.all().find((u) => u.firstName === 'Priya')!;
    priya.syncTokens = [{ name: 'priya-approvals', value: 'sync-token-value-0001' }];
    const res = await login({ username: 'priya-approvals', password: 'sync-token-value-0001' });
    expect(res.status).toBe(200);
    expect(res.json.userId).toBe(priya.id);
    const headers = { devKey: sb.credentials.devKey, sessionId: res.json.sessionId! };
    const pending = (await call('GET', '/v3/bill-approvals/pending-user-approvals', { headers })).json.bills;
    expect(pending).toEqual(sb.sandbox.model.pendingApprovals(sb.sandbox.org, priya.id));
    clock.advance(47 * 3_600_000);
    expect((await call('GET', '/v3/login/session', { headers })).status).toBe(200);
    clock.advance(48 * 3_600_000 + 1);
    expect((await call('GET', '/v3/login/session', { headers })).json[0]!.code).toBe('BDC_1109');
  });

  it('adds the configured latency to every BILL call', async () => {
    sb.sandbox.setLatency(60);
    try {
      const started = performance.now();
      await login();
      expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    } finally {
      sb.sandbox.setLatency(0);
    }
  });
});
