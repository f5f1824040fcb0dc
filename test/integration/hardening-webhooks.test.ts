// POST /api/bill/webhooks against senders who do not hold a key: what can be refused from the headers is refused
// before the body is read, and what they can make the bot read and parse per second is bounded, while BILL's
// signed events keep being accepted.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, request } from 'node:http';
import { startBot, type TestBot } from '../harness/bot.js';
import { headersOnly } from '../harness/net.js';

const ENV_KEY = randomBytes(32).toString('base64');
/** BILL delivers from 127.0.0.1; attackers from other loopback addresses (Linux routes all of 127/8 locally). */
const BILL_ADDRESS = '127.0.0.1';

let bot: TestBot;
let hook: string;
const agents = new Map<string, Agent>();

beforeAll(async () => {
  bot = await startBot({ env: { BILL_WEBHOOK_SECURITY_KEY: ENV_KEY, LOG_LEVEL: 'info' } });
  hook = `${bot.url}/api/bill/webhooks`;
});
afterAll(async () => {
  for (const agent of agents.values()) agent.destroy();
  await bot.close();
});

const sign = (raw: string | Buffer, key = ENV_KEY) => createHmac('sha256', key).update(raw).digest('base64');
const badSignature = () => randomBytes(32).toString('base64');

function vendorEvent(): string {
  const orgId = bot.app.sandbox!.credentials.orgId;
  return JSON.stringify({
    metadata: {
      eventId: randomUUID(),
      subscriptionId: 'sub-made-in-the-bill-app',
      organizationId: orgId,
      eventType: 'vendor.updated',
      version: '1',
    },
    vendor: { id: '00901VENDOR000000001', name: 'Acme Paper' },
  });
}

/** POSTs from the given source address (one keep-alive agent per address). */
function deliver(from: string, body: string | Buffer, signature: string | undefined, headers: Record<string, string> = {}) {
  let agent = agents.get(from);
  if (!agent) agents.set(from, (agent = new Agent({ keepAlive: true })));
  return new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
    const req = request(hook, {
      method: 'POST',
      agent,
      localAddress: from,
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        ...(signature === undefined ? {} : { 'x-bill-sha-signature': signature }),
        ...headers,
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    // A refusal before the body is read closes the connection while the body is still being written.
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
    req.end(body);
  });
}

/** The answer, or a rejection naming what was still pending after `ms` (a bound on waiting, not a sleep). */
function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** Headers promising `bytes` that never come: only an answer given without reading the body arrives. */
const unsentBody = (from: string, bytes: number, headers: Record<string, string>) =>
  within(
    3_000,
    `a webhook post promising ${bytes} bytes`,
    headersOnly(hook, { 'content-length': String(bytes), ...headers }, { localAddress: from }),
  );

describe('refused from the headers alone, before the body is read', () => {
  it("a correctly signed 600 KB body is refused 413: BILL's events are a few KB", async () => {
    const res = await unsentBody('127.0.0.2', 600 * 1024, { 'content-type': 'application/json', 'x-bill-sha-signature': badSignature() });
    expect(res.status).toBe(413);
    const big = Buffer.concat([Buffer.from('{"metadata":{},"pad":"'), Buffer.alloc(600 * 1024, 0x61), Buffer.from('"}')]);
    expect((await deliver('127.0.0.2', big, sign(big))).status).toBe(413);
  });

  it('a post without a well-formed signature header is refused 401', async () => {
    expect((await unsentBody('127.0.0.2', 100 * 1024, { 'content-type': 'application/json' })).status).toBe(401);
    expect(
      (await unsentBody('127.0.0.2', 100 * 1024, { 'content-type': 'application/json', 'x-bill-sha-signature': 'not-base64!' })).status,
    ).toBe(401);
  });

  it('a form or text post is refused 415', async () => {
    for (const type of ['application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/plain']) {
      expect(
        (await unsentBody('127.0.0.2', 100 * 1024, { 'content-type': type, 'x-bill-sha-signature': badSignature() })).status,
        type,
      ).toBe(415);
    }
  });
});

describe('a body that declares no length', () => {
  it('is refused 413 once it passes 256 KB, and the connection is closed', async () => {
    const big = Buffer.concat([Buffer.from('{"metadata":{},"pad":"'), Buffer.alloc(300 * 1024, 0x61), Buffer.from('"}')]);
    const answer = await within(
      3_000,
      'a chunked webhook post of 300 KB',
      new Promise<{ status: number; connection: unknown }>((resolve, reject) => {
        // No content-length: Node sends the body chunked, so only reading it shows its size.
        const req = request(hook, {
          method: 'POST',
          localAddress: '127.0.0.4',
          headers: { 'content-type': 'application/json', 'x-bill-sha-signature': sign(big) },
        });
        req.on('response', (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
        });
        req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
        for (let at = 0; at < big.length; at += 16 * 1024) req.write(big.subarray(at, at + 16 * 1024));
        req.end();
      }),
    );
    expect(answer).toEqual({ status: 413, connection: 'close' });
    // Said once it was read past the limit: the line declares no length.
    expect(bot.logs.lines.some((l) => l.includes('webhook refused: body too large') && !l.includes('"declared"'))).toBe(true);
  });
});

describe('a sender repeating bad signatures', () => {
  it("from one address gets 429 after its byte budget, without the body being read, while BILL's events are accepted", async () => {
    const attacker = '127.0.0.3';
    const body = JSON.stringify({ metadata: { subscriptionId: 'sub-guess' }, pad: 'x'.repeat(2_000) });
    let refused: Awaited<ReturnType<typeof deliver>> | undefined;
    let sent = 0;
    while (!refused && sent < 600) {
      const res = await deliver(attacker, body, badSignature());
      sent++;
      if (res.status === 429) refused = res;
      else expect(res.status).toBe(401);
      // BILL's events go through all along.
      if (sent % 50 === 0) {
        const event = vendorEvent();
        expect((await deliver(BILL_ADDRESS, event, sign(event))).status).toBe(200);
      }
    }
    expect(refused, `${sent} bad posts and never a 429`).toBeDefined();
    expect(sent).toBeLessThan(400);
    expect(Number(refused!.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Now refused before reading: a post promising 50 KB is answered without them.
    expect(
      (await unsentBody(attacker, 50 * 1024, { 'content-type': 'application/json', 'x-bill-sha-signature': badSignature() })).status,
    ).toBe(429);
    const event = vendorEvent();
    const res = await deliver(BILL_ADDRESS, event, sign(event));
    expect(res.status).toBe(200);
    expect((JSON.parse(res.text) as { status?: string }).status).toBe('accepted');
  });

  it('from many addresses exhausts the shared budget: new senders get 429, BILL (verified lately) is still accepted', async () => {
    const pad = JSON.stringify({ metadata: { subscriptionId: 'sub-guess' }, pad: 'y'.repeat(60 * 1024) });
    const statuses: number[] = [];
    for (let host = 10; host < 30; host++) {
      const from = `127.0.0.${host}`;
      for (let i = 0; i < 20; i++) {
        const { status } = await deliver(from, pad, badSignature());
        statuses.push(status);
        if (status === 429) break;
      }
    }
    expect(new Set(statuses)).toEqual(new Set([401, 429]));
    // Most addresses were refused on their first post: the shared budget, not their own, ran out.
    expect(statuses.filter((s) => s === 401).length).toBeLessThan(60);
    expect(
      (await unsentBody('127.0.0.99', 200 * 1024, { 'content-type': 'application/json', 'x-bill-sha-signature': badSignature() })).status,
    ).toBe(429);
    const event = vendorEvent();
    const res = await deliver(BILL_ADDRESS, event, sign(event));
    expect(res.status).toBe(200);
  });
});
