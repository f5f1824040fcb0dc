// The connector HTTP client's limits (per HTTP attempt, priority by send kind, Retry-After), the connector clients kept
// between turns, and grants seen from inside a call.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectorHttpClient, connectorPriority, retryAfterMs, threadOfUrl } from '../../src/teams/connectorLimits.js';
import {
  BotFrameworkAuthentication,
  ConnectorFactory,
  type AuthenticateRequestResult,
  type ClaimsIdentity,
  type ConnectorClient,
  type UserTokenClient,
} from 'botframework-connector';
import { KeepingAuthentication } from '../../src/teams/turnClients.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import type { Limiter, RunOptions, Throttle, Upstream } from '../../src/infra/limits/types.js';
import { LimitExceeded } from '../../src/errors.js';
import { BILL, fakeTimeLimiter, HeldCall } from './limits-helpers.js';

const log = createLogger({ level: 'silent', secrets: new SecretRegistry() });
const headers = (h: Record<string, string>) => ({ get: (name: string) => h[name.toLowerCase()] });

class RecordingLimiter implements Limiter {
  runs: Array<{ upstream: Upstream; opts: RunOptions }> = [];
  throttles: Array<{ upstream: Upstream; throttle: Throttle }> = [];
  run<T>(upstream: Upstream, opts: RunOptions, fn: () => Promise<T>): Promise<T> {
    this.runs.push({ upstream, opts });
    return fn();
  }
  throttled(upstream: Upstream, throttle: Throttle): void {
    this.throttles.push({ upstream, throttle });
  }
  snapshot() {
    return [];
  }
  blockedUntil() {
    return undefined;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

type Client = ReturnType<typeof connectorHttpClient>;
type Request = Parameters<Client['sendRequest']>[0];
type Response = Awaited<ReturnType<Client['sendRequest']>>;

/** A connector HTTP attempt as botbuilder's pipeline hands it over (only what the client reads). */
const request = (url: string) => ({ url, method: 'POST', timeout: 0, headers: { toJson: () => ({}) } }) as unknown as Request;

/** The client with the network replaced by `answer` (a status and headers per attempt). */
function client(limiter: Limiter, answer: () => { status: number; headers?: Record<string, string> }, backoffMs?: number[]) {
  const send = vi.fn(async (req: Request) => {
    const a = answer();
    return { request: req, status: a.status, headers: headers(a.headers ?? {}) } as unknown as Response;
  });
  return { http: connectorHttpClient({ limiter, log, backoffMs, send }), send };
}

const URL = 'https://smba.trafficmanager.net/amer/v3/conversations/19%3Ageneral%40thread.tacv2%3Bmessageid%3D17/activities/17';

describe('the connector HTTP client', () => {
  it('puts each attempt of a reply under its conversation, as a person waiting', async () => {
    const limiter = new RecordingLimiter();
    await client(limiter, () => ({ status: 200 })).http.sendRequest(request(URL));
    expect(limiter.runs).toEqual([
      {
        upstream: { service: 'connector', conversationId: '19:general@thread.tacv2;messageid=17' },
        opts: { priority: 'interactive', maxWaitMs: 60_000 },
      },
    ]);
  });

  it('sends proactive sends as background work, which waits', async () => {
    const limiter = new RecordingLimiter();
    const { http } = client(limiter, () => ({ status: 200 }));
    await connectorPriority.run('background', () =>
      http.sendRequest(request('http://127.0.0.1:3000/v3/conversations/a%3Achat/activities')),
    );
    expect(limiter.runs[0]).toEqual({
      upstream: { service: 'connector', conversationId: 'a:chat' },
      opts: { priority: 'background', maxWaitMs: undefined },
    });
  });

  it('counts a call that names no conversation against the path it addresses (a team look-up against that team)', async () => {
    const limiter = new RecordingLimiter();
    await client(limiter, () => ({ status: 200 })).http.sendRequest(request('https://smba.test/v3/teams/19%3Ateam'));
    expect(limiter.runs.map((r) => (r.upstream.service === 'connector' ? r.upstream.conversationId : r.upstream.service))).toEqual([
      '/v3/teams/19:team',
    ]);
    expect(threadOfUrl('not a url')).toBe('not a url');
  });

  it('on 429 with Retry-After pauses the thread and leaves the retry to botbuilder', async () => {
    const limiter = new RecordingLimiter();
    const { http, send } = client(limiter, () => ({ status: 429, headers: { 'retry-after': '2.5' } }));
    const res = await http.sendRequest(request(URL));
    expect(res.status).toBe(429);
    expect(send).toHaveBeenCalledTimes(1);
    expect(limiter.throttles).toEqual([
      {
        upstream: { service: 'connector', conversationId: '19:general@thread.tacv2;messageid=17' },
        throttle: { kind: 'retryAfter', ms: 2_500 },
      },
    ]);
  });

  it('on 429 without Retry-After backs off and retries itself, a bounded number of times', async () => {
    const limiter = new RecordingLimiter();
    const { http, send } = client(limiter, () => ({ status: 429 }), [10, 20]);
    const res = await http.sendRequest(request(URL));
    expect(res.status).toBe(429);
    expect(send).toHaveBeenCalledTimes(3);
    expect(limiter.throttles.map((t) => t.throttle)).toEqual([
      { kind: 'retryAfter', ms: 10 },
      { kind: 'retryAfter', ms: 20 },
    ]);
  });

  it("leaves other failures alone (403 blocked, 404 gone, 503 without Retry-After is botbuilder's to retry)", async () => {
    const limiter = new RecordingLimiter();
    for (const status of [403, 404, 503])
      expect((await client(limiter, () => ({ status })).http.sendRequest(request(URL))).status).toBe(status);
    expect(limiter.throttles).toEqual([]);
  });
});

describe('connector clients kept between turns', () => {
  /** A botbuilder factory stand-in: a new client per call, counted. */
  class CountingFactory extends ConnectorFactory {
    made = 0;
    override async create(): Promise<ConnectorClient> {
      this.made++;
      return {} as unknown as ConnectorClient;
    }
  }
  const identity = (aud: string) => ({ getClaimValue: (t: string) => (t === 'aud' ? aud : null) }) as unknown as ClaimsIdentity;
  /** botbuilder's authentication stand-in: each request authenticates as `next.aud` with a fresh factory. */
  class FakeAuthentication extends BotFrameworkAuthentication {
    next = { aud: 'app', factory: new CountingFactory() as ConnectorFactory };
    tokenClients = 0;
    override async authenticateRequest(): Promise<AuthenticateRequestResult> {
      return {
        audience: 'https://api.botframework.com',
        callerId: '',
        claimsIdentity: identity(this.next.aud),
        connectorFactory: this.next.factory,
      };
    }
    override authenticateStreamingRequest(): Promise<AuthenticateRequestResult> {
      throw new Error('not used');
    }
    override createConnectorFactory(): ConnectorFactory {
      return new CountingFactory();
    }
    override async createUserTokenClient(): Promise<UserTokenClient> {
      this.tokenClients++;
      return {} as unknown as UserTokenClient;
    }
  }
  const turn = async (auth: KeepingAuthentication, inner: FakeAuthentication, aud: string, factory: ConnectorFactory) => {
    inner.next = { aud, factory };
    return (await auth.authenticateRequest({} as never, '')).connectorFactory!;
  };

  it('hands out one client per app id, service URL and audience, and forgets the least recently used beyond the bound', async () => {
    const inner = new FakeAuthentication();
    const auth = new KeepingAuthentication(inner, 2);
    const factory = new CountingFactory();
    const a1 = await (await turn(auth, inner, 'app-a', factory)).create('https://smba.test/amer/', 'aud');
    const a2 = await (await turn(auth, inner, 'app-a', new CountingFactory())).create('https://smba.test/amer/', 'aud');
    expect(a2).toBe(a1);
    const b = await (await turn(auth, inner, 'app-b', factory)).create('https://smba.test/amer/', 'aud');
    expect(b).not.toBe(a1);
    expect(await (await turn(auth, inner, 'app-a', factory)).create('https://smba.test/emea/', 'aud')).not.toBe(a1);
    expect(factory.made).toBe(3);
    expect(auth.connectorCount).toBe(2);
    // app-a on /amer/ was the least recently used: it is made anew.
    expect(await (await turn(auth, inner, 'app-a', factory)).create('https://smba.test/amer/', 'aud')).not.toBe(a1);
  });

  it('does not keep a client whose creation failed', async () => {
    const inner = new FakeAuthentication();
    const auth = new KeepingAuthentication(inner);
    let fail = true;
    const factory = new (class extends ConnectorFactory {
      override async create(): Promise<ConnectorClient> {
        if (fail) throw new Error('no credentials');
        return {} as unknown as ConnectorClient;
      }
    })();
    await expect((await turn(auth, inner, 'app', factory)).create('https://smba.test/', 'aud')).rejects.toThrow('no credentials');
    fail = false;
    await expect((await turn(auth, inner, 'app', factory)).create('https://smba.test/', 'aud')).resolves.toBeDefined();
  });

  it('keeps one user token client per app id', async () => {
    const inner = new FakeAuthentication();
    const auth = new KeepingAuthentication(inner);
    expect(await auth.createUserTokenClient(identity('app'))).toBe(await auth.createUserTokenClient(identity('app')));
    await auth.createUserTokenClient(identity('other'));
    expect(inner.tokenClients).toBe(2);
  });
});

describe('reading Retry-After', () => {
  it('takes seconds, fractions, HTTP dates and the -ms variants', () => {
    expect(retryAfterMs(headers({ 'retry-after': '1' }))).toBe(1_000);
    expect(retryAfterMs(headers({ 'retry-after': '2.128' }))).toBe(2_128);
    expect(retryAfterMs(headers({ 'retry-after': 'Wed, 21 Oct 2015 07:28:05 GMT' }), Date.parse('2015-10-21T07:28:00Z'))).toBe(5_000);
    expect(retryAfterMs(headers({ 'retry-after-ms': '750' }))).toBe(750);
    expect(retryAfterMs(headers({}))).toBeUndefined();
    expect(retryAfterMs(headers({ 'retry-after': 'soon' }))).toBeUndefined();
  });

  it('counts a connector call against the conversation its URL addresses, else against its path', () => {
    expect(threadOfUrl(URL)).toBe('19:general@thread.tacv2;messageid=17');
    expect(threadOfUrl('http://127.0.0.1:3000/v3/conversations/a%3Achat/activities')).toBe('a:chat');
    expect(threadOfUrl('https://x.test/v3/teams/19%3Ateam')).toBe('/v3/teams/19:team');
  });
});

describe('grants seen from inside a call', () => {
  afterEach(() => vi.useRealTimers());

  it('names the service and budgets inside fn, and nothing outside', async () => {
    vi.useFakeTimers();
    const limiter = fakeTimeLimiter();
    expect(limiter.activeGrant()).toBeUndefined();
    const inside = await limiter.run(BILL, { priority: 'background' }, async () => {
      await Promise.resolve();
      return limiter.activeGrant();
    });
    expect(inside).toMatchObject({ service: 'bill', priority: 'background' });
    expect(inside!.budgets).toEqual([
      expect.stringMatching(/^bill\.concurrency:k[0-9a-f]{12}\/00801/),
      expect.stringMatching(/^bill\.requests:k[0-9a-f]{12}$/),
    ]);
    expect(limiter.activeGrant()).toBeUndefined();
    await limiter.close();
  });

  it('on shutdown refuses waiting calls instead of leaving them hanging', async () => {
    const limiter = fakeTimeLimiter({ LIMIT_BILL_CONCURRENCY: '1' });
    const holder = new HeldCall();
    const running = limiter.run(BILL, { priority: 'background' }, holder.fn);
    const waiting = limiter.run(BILL, { priority: 'background' }, async () => 'never');
    const closed = limiter.close();
    await expect(waiting).rejects.toBeInstanceOf(LimitExceeded);
    holder.finish();
    await running;
    await closed;
    await expect(limiter.run(BILL, { priority: 'interactive' }, async () => 'late')).rejects.toBeInstanceOf(LimitExceeded);
  });
});
