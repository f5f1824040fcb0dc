// The connector middleware's policy (per HTTP attempt, priority by turn kind, Retry-After), and grants seen from inside a call.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { conversationOfUrl, connectorLimits, retryAfterMs, threadOfUrl } from '../../src/bot/connectorLimits.js';
import { ConnectorFactory, type AuthenticateRequestResult, type ConnectorClient } from 'botframework-connector';
import type { TurnContext } from 'botbuilder';
import { TurnClients } from '../../src/http/turnClients.js';
import { createLogger, SecretRegistry } from '../../src/log.js';
import type { Limiter, RunOptions, Throttle, Upstream } from '../../src/limits/types.js';
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
  async close() {}
}

interface Policy {
  name: string;
  sendRequest(req: { url: string }, next: (req: { url: string }) => Promise<any>): Promise<any>;
}

/** A turn as the middleware sees it: an activity and a connector client with a pipeline. */
function fakeClient() {
  const policies: Array<{ policy: Policy; options: unknown }> = [];
  return {
    policies,
    client: {
      pipeline: {
        addPolicy: (policy: Policy, options: unknown) => policies.push({ policy, options }),
        getOrderedPolicies: () => policies.map((p) => p.policy),
      },
    },
  };
}

async function turn(activity: Record<string, unknown>, limiter: Limiter, backoffMs?: number[], client = fakeClient()): Promise<Policy> {
  const { policies } = client;
  const key = Symbol('ConnectorClient');
  const context = { activity, adapter: { ConnectorClientKey: key }, turnState: new Map([[key, client]]) };
  const middleware = connectorLimits({ limiter, log, backoffMs });
  await middleware.onTurn(context as unknown as TurnContext, async () => undefined);
  expect(policies).toHaveLength(1);
  expect(policies[0]!.options).toEqual({ afterPhase: 'Retry' });
  return policies[0]!.policy;
}

const URL = 'https://smba.trafficmanager.net/amer/v3/conversations/19%3Ageneral%40thread.tacv2%3Bmessageid%3D17/activities/17';

describe('the connector policy', () => {
  it('puts each attempt of a reply under its conversation, as a person waiting', async () => {
    const limiter = new RecordingLimiter();
    const policy = await turn({ type: 'message', conversation: { id: 'ignored' } }, limiter);
    await policy.sendRequest({ url: URL }, async () => ({ status: 200, headers: headers({}) }));
    expect(limiter.runs).toEqual([
      {
        upstream: { service: 'connector', conversationId: '19:general@thread.tacv2;messageid=17' },
        opts: { priority: 'interactive', maxWaitMs: 60_000 },
      },
    ]);
  });

  it('sends proactive turns (ContinueConversation) as background work, which waits', async () => {
    const limiter = new RecordingLimiter();
    const policy = await turn({ type: 'event', name: 'ContinueConversation', conversation: { id: 'a:chat' } }, limiter);
    await policy.sendRequest({ url: 'https://example.test/v3/teams/19%3Ateam/conversations' }, async () => ({
      status: 200,
      headers: headers({}),
    }));
    expect(limiter.runs[0]).toEqual({
      upstream: { service: 'connector', conversationId: 'a:chat' },
      opts: { priority: 'background', maxWaitMs: undefined },
    });
  });

  it('on 429 with Retry-After pauses the thread and leaves the retry to botbuilder', async () => {
    const limiter = new RecordingLimiter();
    const policy = await turn({ type: 'message', conversation: { id: 'c' } }, limiter);
    const next = vi.fn(async () => ({ status: 429, headers: headers({ 'retry-after': '2.5' }) }));
    const res = await policy.sendRequest({ url: URL }, next);
    expect(res.status).toBe(429);
    expect(next).toHaveBeenCalledTimes(1);
    expect(limiter.throttles).toEqual([
      {
        upstream: { service: 'connector', conversationId: '19:general@thread.tacv2;messageid=17' },
        throttle: { kind: 'retryAfter', ms: 2_500 },
      },
    ]);
  });

  it('on 429 without Retry-After backs off and retries itself, a bounded number of times', async () => {
    const limiter = new RecordingLimiter();
    const policy = await turn({ type: 'message', conversation: { id: 'c' } }, limiter, [10, 20]);
    const next = vi.fn(async () => ({ status: 429, headers: headers({}) }));
    const res = await policy.sendRequest({ url: URL }, next);
    expect(res.status).toBe(429);
    expect(next).toHaveBeenCalledTimes(3);
    expect(limiter.throttles.map((t) => t.throttle)).toEqual([
      { kind: 'retryAfter', ms: 10 },
      { kind: 'retryAfter', ms: 20 },
    ]);
  });

  it("leaves other failures alone (403 blocked, 404 gone, 503 without Retry-After is botbuilder's to retry)", async () => {
    const limiter = new RecordingLimiter();
    const policy = await turn({ type: 'message', conversation: { id: 'c' } }, limiter);
    for (const status of [403, 404, 503])
      expect((await policy.sendRequest({ url: URL }, async () => ({ status, headers: headers({}) }))).status).toBe(status);
    expect(limiter.throttles).toEqual([]);
  });
});

describe('connector clients kept between turns', () => {
  /** A botbuilder factory stand-in: a new fake client per call, counted. */
  class CountingFactory extends ConnectorFactory {
    made = 0;
    override async create(): Promise<ConnectorClient> {
      this.made++;
      return fakeClient() as unknown as ConnectorClient;
    }
  }
  const authResult = (factory: ConnectorFactory, aud: string) =>
    ({
      audience: 'https://api.botframework.com',
      callerId: '',
      claimsIdentity: { getClaimValue: (t: string) => (t === 'aud' ? aud : null) },
      connectorFactory: factory,
    }) as unknown as AuthenticateRequestResult;

  it('hands out one client per app id, service URL and audience, and forgets the least recently used beyond the bound', async () => {
    const clients = new TurnClients(2);
    const factory = new CountingFactory();
    const a1 = await clients.forTurn(authResult(factory, 'app-a')).connectorFactory!.create('https://smba.test/amer/', 'aud');
    const a2 = await clients.forTurn(authResult(new CountingFactory(), 'app-a')).connectorFactory!.create('https://smba.test/amer/', 'aud');
    expect(a2).toBe(a1);
    const b = await clients.forTurn(authResult(factory, 'app-b')).connectorFactory!.create('https://smba.test/amer/', 'aud');
    expect(b).not.toBe(a1);
    expect(await clients.forTurn(authResult(factory, 'app-a')).connectorFactory!.create('https://smba.test/emea/', 'aud')).not.toBe(a1);
    expect(factory.made).toBe(3);
    expect(clients.connectorCount).toBe(2);
    // app-a on /amer/ was the least recently used: it is made anew.
    expect(await clients.forTurn(authResult(factory, 'app-a')).connectorFactory!.create('https://smba.test/amer/', 'aud')).not.toBe(a1);
  });

  it('does not keep a client whose creation failed', async () => {
    const clients = new TurnClients();
    let fail = true;
    const factory = new (class extends ConnectorFactory {
      override async create(): Promise<ConnectorClient> {
        if (fail) throw new Error('no credentials');
        return fakeClient() as unknown as ConnectorClient;
      }
    })();
    await expect(clients.forTurn(authResult(factory, 'app')).connectorFactory!.create('https://smba.test/', 'aud')).rejects.toThrow(
      'no credentials',
    );
    fail = false;
    await expect(clients.forTurn(authResult(factory, 'app')).connectorFactory!.create('https://smba.test/', 'aud')).resolves.toBeDefined();
  });

  it("a kept client counts each call against the thread its URL names, never the first turn's conversation", async () => {
    const limiter = new RecordingLimiter();
    const clients = new TurnClients();
    const kept = (await clients
      .forTurn(authResult(new CountingFactory(), 'app'))
      .connectorFactory!.create('https://smba.test/', 'aud')) as unknown as ReturnType<typeof fakeClient>;
    // Even when the first turn on it looks like a proactive continuation (an inbound activity can say anything).
    const policy = await turn(
      { type: 'event', name: 'ContinueConversation', conversation: { id: 'first-turn' } },
      limiter,
      undefined,
      kept,
    );
    await policy.sendRequest({ url: URL }, async () => ({ status: 200, headers: headers({}) }));
    await policy.sendRequest({ url: 'https://smba.test/v3/teams/19%3Ateam' }, async () => ({ status: 200, headers: headers({}) }));
    expect(limiter.runs.map((r) => (r.upstream.service === 'connector' ? r.upstream.conversationId : r.upstream.service))).toEqual([
      '19:general@thread.tacv2;messageid=17',
      '/v3/teams/19:team',
    ]);
    expect(limiter.runs.every((r) => r.opts.priority === 'interactive')).toBe(true);
    // A second turn on the same client adds no second policy.
    const key = Symbol('ConnectorClient');
    const middleware = connectorLimits({ limiter, log });
    await middleware.onTurn(
      {
        activity: { type: 'message', conversation: { id: 'second' } },
        adapter: { ConnectorClientKey: key },
        turnState: new Map([[key, kept]]),
      } as unknown as TurnContext,
      async () => undefined,
    );
    expect(kept.policies).toHaveLength(1);
    expect(threadOfUrl('not a url')).toBe('not a url');
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

  it('finds the conversation in connector URLs', () => {
    expect(conversationOfUrl(URL)).toBe('19:general@thread.tacv2;messageid=17');
    expect(conversationOfUrl('http://127.0.0.1:3000/v3/conversations/a%3Achat/activities')).toBe('a:chat');
    expect(conversationOfUrl('https://x.test/v3/teams/19%3Ateam')).toBeUndefined();
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
