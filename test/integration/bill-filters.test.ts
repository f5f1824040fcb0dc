// Searching vendors by what a person typed: BILL gets a filter that means exactly that, or nothing is sent at all.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BillFilter } from '../../src/bill/filters.js';
import { BillApiError, FilterValueError } from '../../src/errors.js';
import { billClient, startTestSandbox, type TestClient, type TestSandbox } from '../harness/sandbox.js';

let sb: TestSandbox;
let c: TestClient;
const org = () => c.gateway.org(sb.credentials.orgId);
const LONG = 'Long Name Holdings ' + 'x'.repeat(481);
const HOSTILE = ['a",b:c', 'Comma, Colon: and More', 'Ünïcødé Straße 株式会社 🚀', LONG];

beforeAll(async () => {
  sb = await startTestSandbox();
  c = billClient(sb);
  for (const name of HOSTILE) expect((await sb.control('POST', '/vendors', { name })).status).toBe(201);
  // Decoys: a filter that was split or cut would match these.
  for (const name of ['a', 'Comma', 'Colon', 'Long Name Holdings', 'Ünïcødé']) await sb.control('POST', '/vendors', { name });
});
afterAll(async () => {
  await c.close();
  await sb.stop();
});

async function rawGet(path: string, query: Record<string, string>): Promise<{ status: number; json: unknown }> {
  await org().whoami();
  const sessionId = sb.sandbox.gate.sessions.keys().next().value!;
  const qs = new URLSearchParams(query).toString();
  const res = await request(`${sb.baseUrl}${path}?${qs}`, { headers: { devKey: sb.credentials.devKey, sessionId } });
  return { status: res.statusCode, json: JSON.parse(await res.body.text()) };
}

describe('filters built by the client are accepted by BILL', () => {
  it('every documented bill filter works together', async () => {
    const vendor = sb.sandbox.org.bills.all()[0]!.vendorId;
    const f = new BillFilter()
      .add('createdTime', 'gte', new Date(Date.now() - 5 * 365 * 86_400_000).toISOString())
      .add('paymentStatus', 'in', ['UNPAID', 'SCHEDULED', 'PAID']);
    const { items } = await org()
      .bills.list({
        vendorId: [vendor],
        archived: false,
        dueDate: { gt: '2000-01-01' },
        filter: f,
      })
      .all();
    const expected = sb.sandbox.org.bills.all().filter((b) => b.vendorId === vendor && !b.archived);
    expect(items.map((b) => b.id).sort()).toEqual(expected.map((b) => b.id).sort());
  });

  it('a name prefix with a comma is quoted and finds only that vendor', async () => {
    const { items } = await org().vendors.list({ nameStartsWith: 'Smith, Barney' }).all();
    expect(items.map((v) => v.name)).toEqual(['Smith, Barney & Co']);
  });

  it('customers can be searched the same way', async () => {
    const { items } = await org().customers.list({ nameStartsWith: 'Litware,' }).all();
    expect(items.map((v) => v.name)).toEqual(['Litware, Inc.']);
  });
});

describe('hostile vendor names', () => {
  it('a name with a double quote, a comma and a colon is refused before anything is sent', async () => {
    const before = (await sb.stats()).requestsByPath['GET /v3/vendors'] ?? 0;
    expect(() => org().vendors.list({ nameStartsWith: 'a",b:c' })).toThrow(FilterValueError);
    expect(() => org().vendors.list({ filter: new BillFilter().add('name', 'eq', 'x",archived:eq:true') })).toThrow(FilterValueError);
    expect((await sb.stats()).requestsByPath['GET /v3/vendors'] ?? 0).toBe(before);
  });

  it.each(HOSTILE.slice(1).map((n) => [n.length > 60 ? `${n.slice(0, 30)}… (${n.length} chars)` : n, n]))(
    '"%s" is quoted safely and matches only itself',
    async (_label, name) => {
      const exact = await org()
        .vendors.list({ filter: new BillFilter().add('name', 'eq', name) })
        .all();
      expect(exact.items.map((v) => v.name)).toEqual([name]);
      const prefix = await org().vendors.list({ nameStartsWith: name }).all();
      expect(prefix.items.map((v) => v.name)).toEqual([name]);
    },
  );

  it('a name longer than 500 characters is refused, not cut', () => {
    expect(() => org().vendors.list({ nameStartsWith: LONG + 'y' })).toThrow(/longer than 500/);
  });

  it('BILL itself refuses a filter that would be reinterpreted, instead of guessing', async () => {
    for (const filters of ['name:sw:a",b:c', 'name:sw:a:b', 'name:sw:"unterminated', 'name:sw:x,', 'name:like:x']) {
      const res = await rawGet('/v3/vendors', { filters });
      expect(res.status, filters).toBe(400);
      expect(Array.isArray(res.json)).toBe(true);
    }
  });

  it('BILL refuses filters on fields it does not document as filterable', async () => {
    const res = await rawGet('/v3/invoices', { filters: 'status:eq:OPEN' });
    expect(res.status).toBe(400);
    const [first] = res.json as Array<{ message?: string }>;
    expect(first?.message).toMatch(/not filterable/);
    const err = await org()
      .invoices.list({ filter: new BillFilter().add('status', 'eq', 'OPEN') })
      .all()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BillApiError);
    expect((err as BillApiError).category).toBe('validation');
  });
});

describe('hostile record ids', () => {
  it('an id that would add a path segment or a query is refused before anything is sent, naming its kind', async () => {
    const before = (await sb.stats()).requests;
    const refusal = (send: () => Promise<unknown>) =>
      Promise.resolve()
        .then(send)
        .catch((e: unknown) => e);
    const cases: Array<[string, () => Promise<unknown>]> = [
      ['bill id', () => org().bills.get('../vendors')],
      ['invoice id', () => org().invoices.get('00e1?archived=true')],
      ['subscription id', () => org().subscriptions.remove('sub/../../x')],
      ['vendor id', () => org().network.inviteByEmail('009 1', 'ap@example.com')],
      ['customer id', () => org().network.status('customer', '')],
    ];
    for (const [field, send] of cases) {
      const err = await refusal(send);
      expect(err, field).toBeInstanceOf(FilterValueError);
      expect((err as FilterValueError).field).toBe(field);
    }
    expect((await sb.stats()).requests).toBe(before);
  });
});
