// The sandbox's webhook management API and signed event delivery, as BILL documents them.
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Subscription } from '../../src/bill/types.js';
import { BillApiError } from '../../src/errors.js';
import { billClient, startTestSandbox, type TestClient, type TestSandbox } from '../harness/sandbox.js';

interface Received {
  path: string;
  signature: string | undefined;
  raw: string;
  json: WebhookEvent;
}

/** A BILL webhook event as delivered: metadata and the record it is about (the tests assert each field they read). */
interface WebhookEvent {
  metadata: { eventType?: string; eventId?: string; [key: string]: unknown };
  bill?: { paymentStatus?: string; [key: string]: unknown };
  payment?: unknown;
  invoice?: unknown;
}

let sb: TestSandbox;
let c: TestClient;
let receiver: Server;
let hookUrl: string;
const received: Received[] = [];
let answer = 200;
const org = () => c.gateway.org(sb.credentials.orgId);

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      received.push({
        path: req.url ?? '',
        signature: req.headers['x-bill-sha-signature'] as string | undefined,
        raw,
        json: JSON.parse(raw) as WebhookEvent,
      });
      // Two statements: restify, once loaded in the process, replaces writeHead with one that returns nothing.
      res.writeHead(answer);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  sb = await startTestSandbox({ webhooks: { retryDelaysMs: [5, 5] } });
  c = billClient(sb);
});
afterAll(async () => {
  await c.close();
  await sb.stop();
  await new Promise((r) => receiver.close(r));
});

const sign = (raw: string, key: string) => createHmac('sha256', key).update(raw).digest('base64');
async function flush(): Promise<void> {
  await sb.control('POST', '/webhooks/flush');
}
function take(path: string): Received[] {
  const mine = received.filter((r) => r.path === path);
  received.splice(0, received.length, ...received.filter((r) => r.path !== path));
  return mine;
}

describe('subscribing', () => {
  let sub: Subscription;

  it('creates a subscription and shows its security key exactly once', async () => {
    sub = await org().subscriptions.create(
      {
        name: 'AP changes',
        events: [
          { type: 'bill.updated', version: '1' },
          { type: 'payment.updated', version: '1' },
        ],
        notificationUrl: `${hookUrl}/ap`,
      },
      '1b4e28ba-2fa1-4d3b-883f-0016d3cca427',
    );
    expect(sub).toMatchObject({
      name: 'AP changes',
      organizationId: sb.credentials.orgId,
      status: { enabled: true },
      notificationUrl: `${hookUrl}/ap`,
    });
    expect(sub.id).toMatch(/^sub01/);
    expect(sub.securityKey).toMatch(/^[A-Za-z0-9+/=]{40,}$/);
    const again = await org().subscriptions.get(sub.id);
    expect(again.securityKey).toBeUndefined();
    const listed = await org().subscriptions.list().all();
    expect(listed.items.map((s) => s.id)).toContain(sub.id);
    expect(JSON.stringify(listed.items)).not.toContain(sub.securityKey!);
  });

  it('answers a repeated X-Idempotent-Key with the first answer instead of a second subscription', async () => {
    const repeat = await org().subscriptions.create(
      {
        name: 'AP changes',
        events: [
          { type: 'bill.updated', version: '1' },
          { type: 'payment.updated', version: '1' },
        ],
        notificationUrl: `${hookUrl}/ap`,
      },
      '1b4e28ba-2fa1-4d3b-883f-0016d3cca427',
    );
    expect(repeat.id).toBe(sub.id);
    expect((await org().subscriptions.list().all()).items).toHaveLength(1);
  });

  it('a paid bill arrives as signed bill.updated and payment.updated events', async () => {
    const bill = sb.sandbox.org.bills.all().find((b) => b.paymentStatus === 'UNPAID' && !b.archived)!;
    const paid = await sb.control('POST', `/bills/${bill.id}/pay`, {});
    expect(paid.status).toBe(200);
    await flush();
    const events = take('/ap');
    expect(events.map((e) => e.json.metadata.eventType).sort()).toEqual(['bill.updated', 'payment.updated']);
    for (const e of events) {
      expect(e.signature).toBe(sign(e.raw, sub.securityKey!));
      expect(e.json.metadata).toMatchObject({ subscriptionId: sub.id, organizationId: sb.credentials.orgId, version: '1' });
      expect(e.json.metadata.eventId).toMatch(/^[0-9a-f-]{36}$/);
    }
    const billEvent = events.find((e) => e.json.metadata.eventType === 'bill.updated')!;
    expect(billEvent.json.bill).toMatchObject({ id: bill.id, paymentStatus: 'PAID', dueAmount: 0 });
    const paymentEvent = events.find((e) => e.json.metadata.eventType === 'payment.updated')!;
    expect(paymentEvent.json.payment).toMatchObject({ billId: bill.id, vendor: { id: bill.vendorId }, singleStatus: 'PROCESSED' });
    expect((await org().bills.get(bill.id)).paymentStatus).toBe('PAID');
  });

  it('a rotated key signs the next events', async () => {
    const { securityKey } = await org().subscriptions.rotateKey(sub.id);
    expect(securityKey).not.toBe(sub.securityKey);
    const bill = sb.sandbox.org.bills.all().find((b) => b.paymentStatus === 'UNPAID' && !b.archived)!;
    await sb.control('POST', `/bills/${bill.id}/pay`, { schedule: true });
    await flush();
    const events = take('/ap');
    expect(events).toHaveLength(2);
    for (const e of events) expect(e.signature).toBe(sign(e.raw, securityKey));
    expect(events.find((e) => e.json.bill)!.json.bill!.paymentStatus).toBe('SCHEDULED');
  });

  it('invoice changes reach an invoice subscription, and only the types it asked for', async () => {
    const inv = await org().subscriptions.create({
      name: 'AR',
      events: [
        { type: 'invoice.created', version: '1' },
        { type: 'invoice.updated', version: '1' },
      ],
      notificationUrl: `${hookUrl}/ar`,
    });
    const created = await sb.control('POST', '/invoices', { totalAmount: 1200 });
    expect(created.status).toBe(201);
    await sb.control('PATCH', `/invoices/${String(created.json?.id)}`, { payAmount: 200 });
    await sb.control('POST', '/vendors', { name: 'Unwatched Vendor' });
    await flush();
    const events = take('/ar');
    expect(events.map((e) => e.json.metadata.eventType)).toEqual(['invoice.created', 'invoice.updated']);
    expect(events[1]!.json.invoice).toMatchObject({ id: created.json?.id, status: 'PARTIAL_PAYMENT', dueAmount: 1000 });
    expect(events.every((e) => e.signature === sign(e.raw, inv.securityKey!))).toBe(true);
    expect(take('/ap')).toEqual([]);
    const history = await request(`${sb.sandbox.eventsBaseUrl}/v3/events/subscription/${inv.id}`, {
      headers: { devKey: sb.credentials.devKey, sessionId: sb.sandbox.gate.sessions.keys().next().value! },
    });
    const page = JSON.parse(await history.body.text()) as { results: Array<{ type: string; statusCode: number }> };
    expect(page.results.map((n) => [n.type, n.statusCode]).sort()).toEqual([
      ['invoice.created', 200],
      ['invoice.updated', 200],
    ]);
  });

  it('sends a test event on request', async () => {
    const res = (await org().subscriptions.test(sub.id, {
      eventType: 'bill.updated',
      version: '1',
      bill: { id: 'test-bill-id', amount: 100 },
    })) as { statusCode: number; type: string };
    expect(res).toMatchObject({ statusCode: 200, type: 'bill.updated' });
    const [e] = take('/ap');
    expect(e!.json.bill).toEqual({ id: 'test-bill-id', amount: 100 });
  });

  it('turns a subscription off when its endpoint keeps failing, as BILL does after its retries', async () => {
    const failing = await org().subscriptions.create({
      name: 'flaky',
      events: [{ type: 'invoice.updated', version: '1' }],
      notificationUrl: `${hookUrl}/flaky`,
    });
    answer = 500;
    try {
      const inv = sb.sandbox.org.invoices.all().find((i) => i.status === 'OPEN' && !i.archived)!;
      await sb.control('PATCH', `/invoices/${inv.id}`, { dueDate: '2031-01-01' });
      await flush();
    } finally {
      answer = 200;
    }
    expect(take('/flaky')).toHaveLength(3);
    expect((await org().subscriptions.get(failing.id)).status).toEqual({ enabled: false });
    await org().subscriptions.update(failing.id, { status: { enabled: true } });
    expect((await org().subscriptions.get(failing.id)).status).toEqual({ enabled: true });
    await org().subscriptions.remove(failing.id);
  });
});

describe('subscription rules', () => {
  const body = (url: string, type = 'vendor.created') => ({ name: 'x', events: [{ type, version: '1' }], notificationUrl: url });

  it('refuses plain http outside this machine, unknown event types, duplicates and an 11th subscription', async () => {
    const category = async (p: Promise<unknown>) => ((await p.catch((e: unknown) => e)) as BillApiError).category;
    expect(await category(org().subscriptions.create(body('http://hooks.example.com/x')))).toBe('validation');
    expect(await category(org().subscriptions.create(body(`${hookUrl}/y`, 'bill.exploded')))).toBe('validation');
    await org().subscriptions.create(body(`${hookUrl}/dup`));
    expect(await category(org().subscriptions.create(body(`${hookUrl}/dup`)))).toBe('validation');
    const existing = (await org().subscriptions.list().all()).items.length;
    for (let i = existing; i < 10; i++) await org().subscriptions.create(body(`https://hooks.example.com/${i}`));
    expect(await category(org().subscriptions.create(body('https://hooks.example.com/eleven')))).toBe('validation');
  });

  it('refuses a create without an X-Idempotent-Key', async () => {
    await org().whoami();
    const res = await request(`${sb.sandbox.eventsBaseUrl}/v3/subscriptions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        devKey: sb.credentials.devKey,
        sessionId: sb.sandbox.gate.sessions.keys().next().value!,
      },
      body: JSON.stringify(body('https://hooks.example.com/nokey')),
    });
    expect(res.statusCode).toBe(400);
    expect((JSON.parse(await res.body.text()) as Array<{ message?: string }>)[0]?.message).toMatch(/X-Idempotent-Key/);
  });
});
