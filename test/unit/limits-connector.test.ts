// The connector HTTP client's limits (per HTTP attempt, priority by send kind, Retry-After), the connector clients kept
// between turns, and grants seen from inside a call.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectorHttpClient, connectorPriority, retryAfterMs, threadOfUrl } from '../../src/teams/connectorLimits.js';
import { ClaimsIdentity, ConnectorClient, MicrosoftAppCredentials, ServiceClientCredentialsFactory } from 'botframework-connector';
import type { Activity } from 'botbuilder';
import { KeepingAuthentication } from '../../src/teams/adapter.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import type { AdmittedCall, Limiter, RunOptions, Throttle, Upstream } from '../../src/infra/limits/types.js';
import { LimitExceeded } from '../../src/errors.js';
import { BILL, fakeTimeLimiter, HeldCall } from './limits-helpers.js';

const log = createLogger({ level: 'silent', secrets: new SecretRegistry() });
const headers = (h: Record<string, string>) => ({ get: (name: string) => h[name.toLowerCase()] });

class RecordingLimiter implements Limiter {
  runs: Array<{ upstream: Upstream; opts: RunOptions }> = [];
  throttles: Array<{ upstream: Upstream; throttle: Throttle }> = [];
  run<T>(upstream: Upstream, opts: RunOptions, fn: (call: AdmittedCall) => Promise<T>): Promise<T> {
    this.runs.push({ upstream, opts });
    return fn({});
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
function client(limiter: Limiter, answer: () => { status: number; headers?: Record<string, string> }) {
  const send = vi.fn(async (req: Request) => {
    const a = answer();
    return { request: req, status: a.status, headers: headers(a.headers ?? {}) } as unknown as Response;
  });
  return { http: connectorHttpClient({ limiter, log, send }), send };
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
    const { http, send } = client(limiter, () => ({ status: 429 }));
    const res = await http.sendRequest(request(URL));
    expect(res.status).toBe(429);
    expect(send).toHaveBeenCalledTimes(4);
    // The pauses are the limiter's to keep (this one only records them): 1 s, 2 s, 4 s, then the 429 goes back.
    expect(limiter.throttles.map((t) => t.throttle)).toEqual([
      { kind: 'retryAfter', ms: 1_000 },
      { kind: 'retryAfter', ms: 2_000 },
      { kind: 'retryAfter', ms: 4_000 },
    ]);
  });

  it("leaves other failures alone (403 blocked, 404 gone, 503 without Retry-After is botbuilder's to retry)", async () => {
    const limiter = new RecordingLimiter();
    for (const status of [403, 404, 503])
      expect((await client(limiter, () => ({ status })).http.sendRequest(request(URL))).status).toBe(status);
    expect(limiter.throttles).toEqual([]);
  });
});

describe('a message larger than Teams accepts', () => {
  /** A reply as botbuilder serialises it: the activity with one Adaptive Card of `chars` characters of text. */
  const reply = (chars: number) =>
    JSON.stringify({
      type: 'message',
      summary: 'Every bill',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: { type: 'AdaptiveCard', version: '1.5', body: [{ type: 'TextBlock', text: 'x'.repeat(chars) }] },
        },
      ],
    });
  const bodyOf = (send: ReturnType<typeof client>['send']) => (send.mock.calls[0]![0] as { body: string }).body;

  it('goes out as a card saying it is too large (100 KB of UTF-16), not as a send Teams refuses with 413 and the person never sees', async () => {
    const { http, send } = client(new RecordingLimiter(), () => ({ status: 200 }));
    await http.sendRequest({ ...request(URL), body: reply(60_000) });
    const body = bodyOf(send);
    expect(body.length * 2).toBeLessThan(100 * 1024);
    expect(body).not.toContain('xxxx');
    expect(JSON.parse(body)).toMatchObject({ type: 'message', summary: expect.stringMatching(/too large for Teams/) as unknown });
  });

  it('a message within the limit goes as it is', async () => {
    const { http, send } = client(new RecordingLimiter(), () => ({ status: 200 }));
    const body = reply(45_000);
    await http.sendRequest({ ...request(URL), body });
    expect(bodyOf(send)).toBe(body);
  });
});

describe('connector clients kept between turns', () => {
  /** Credentials for a bot without an app id (local mode), as botbuilder's own factory gives them, failing while `failing` is set. */
  class Credentials extends ServiceClientCredentialsFactory {
    failing = false;
    override isValidAppId() {
      return Promise.resolve(true);
    }
    override isAuthenticationDisabled() {
      return Promise.resolve(true);
    }
    override createCredentials() {
      return this.failing ? Promise.reject(new Error('no credentials')) : Promise.resolve(MicrosoftAppCredentials.Empty);
    }
  }
  const keeping = (credentials = new Credentials()) =>
    new KeepingAuthentication({ MicrosoftAppId: '', MicrosoftAppType: 'MultiTenant' }, credentials);
  const activity = { type: 'message', channelId: 'msteams', serviceUrl: 'https://smba.test/amer/' } as Activity;
  /** The connector client one inbound turn (authenticated as botbuilder does) gets for `serviceUrl` and `audience`. */
  const clientOfTurn = async (auth: KeepingAuthentication, serviceUrl: string, audience = 'aud') =>
    (await auth.authenticateRequest(activity, '')).connectorFactory!.create(serviceUrl, audience);

  it('hands out one client per service URL and audience, and forgets the least recently used beyond the bound', async () => {
    const auth = keeping();
    const amer = await clientOfTurn(auth, 'https://smba.test/amer/');
    expect(await clientOfTurn(auth, 'https://smba.test/amer/')).toBe(amer);
    expect(await clientOfTurn(auth, 'https://smba.test/amer/', 'other-aud')).not.toBe(amer);
    expect(await clientOfTurn(auth, 'https://smba.test/emea/')).not.toBe(amer);
    expect(auth.connectorCount).toBe(3);
    // 64 more service URLs push the least recently used (amer) out, and the count stays at the bound.
    expect(await clientOfTurn(auth, 'https://smba.test/amer/')).toBe(amer);
    for (let i = 0; i < 64; i++) await clientOfTurn(auth, `https://smba.test/r${i}/`);
    expect(auth.connectorCount).toBe(64);
    expect(await clientOfTurn(auth, 'https://smba.test/amer/')).not.toBe(amer);
  });

  it('does not keep a client whose creation failed', async () => {
    const credentials = new Credentials();
    const auth = keeping(credentials);
    credentials.failing = true;
    await expect(clientOfTurn(auth, 'https://smba.test/')).rejects.toThrow('no credentials');
    credentials.failing = false;
    await expect(clientOfTurn(auth, 'https://smba.test/')).resolves.toBeInstanceOf(ConnectorClient);
  });

  it('keeps one user token client per app id', async () => {
    const auth = keeping();
    const identity = (aud: string) => new ClaimsIdentity([{ type: 'aud', value: aud }], true);
    const app = await auth.createUserTokenClient(identity('app'));
    expect(await auth.createUserTokenClient(identity('app'))).toBe(app);
    expect(await auth.createUserTokenClient(identity('other'))).not.toBe(app);
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
