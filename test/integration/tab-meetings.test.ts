// Finance meetings: the bot answers commands in a meeting's chat as in a group chat. A meeting in a team's channel uses
// that team's organisation; in single-organisation mode any meeting uses the deployment's; in multi-organisation mode a
// meeting outside a team is bound to nothing until someone links its chat.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOT, DEFAULT_USER, TENANT, teamIds, type Who } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { factsOf, textOf } from '../harness/finance.js';
import { askInTeam, startMultiOrgBot, startTwoOrgSandbox, type TwoOrgs } from '../harness/orgs.js';

const MENTION = `<at>${BOT.name}</at>`;
const ADMIN: Who = { ...DEFAULT_USER };

/** A message in the chat of a meeting scheduled outside any channel, as Teams sends it (a group chat carrying the meeting). */
function chatMeetingMessage(text: string, serviceUrl: string) {
  return {
    type: 'message',
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl,
    from: DEFAULT_USER,
    recipient: BOT,
    conversation: { id: '19:meeting_NmQ5ZjA3YzQtMonthEndClose@thread.v2', conversationType: 'groupChat', isGroup: true, tenantId: TENANT },
    text: `${MENTION} ${text}`,
    entities: [{ type: 'mention', mentioned: BOT, text: MENTION }],
    channelData: { tenant: { id: TENANT }, meeting: { id: 'MCMxOTptZWV0aW5nX05tUTVaakEzWXpRdE1vbnRoRW5kQ2xvc2VAdGhyZWFkLnYyIzA=' } },
    locale: 'en-US',
  };
}

/** A message in the chat of a meeting held in a team's channel: the channel's thread, with the team, channel and meeting. */
function channelMeetingMessage(text: string, serviceUrl: string, team = 'finance', from: Who = DEFAULT_USER) {
  const ids = teamIds(team);
  const post = `${Date.now()}${Math.floor(Math.random() * 1e6)}`;
  return {
    type: 'message',
    id: randomUUID(),
    timestamp: new Date().toISOString(),
    channelId: 'msteams',
    serviceUrl,
    from,
    recipient: BOT,
    conversation: { id: `${ids.channel};messageid=${post}`, conversationType: 'channel', isGroup: true, tenantId: TENANT },
    text: `${MENTION} ${text}`,
    entities: [{ type: 'mention', mentioned: BOT, text: MENTION }],
    channelData: {
      teamsChannelId: ids.channel,
      teamsTeamId: ids.team,
      channel: { id: ids.channel },
      team: { id: ids.team },
      tenant: { id: TENANT },
      meeting: { id: `MCMx${Buffer.from(`${ids.channel}#${post}`).toString('base64')}` },
    },
    locale: 'en-US',
  };
}

async function answer(bot: TestBot, activity: { conversation: { id: string } }) {
  expect((await bot.send(activity)).status).toBe(200);
  const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id);
  return ConnectorStandIn.card(reply!);
}

describe('single-organisation mode', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '1000' } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it("a month-end close meeting's chat asks for bills due and gets the card a channel gets, in the meeting chat", async () => {
    const inChannel = await answer(bot, channelMeetingMessage('bills due', bot.connector.url));
    const meeting = chatMeetingMessage('bills due', bot.connector.url);
    const inMeeting = await answer(bot, meeting);
    expect(factsOf(inMeeting).Due).toBeDefined();
    expect(factsOf(inMeeting).Due).toBe(factsOf(inChannel).Due);
    // The answer went to the meeting's own chat, not anywhere else.
    expect(bot.connector.messages(meeting.conversation.id)).toHaveLength(1);
  });
});

describe('multi-organisation mode', () => {
  let orgs: TwoOrgs;
  let bot: TestBot;
  beforeAll(async () => {
    orgs = await startTwoOrgSandbox();
    bot = await startMultiOrgBot(orgs, ADMIN.aadObjectId!, { env: { USER_COMMANDS_PER_MINUTE: '1000' } });
    expect(JSON.stringify(await askInTeam(bot, `link ${orgs.orgA}`, 'alpha', ADMIN))).toContain('Linked');
    expect(JSON.stringify(await askInTeam(bot, `link ${orgs.orgB}`, 'beta', ADMIN))).toContain('Linked');
  });
  afterAll(async () => {
    await bot.close();
    await orgs.sandbox.stop();
  });

  it("a vendor review held in the beta team's channel answers from beta's organisation, as the channel does", async () => {
    const beta = await askInTeam(bot, 'bills due 90', 'beta', ADMIN);
    const alpha = await askInTeam(bot, 'bills due 90', 'alpha', ADMIN);
    expect(factsOf(beta).Due).not.toBe(factsOf(alpha).Due);
    const inMeeting = await answer(bot, channelMeetingMessage('bills due 90', bot.connector.url, 'beta'));
    expect(factsOf(inMeeting).Due).toBe(factsOf(beta).Due);
  });

  it('a meeting outside any team is bound to no organisation until its chat is linked', async () => {
    const card = await answer(bot, chatMeetingMessage('bills due', bot.connector.url));
    expect(factsOf(card).Due).toBeUndefined();
    expect(textOf(card)).toMatch(/link/i);
  });
});
