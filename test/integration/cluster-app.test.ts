// The app in cluster mode (REDIS_URL), two instances in this process: a person's command rate and the audit trail are
// the fleet's, /readyz names Redis, and an instance started while Redis is unreachable says so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { get } from '../harness/net.js';
import { TestRedis } from '../harness/redis.js';

let redis: TestRedis;
let connector: ConnectorStandIn;
let a: TestBot;
let b: TestBot;

const DANA = { id: '29:user-dana-cluster', aadObjectId: '11111111-0000-4000-8000-0000000c1a57', name: 'Dana Lee' };

/** Says something (as Dana by default) and returns the reply card as JSON text. */
async function say(bot: TestBot, text: string, from = DANA): Promise<string> {
  const res = await bot.say(text, { from, channel: '19:channel-cluster@thread.tacv2' });
  expect(res.status).toBe(200);
  const [reply] = await connector.waitForMessages(1, res.activity.conversation.id);
  return JSON.stringify(ConnectorStandIn.card(reply!));
}

beforeAll(async () => {
  [redis, connector] = await Promise.all([TestRedis.start(), new ConnectorStandIn().start()]);
  // Sam is a billbridge admin: status shows where the audit trail is to admins only.
  const env = {
    REDIS_URL: redis.url,
    USER_COMMANDS_PER_MINUTE: '3',
    LOG_LEVEL: 'info',
    ADMIN_AAD_OBJECT_IDS: '11111111-0000-4000-8000-000000005a11',
  };
  [a, b] = await Promise.all([startBot({ env, connector }), startBot({ env, connector })]);
});
afterAll(async () => {
  await Promise.all([a.close(), b.close()]);
  await Promise.all([connector.stop(), redis.close()]);
});

describe('two instances on one Redis', () => {
  it("count a person's commands together: the 4th in a minute is refused whichever instance gets it", async () => {
    expect(await say(a, 'help')).toContain('billbridge');
    expect(await say(b, 'help')).toContain('billbridge');
    expect(await say(a, 'help')).toContain('billbridge');
    expect(await say(b, 'help')).toContain('One moment, please');
    expect(await redis.client().keys('billbridge:user-commands*')).toHaveLength(1);
  });

  it('write one audit trail, a Redis stream, and status says where it is', async () => {
    const records = (await redis.client().xrange('billbridge:log:audit', '-', '+')).map(
      ([, fields]) => JSON.parse(fields[1]!) as Record<string, unknown>,
    );
    const mine = records.filter((r) => r.kind === 'command' && r.aadObjectId === DANA.aadObjectId);
    expect(mine.map((r) => [r.command, r.result, r.reason])).toEqual([
      ['help', 'ok', undefined],
      ['help', 'ok', undefined],
      ['help', 'ok', undefined],
      ['help', 'refused', 'LimitExceeded:userRate'],
    ]);
    // Dana is out of commands for this minute; Sam asks.
    const status = await say(a, 'status', { id: '29:user-sam', aadObjectId: '11111111-0000-4000-8000-000000005a11', name: 'Sam Ortiz' });
    // Escaped for Teams markdown (no auto-link, no parentheses as markup): Teams shows the URL and stream as they are.
    const shown = `${redis.url.replace('://', '\\://')} \\(stream "audit"\\)`;
    expect(status).toContain(JSON.stringify(shown).slice(1, -1));
  });

  it('name Redis as a part of readiness', async () => {
    const res = await get(`${a.url}/readyz`);
    expect(res.status).toBe(200);
    expect(res.json?.parts).toMatchObject({ redis: true, state: true });
    expect(a.app.state.kind).toBe('redis');
  });
});

describe('an instance that starts while Redis is unreachable', () => {
  it('answers /readyz 503 naming redis, and says why in one log line', async () => {
    const dead = await startBot({ env: { REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'info' }, connector });
    try {
      const res = await get(`${dead.url}/readyz`);
      expect(res.status).toBe(503);
      expect(res.json?.notReady).toContain('redis');
      const errors = dead.logs.records().filter((r) => r.level === 'error' && String(r.msg).startsWith('Redis'));
      expect(errors.map((r) => r.msg)).toEqual(['Redis at redis://127.0.0.1:1 is unreachable: /readyz reports not ready until it answers']);
    } finally {
      await dead.close();
    }
  });
});
