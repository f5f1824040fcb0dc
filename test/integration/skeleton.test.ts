// A channel talks to the bot over real HTTP: help, unknown commands, re-deliveries and bad requests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorStandIn } from '../harness/connector.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { checkCard } from '../harness/cards.js';
import { get, post } from '../harness/net.js';
import { request } from 'undici';
import { groupChatMessage, personalMessage } from '../harness/activities.js';
import { usageText } from '../../src/cards/help.js';

let bot: TestBot;

beforeAll(async () => {
  bot = await startBot();
});
afterAll(async () => {
  await bot.close();
});

function cardText(card: unknown): string {
  return JSON.stringify(card);
}

describe('a channel asks for help', () => {
  it('gets the help card in the same thread, listing every registered command', async () => {
    const res = await bot.say('help');
    expect(res.status).toBe(200);
    const conv = res.activity.conversation.id;
    const [reply] = await bot.connector.waitForMessages(1, conv);
    expect(reply!.kind).toBe('reply');
    expect(reply!.activityId).toBe(res.activity.id);
    const card = ConnectorStandIn.card(reply!);
    expect(card.version).toBe('1.5');
    expect(reply!.body?.summary).toMatch(/commands/);
    for (const def of bot.app.registry.list()) {
      expect(cardText(card)).toContain(usageText(def.usage));
    }
    expect(checkCard(card).problems).toEqual([]);
  });

  it('understands Teams HTML, entities, case and trailing punctuation', async () => {
    const res = await bot.say('<p>&nbsp;HELP&nbsp;!</p>');
    const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
    expect(cardText(ConnectorStandIn.card(reply!))).toContain('billbridge commands');
  });
});

describe('a channel types something unknown', () => {
  it('gets the closest command and a pointer to help', async () => {
    const res = await bot.say('hlep');
    const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
    const card = ConnectorStandIn.card(reply!);
    expect(cardText(card)).toContain("didn't understand");
    expect(cardText(card)).toContain('Did you mean **help**');
    expect(checkCard(card).problems).toEqual([]);
  });
});

describe('Teams re-delivers an activity', () => {
  it('answers it once', async () => {
    const first = await bot.say('help');
    const again = await bot.send(first.activity);
    expect(again.status).toBe(200);
    const conv = first.activity.conversation.id;
    await bot.connector.waitForMessages(1, conv);
    // A later message in the same thread proves the duplicate was processed (and dropped) before it.
    const marker = await bot.say('hlep', { threadId: first.activity.id });
    await bot.connector.waitFor((calls) => calls.some((c) => c.activityId === marker.activity.id && c.body?.type === 'message'));
    expect(bot.connector.messages(conv).filter((c) => c.activityId === first.activity.id)).toHaveLength(1);
  });
});

describe('personal and group chats', () => {
  it('answers a personal chat without a mention', async () => {
    const activity = personalMessage('help', { serviceUrl: bot.connector.url });
    expect((await bot.send(activity)).status).toBe(200);
    const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id);
    expect(cardText(ConnectorStandIn.card(reply!))).toContain('billbridge commands');
  });
  it('answers a group chat', async () => {
    const activity = groupChatMessage('help', { serviceUrl: bot.connector.url, chat: '19:group-help@thread.v2' });
    expect((await bot.send(activity)).status).toBe(200);
    await bot.connector.waitForMessages(1, activity.conversation.id);
  });
});

describe('bad requests', () => {
  const messages = () => `${bot.url}/api/messages`;
  it('malformed JSON gets 400', async () => {
    expect((await post(messages(), '{"type": "message",')).status).toBe(400);
  });
  it('an activity without a type gets 400', async () => {
    expect((await post(messages(), { text: 'help' })).status).toBe(400);
  });
  it('a JSON array or scalar gets 400', async () => {
    expect((await post(messages(), [1, 2])).status).toBe(400);
    expect((await post(messages(), '42')).status).toBe(400);
  });
  it('a 1 MB body gets 413', async () => {
    const res = await post(messages(), { type: 'message', text: 'x'.repeat(1024 * 1024) });
    expect(res.status).toBe(413);
  });
  it('GET on /api/messages gets 405', async () => {
    expect((await get(messages())).status).toBe(405);
  });
  it('random bytes get a 4xx', async () => {
    const bytes = Buffer.from(Array.from({ length: 2048 }, (_, i) => (i * 7919) % 256));
    const asJson = await post(messages(), bytes);
    expect(asJson.status).toBeGreaterThanOrEqual(400);
    expect(asJson.status).toBeLessThan(500);
    const res = await request(messages(), { method: 'POST', body: bytes, headers: { 'content-type': 'application/octet-stream' } });
    await res.body.text();
    expect(res.statusCode).toBe(415);
  });
  it('unknown routes get 404', async () => {
    expect((await get(`${bot.url}/nope`)).status).toBe(404);
  });
  it('keeps serving after all of that', async () => {
    expect((await get(`${bot.url}/healthz`)).json).toEqual({ status: 'ok' });
    const res = await bot.say('help');
    await bot.connector.waitForMessages(1, res.activity.conversation.id);
  });
});

describe('health and readiness', () => {
  it('healthz is ok and readyz lists its parts', async () => {
    const ready = await get(`${bot.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.json?.parts).toMatchObject({ state: true });
  });

  it("a load balancer's HEAD /healthz and HEAD /readyz get GET's status and headers without a body, not 405", async () => {
    for (const path of ['/healthz', '/readyz']) {
      const got = await get(`${bot.url}${path}`);
      const head = await request(`${bot.url}${path}`, { method: 'HEAD' });
      expect([path, head.statusCode, await head.body.text()]).toEqual([path, got.status, '']);
      expect(head.headers['content-type']).toBe(got.headers['content-type']);
    }
  });

  it("HEAD on the tab's page and files (a link checker, a proxy) gets GET's status and headers without a body, not 405", async () => {
    for (const path of ['/tab', '/tab?config=1', '/tab/app.js', '/tab/tab.css', '/tab/teams.js']) {
      const got = await get(`${bot.url}${path}`);
      const head = await request(`${bot.url}${path}`, { method: 'HEAD' });
      expect([path, head.statusCode, await head.body.text()]).toEqual([path, got.status, '']);
      for (const header of ['content-type', 'content-security-policy', 'cache-control', 'x-content-type-options'])
        expect(head.headers[header], `${path} ${header}`).toBe(got.headers[header]);
    }
  });
});

describe('with an app id', () => {
  it('a request without a Bot Framework token gets 401 and no reply', async () => {
    const authed = await startBot({
      env: {
        MicrosoftAppId: '3f2504e0-4f89-41d3-9a0c-0305e82c3301',
        MicrosoftAppPassword: 'not-a-real-password',
        MicrosoftAppTenantId: 'aaaaaaaa-0000-4000-8000-000000000001',
        ALLOWED_TENANT_IDS: 'aaaaaaaa-0000-4000-8000-000000000001',
      },
    });
    try {
      const res = await authed.say('help');
      expect(res.status).toBe(401);
      expect(authed.connector.calls).toHaveLength(0);
    } finally {
      await authed.close();
    }
  });
});
