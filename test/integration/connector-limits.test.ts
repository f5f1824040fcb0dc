// Bot Connector sends under the limiter: a throttled reply still arrives once, after Retry-After, and every
// outbound HTTP request the bot makes starts inside a limiter grant.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { channelMessage, personalMessage } from '../harness/activities.js';
import type { ActiveGrant } from '../../src/infra/limits/types.js';

interface Outbound {
  channel: string;
  origin: string;
  path: string;
  grant: ActiveGrant | undefined;
}

let bot: TestBot;
const outbound: Outbound[] = [];
/** The running bot's current limiter grant; none while it starts (its start-up requests pass the hooks too). */
let activeGrant = (): ActiveGrant | undefined => undefined;

// node:http (botbuilder's connector client, via @azure/core-rest-pipeline) and undici (BILL, Graph).
const onHttp = (message: unknown) => {
  const req = (
    message as {
      request: { host?: string; path: string; getHeader(name: string): string | number | string[] | undefined; protocol?: string };
    }
  ).request;
  const host = String(req.getHeader('host') ?? req.host ?? '');
  outbound.push({ channel: 'http', origin: `${req.protocol ?? 'http:'}//${host}`, path: req.path, grant: activeGrant() });
};
const onUndici = (message: unknown) => {
  const req = (message as { request: { origin: string; path: string } }).request;
  outbound.push({ channel: 'undici', origin: req.origin, path: req.path, grant: activeGrant() });
};

function sameOrigin(a: string, b: string): boolean {
  const x = new URL(a);
  const y = new URL(b);
  const norm = (u: URL) => `${u.hostname === 'localhost' ? '127.0.0.1' : u.hostname}:${u.port}`;
  return norm(x) === norm(y);
}

beforeAll(async () => {
  subscribe('http.client.request.start', onHttp);
  subscribe('undici:request:create', onUndici);
  bot = await startBot();
  activeGrant = () => bot.app.limiter.activeGrant();
});
afterAll(async () => {
  unsubscribe('http.client.request.start', onHttp);
  unsubscribe('undici:request:create', onUndici);
  await bot.close();
});

const THROTTLED = {
  status: 429,
  headers: { 'Retry-After': '1' },
  body: { error: { code: 'Throttled', message: 'Too many requests in this conversation' } },
};

describe('Teams throttles a reply', () => {
  it('still delivers the reply, after the Retry-After second, exactly once', async () => {
    const activity = channelMessage('help', { serviceUrl: bot.connector.url, channel: '19:channel-throttled@thread.tacv2' });
    const conv = activity.conversation.id;
    bot.connector.failSends(1, THROTTLED, conv);
    expect((await bot.send(activity)).status).toBe(200);

    const [reply] = await bot.connector.waitForMessages(1, conv);
    const attempts = bot.connector.calls.filter((c) => c.conversationId === conv && c.kind === 'reply');
    expect(attempts.map((c) => c.status)).toEqual([429, 200]);
    expect(reply!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1_000);
    expect(JSON.stringify(ConnectorStandIn.card(reply!))).toContain('billbridge commands');

    // A later message in the same thread proves nothing else was on its way.
    const marker = channelMessage('hlep', {
      serviceUrl: bot.connector.url,
      channel: '19:channel-throttled@thread.tacv2',
      threadId: activity.id,
    });
    await bot.send(marker);
    await bot.connector.waitFor((calls) => calls.some((c) => c.activityId === marker.id && c.status === 200));
    expect(bot.connector.messages(conv).filter((c) => c.activityId === activity.id)).toHaveLength(1);

    // The limiter learnt the Retry-After: the thread's budget shows the server-side throttle.
    const row = bot.app.limiter.snapshot().find((r) => r.budget === 'connector.thread')!;
    expect(row.lastThrottleKind).toBe('retryAfter');
    expect(row.lastThrottleAt).toBeGreaterThanOrEqual(attempts[0]!.at - 5);
  });

  it('backs off and retries a 429 that names no Retry-After (botbuilder would give up on it)', async () => {
    const activity = personalMessage('help', { serviceUrl: bot.connector.url });
    const conv = activity.conversation.id;
    bot.connector.failSends(1, { status: 429, body: { error: { code: 'Throttled', message: 'slow down' } } }, conv);
    await bot.send(activity);
    const [reply] = await bot.connector.waitForMessages(1, conv);
    const attempts = bot.connector.calls.filter((c) => c.conversationId === conv && c.kind === 'reply');
    expect(attempts.map((c) => c.status)).toEqual([429, 200]);
    expect(reply!.at - attempts[0]!.at).toBeGreaterThanOrEqual(1_000);
    // The help card itself, not an error card sent by the route table after a failed send.
    expect(JSON.stringify(ConnectorStandIn.card(reply!))).toContain('billbridge commands');
  });
});

describe('nothing leaves the bot outside the limiter', () => {
  it('starts every outbound HTTP request inside a limiter grant, and connector requests inside a connector grant', async () => {
    const before = outbound.length;
    const channel = '19:channel-audit@thread.tacv2';
    const turns = [
      channelMessage('help', { serviceUrl: bot.connector.url, channel }),
      channelMessage('status', { serviceUrl: bot.connector.url, channel }),
      channelMessage('hlep', { serviceUrl: bot.connector.url, channel }),
      personalMessage('help', { serviceUrl: bot.connector.url }),
    ];
    await Promise.all(turns.map((a) => bot.send(a)));
    await Promise.all(turns.map((a) => bot.connector.waitForMessages(1, a.conversation.id)));

    const fromBot = outbound.filter((o) => !sameOrigin(o.origin, bot.url));
    const toConnector = fromBot.filter((o) => sameOrigin(o.origin, bot.connector.url));
    // The whole file's traffic counts, including the throttled replies and their retries above.
    expect(outbound.length - before).toBeGreaterThanOrEqual(turns.length);
    expect(toConnector.length).toBeGreaterThanOrEqual(turns.length + 4);
    const outside = fromBot.filter((o) => o.grant === undefined).map((o) => `${o.channel} ${o.origin}${o.path}`);
    expect(outside).toEqual([]);
    expect(toConnector.filter((o) => o.grant!.service !== 'connector')).toEqual([]);
    expect(toConnector.every((o) => o.grant!.budgets.some((b) => b.startsWith('connector.thread:')))).toBe(true);
    // Every turn of this file, in four conversations, went out through the one connector client kept for the
    // connector's service URL, and each reply still reached its own conversation.
    expect(bot.app.adapter.clients.connectorCount).toBe(1);
    for (const a of turns) expect(bot.connector.messages(a.conversation.id).some((c) => c.activityId === a.id)).toBe(true);
  });
});
