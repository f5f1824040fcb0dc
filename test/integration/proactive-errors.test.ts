// A proactive turn's failure comes back to its caller whatever the adapter does with a turn's error: with an
// onTurnError set, botbuilder hands the error to it instead of throwing, and a refused roster call or send must still
// read as refused (not as "a member", not as "sent").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { botFrameworkSender, teamRoster } from '../../src/teams/proactive.js';
import type { CardMessages } from '../../src/teams/cardMessages.js';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { startBot, type TestBot } from '../harness/bot.js';

const TEAM = '19:finance@thread.tacv2';
const DANA = '00000000-0000-0000-0000-0000000000d1';
const ERIN = '00000000-0000-0000-0000-0000000000e1';

let bot: TestBot;
beforeAll(async () => {
  bot = await startBot();
  bot.app.adapter.onTurnError = async () => undefined;
});
afterAll(() => bot.close());

const reference = () => ({ serviceUrl: bot.connector.url, channelId: 'msteams', conversation: { id: TEAM } });

describe('a proactive turn the connector refuses, on an adapter with an onTurnError', () => {
  it('the roster check reads someone the team does not list as not a member', async () => {
    bot.connector.rosters.set(TEAM, new Set([DANA]));
    const isMember = teamRoster(bot.app.adapter, bot.app.config.bot.appId, systemClock);
    expect(await isMember(reference(), TEAM, ERIN)).toBe(false);
    expect(await isMember(reference(), TEAM, DANA)).toBe(true);
  });

  it('a notification send is reported failed, with the status and code the worker decides on', async () => {
    bot.connector.failSends(
      1,
      { status: 403, body: { error: { code: 'BotNotInConversationRoster', message: 'Not in the roster.' } } },
      TEAM,
    );
    const posted: unknown[] = [];
    const cardMessages = { posted: async (...args: unknown[]) => void posted.push(args) } as unknown as CardMessages;
    const log = createLogger({ level: 'silent', secrets: new SecretRegistry() });
    const sender = botFrameworkSender(bot.app.adapter, bot.app.config.bot.appId, log, cardMessages);
    const card = { type: 'AdaptiveCard', version: '1.5', body: [] };
    const outcome = await sender.send(reference(), { card, summary: 'Bill paid' });
    expect(outcome).toMatchObject({ ok: false, status: 403, code: 'BotNotInConversationRoster' });
    expect(posted).toEqual([]);
  });
});
