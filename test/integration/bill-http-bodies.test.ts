// BILL (or a proxy in front of it) answering with a body that never ends or one far too big: the request timeout is
// the whole request's, the body is read up to a cap, and the organisation's slot comes back either way.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billHttp, MAX_BODY_BYTES } from '../../src/bill/http.js';
import { loadConfig } from '../../src/config.js';
import { systemClock, type Clock } from '../../src/infra/clock.js';
import { errorReply } from '../../src/cards/errorCards.js';
import { TURN_DEADLINE_MS, UpstreamCallCounter } from '../../src/infra/upstreamCalls.js';
import { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { LogCapture } from '../harness/logs.js';
import { billFailure } from '../harness/sandbox.js';

const TIMEOUT_MS = 400;
let server: Server;
let baseUrl: string;
const open = new Set<ServerResponse>();
/** Requests to /v3/silent, which are never answered. */
const silent: ServerResponse[] = [];

/** Writes `bytes` of JSON whitespace around an empty object, in 64 KiB chunks. */
function big(res: ServerResponse, status: number, bytes: number): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  let left = bytes - 2;
  const write = () => {
    while (left > 0) {
      const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= part.length;
      if (!res.write(part)) return void res.once('drain', write);
    }
    res.end('{}');
  };
  res.write('');
  write();
}

beforeAll(async () => {
  server = createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    const url = req.url ?? '';
    if (url.startsWith('/connect/v3/trickle')) {
      // A byte every 100 ms: never idle as long as the timeout, never finished.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
    } else if (url.startsWith('/connect/v3/silent'))
      silent.push(res); // never answers: BILL is slow
    else if (url.startsWith('/connect/v3/huge-error')) big(res, 500, MAX_BODY_BYTES + 1024 * 1024);
    else if (url.startsWith('/connect/v3/huge')) big(res, 200, MAX_BODY_BYTES + 1024 * 1024);
    else if (url.startsWith('/connect/v3/two-mb')) big(res, 200, 2 * 1024 * 1024);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/connect`;
});

afterAll(async () => {
  for (const res of open) res.destroy();
  await new Promise((resolve) => server.close(resolve));
});

function client() {
  const logs = new LogCapture();
  const log = createLogger({ level: 'debug', secrets: new SecretRegistry(), destination: logs });
  const limiter = new SharedLimiter({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), clock: systemClock, log });
  const http = billHttp({ limiter, clock: systemClock, log, timeoutMs: TIMEOUT_MS, retry: { baseDelayMs: 10, maxDelayMs: 20 } });
  const get = (path: string, idempotent = false) =>
    http.send<unknown>({
      method: 'GET',
      baseUrl,
      path,
      headers: () => ({}),
      idempotent,
      upstream: { service: 'bill', devKey: 'dev-key', orgId: 'org-1' },
      run: { priority: 'background' },
      route: `GET ${path}`,
    });
  const running = () =>
    limiter
      .snapshot()
      .filter((b) => b.budget === 'bill.concurrency')
      .reduce((n, b) => n + b.running, 0);
  return {
    get,
    running,
    close: async () => {
      await http.close();
      await limiter.close();
    },
  };
}

describe('BILL bodies the client must not wait for or hold in memory', () => {
  it('a body that trickles a byte at a time forever fails at the request timeout and frees the organisation slot', async () => {
    const c = client();
    const started = Date.now();
    const err = await billFailure(c.get('/v3/trickle'));
    expect(err.category).toBe('network');
    expect(err.message).toMatch(/timed out/);
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS * 5);
    expect(c.running()).toBe(0);
    await c.close();
  }, 5_000);

  it('a read that trickles is retried at most twice, each attempt within the timeout', async () => {
    const c = client();
    const started = Date.now();
    expect((await billFailure(c.get('/v3/trickle', true))).category).toBe('network');
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS * 3 + 2_000);
    expect(c.running()).toBe(0);
    await c.close();
  }, 8_000);

  it('a success body over the cap is refused without buffering it all, and not retried', async () => {
    const c = client();
    const err = await billFailure(c.get('/v3/huge', true));
    expect(err.category).toBe('unknown');
    expect(err.message).toMatch(/larger than/);
    expect(c.running()).toBe(0);
    await c.close();
  });

  it('an error body over the cap is refused unread too, not parsed as megabytes of error entries', async () => {
    const c = client();
    const err = await billFailure(c.get('/v3/huge-error'));
    expect(err.category).toBe('unknown');
    expect(err.status).toBe(500);
    await c.close();
  });

  it('a 2 MB answer is read whole', async () => {
    const c = client();
    expect(await c.get('/v3/two-mb')).toEqual({});
    await c.close();
  });
});

describe("a BILL call near the end of a person's turn", () => {
  /** The app clock, which a test can move forward (real time goes on underneath, as the request timers use it). */
  class SkewedClock implements Clock {
    skew = 0;
    now(): number {
      return Date.now() + this.skew;
    }
  }

  function turnClient(timeoutMs: number) {
    const clock = new SkewedClock();
    const turns = new UpstreamCallCounter(clock);
    const log = createLogger({ level: 'silent', secrets: new SecretRegistry() });
    const limiter = new SharedLimiter({ config: loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent' }), clock, log, turns });
    const http = billHttp({ limiter, clock, log, timeoutMs, retry: { baseDelayMs: 10, maxDelayMs: 20 } });
    const get = () =>
      http.send<unknown>({
        method: 'GET',
        baseUrl,
        path: '/v3/silent',
        headers: () => ({}),
        idempotent: true,
        upstream: { service: 'bill', devKey: 'dev-key', orgId: 'org-1' },
        run: { priority: 'interactive' },
        route: 'GET /v3/silent',
      });
    const running = () =>
      limiter
        .snapshot()
        .filter((b) => b.budget === 'bill.concurrency')
        .reduce((n, b) => n + b.running, 0);
    return { clock, turns, get, running, close: () => Promise.all([http.close(), limiter.close()]) };
  }

  it('admitted 400 ms before the turn deadline, ends at the deadline (not after BILL_TIMEOUT_MS), frees its slot and says "try again"', async () => {
    const c = turnClient(5_000);
    const asked = silent.length;
    const started = Date.now();
    const err = await billFailure(
      c.turns.run(() => {
        c.clock.skew = TURN_DEADLINE_MS - 400;
        return c.get();
      }),
    );
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(err.category).toBe('network');
    expect(silent.length - asked).toBe(1); // no retry once the turn has no time left
    expect(c.running()).toBe(0);
    const card = JSON.stringify(errorReply(err, { correlationId: 'ref-1', retryCommand: 'bills' }));
    expect(card).toContain("BILL didn't answer as expected");
    expect(card).toContain('Try again');
    await c.close();
  }, 10_000);

  it('outside a turn (a background refresh) keeps its own timeout', async () => {
    const c = turnClient(800);
    const asked = silent.length;
    const started = Date.now();
    expect((await billFailure(c.get())).category).toBe('network');
    // Three attempts (two retries), each given its 800 ms (undici's own timers are coarse: allow a little less).
    expect(silent.length - asked).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3 * 600);
    expect(c.running()).toBe(0);
    await c.close();
  }, 10_000);
});
