// A team adds billbridge and removes it again: one welcome, a stored conversation reference, and nothing left behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { checkCard } from '../harness/cards.js';
import { ConnectorStandIn } from '../harness/connector.js';
import {
  BOT,
  botMembership,
  channelMessage,
  DEFAULT_USER,
  installationUpdate,
  OTHER_TENANT,
  personalInstallation,
  personalMessage,
  TENANT,
  teamIds,
} from '../harness/activities.js';
import { NS } from '../../src/infra/state/types.js';
import { targetKey } from '../../src/bindings/bindings.js';
import type { InstallRecord } from '../../src/bindings/installations.js';

let bot: TestBot;

beforeAll(async () => {
  bot = await startBot();
});
afterAll(async () => {
  await bot.close();
});

const teamKey = (name: string, tenant = TENANT) => targetKey({ tenantId: tenant, kind: 'team', targetId: teamIds(name).team });

function cardText(card: unknown): string {
  return JSON.stringify(card);
}

describe('billbridge is added to a team', () => {
  it('posts one welcome in the channel naming the BILL organisation and the most useful commands, and stores the team', async () => {
    const name = 'payables';
    const ids = teamIds(name);
    // Teams sends both events when a bot joins a team; either may come first.
    expect((await bot.send(installationUpdate('add', { serviceUrl: bot.connector.url, name }))).status).toBe(200);
    expect((await bot.send(botMembership('added', { serviceUrl: bot.connector.url, name }))).status).toBe(200);
    const [welcome] = await bot.connector.waitForMessages(1, ids.team);
    const card = ConnectorStandIn.card(welcome!);
    expect(checkCard(card).problems).toEqual([]);
    expect(checkCard(card).bytes).toBeLessThan(40 * 1024);
    expect(cardText(card)).toContain(`billbridge joined ${name}`);

    const scope = { kind: 'channel' as const, tenantId: TENANT, teamId: ids.team, conversationId: ids.team };
    const orgId = await bot.app.orgBindings.resolve(scope);
    expect(orgId, 'single-org deployment binds every team').toBeDefined();
    // The whole team reads the end of the id only; the whole id is for admins (status).
    expect(cardText(card).replace(/\u2060/g, '')).toContain(`BILL organisation **…${orgId!.slice(-4)}**`);
    expect(cardText(card)).not.toContain(orgId!);
    // The three most useful commands about BILL data (help, link and unlink are about the bot).
    const suggested = bot.app.registry
      .forScope('channel')
      .filter((c) => !['help', 'link', 'unlink'].includes(c.name))
      .slice(0, 3);
    expect(suggested).toHaveLength(3);
    for (const c of suggested) expect(cardText(card)).toContain(c.description);
    expect(cardText(card)).toContain('Show all commands');

    const record = await bot.app.state.get<InstallRecord>(NS.conversations, teamKey(name));
    expect(record).toMatchObject({
      tenantId: TENANT,
      kind: 'team',
      targetId: ids.team,
      aadGroupId: ids.aadGroupId,
      name,
      installedBy: DEFAULT_USER.aadObjectId,
    });
    expect(record!.reference).toMatchObject({
      conversation: { id: ids.team },
      serviceUrl: bot.connector.url,
      bot: { id: BOT.id },
      channelId: 'msteams',
    });
    // A proactive send can re-check the binding from the stored record alone.
    const stored = { kind: 'channel', tenantId: record!.tenantId, teamId: record!.targetId, conversationId: record!.targetId } as const;
    expect(await bot.app.orgBindings.resolve(stored)).toBe(orgId);

    // The second event did not welcome again: a later message in the team is the only other thing sent there.
    const res = await bot.say('help', { team: ids.team, channel: ids.team });
    await bot.connector.waitForMessages(1, res.activity.conversation.id);
    expect(bot.connector.messages(ids.team)).toHaveLength(1);
  });

  it('Teams re-sending the install event does not welcome twice', async () => {
    const name = 'resend';
    const ids = teamIds(name);
    const event = installationUpdate('add', { serviceUrl: bot.connector.url, name });
    await bot.send(event);
    await bot.send(event);
    await bot.send(botMembership('added', { serviceUrl: bot.connector.url, name }));
    await bot.connector.waitForMessages(1, ids.team);
    // A personal message after the three events proves they were all processed.
    const marker = personalMessage('help', {
      serviceUrl: bot.connector.url,
      from: { aadObjectId: '22222222-0000-4000-8000-0000000000aa' },
    });
    await bot.send(marker);
    await bot.connector.waitForMessages(1, marker.conversation.id);
    expect(bot.connector.messages(ids.team)).toHaveLength(1);
  });
});

describe('an install event whose selected channel id is not text', () => {
  it('welcomes in the team and stores the channel as text', async () => {
    const name = 'oddchannel';
    const event = installationUpdate('add', { serviceUrl: bot.connector.url, name });
    (event.channelData as { settings: { selectedChannel: { id: unknown } } }).settings.selectedChannel.id = { id: 'x' };
    expect((await bot.send(event)).status).toBe(200);
    await bot.connector.waitForMessages(1, teamIds(name).team);
    const record = await bot.app.state.get<InstallRecord>(NS.conversations, teamKey(name));
    expect(record?.channelId).toBe(teamIds(name).team);
  });
});

describe('a team is renamed', () => {
  it('keeps the new name, bounded, and ignores a name that is not text', async () => {
    const name = 'renamed';
    await bot.send(installationUpdate('add', { serviceUrl: bot.connector.url, name }));
    await bot.connector.waitForMessages(1, teamIds(name).team);
    const renamed = (teamName: unknown) => {
      const event = botMembership('added', { serviceUrl: bot.connector.url, name }) as Record<string, unknown>;
      delete event.membersAdded;
      const channelData = event.channelData as { eventType: string; team: { name: unknown } };
      channelData.eventType = 'teamRenamed';
      channelData.team.name = teamName;
      return event;
    };
    const stored = async () => (await bot.app.state.get<InstallRecord>(NS.conversations, teamKey(name)))?.name;

    expect((await bot.send(renamed('Payables EMEA'))).status).toBe(200);
    expect(await stored()).toBe('Payables EMEA');
    expect((await bot.send(renamed({ toString: 'x' }))).status).toBe(200);
    expect((await bot.send(renamed(['a', 'b']))).status).toBe(200);
    expect(await stored()).toBe('Payables EMEA');
    expect((await bot.send(renamed(`  ${'N'.repeat(100_000)}  `))).status).toBe(200);
    expect(await stored()).toBe('N'.repeat(256));
  });
});

describe('billbridge is removed from a team', () => {
  it("deletes the team's reference, binding and subscriptions, and leaves other teams alone", async () => {
    const name = 'leaving';
    const ids = teamIds(name);
    await bot.send(installationUpdate('add', { serviceUrl: bot.connector.url, name }));
    await bot.connector.waitForMessages(1, ids.team);
    await bot.send(installationUpdate('add', { serviceUrl: bot.connector.url, name: 'staying' }));
    await bot.connector.waitForMessages(1, teamIds('staying').team);
    const { state } = bot.app;
    // What the notifications feature keeps per team: keyed by the team's key, or naming the team in the value.
    await state.set(NS.subscriptions, `${teamKey(name)}|19:channel-a@thread.tacv2|bill.created`, { events: ['bill.created'] });
    await state.set(NS.subscriptions, 'sub-by-value', { tenantId: TENANT, teamId: ids.team, channelId: '19:channel-b@thread.tacv2' });
    await state.set(NS.subscriptions, `${teamKey('staying')}|19:c@thread.tacv2|bill.created`, { events: ['bill.created'] });
    await state.set(NS.bindings, teamKey(name), {
      tenantId: TENANT,
      kind: 'team',
      targetId: ids.team,
      orgId: 'org-x',
      linkedBy: undefined,
      linkedAt: 0,
    });

    await bot.send(installationUpdate('remove', { serviceUrl: bot.connector.url, name }));
    await bot.send(botMembership('removed', { serviceUrl: bot.connector.url, name }));

    const everything = async () =>
      JSON.stringify(await Promise.all([NS.conversations, NS.bindings, NS.subscriptions, NS.digests].map((ns) => state.entries(ns))));
    const left = await everything();
    expect(left).not.toContain(ids.team);
    expect(left).not.toContain(ids.aadGroupId);
    expect(await state.get(NS.conversations, teamKey('staying'))).toBeDefined();
    expect((await state.entries(NS.subscriptions)).map(([k]) => k)).toEqual([`${teamKey('staying')}|19:c@thread.tacv2|bill.created`]);
    // Removal says nothing in the team it left.
    expect(bot.connector.messages(ids.team)).toHaveLength(1);
  });
});

describe('a person installs billbridge for themselves', () => {
  it('gets a welcome in the personal chat, and the chat is forgotten on uninstall', async () => {
    const from = { id: '29:user-ola', name: 'Ola Berg', aadObjectId: '33333333-0000-4000-8000-00000000010a' };
    const add = personalInstallation('add', { serviceUrl: bot.connector.url, from });
    await bot.send(add);
    const [welcome] = await bot.connector.waitForMessages(1, add.conversation.id);
    const card = ConnectorStandIn.card(welcome!);
    expect(checkCard(card).problems).toEqual([]);
    expect(cardText(card)).toContain("Hi, I'm billbridge");
    expect(cardText(card)).toContain('no mention needed');
    const key = targetKey({ tenantId: TENANT, kind: 'chat', targetId: add.conversation.id });
    expect(await bot.app.state.get<InstallRecord>(NS.conversations, key)).toMatchObject({
      kind: 'chat',
      conversationType: 'personal',
      installedBy: from.aadObjectId,
    });

    await bot.send(personalInstallation('remove', { serviceUrl: bot.connector.url, from }));
    expect(await bot.app.state.get(NS.conversations, key)).toBeUndefined();
  });
});

describe('another tenant adds billbridge', () => {
  it('gets a refusal card, nothing is stored and BILL is never called', async () => {
    const guarded = await startBot({ env: { ALLOWED_TENANT_IDS: TENANT } });
    try {
      const name = 'outsiders';
      const ids = teamIds(name);
      await guarded.send(installationUpdate('add', { serviceUrl: guarded.connector.url, name, tenant: OTHER_TENANT }));
      await guarded.send(botMembership('added', { serviceUrl: guarded.connector.url, name, tenant: OTHER_TENANT }));
      const message = channelMessage('bills due', { serviceUrl: guarded.connector.url, team: ids.team, tenant: OTHER_TENANT });
      await guarded.send(message);
      // One refusal for the install (not one per install event) and one for the message.
      const replies = await guarded.connector.waitForMessages(2);
      for (const r of replies) expect(cardText(ConnectorStandIn.card(r))).toContain('not available here');
      expect(replies.map((r) => r.conversationId)).toEqual([ids.team, message.conversation.id]);
      expect(await guarded.app.state.entries(NS.conversations)).toEqual([]);
      expect(await guarded.app.state.entries(NS.bindings)).toEqual([]);
      const stats = guarded.app.sandbox!.stats();
      expect({ logins: stats.logins, requests: stats.requests }).toEqual({ logins: 0, requests: 0 });
      // Its removal event touches nothing either (nothing to touch, and no error).
      expect(
        (await guarded.send(installationUpdate('remove', { serviceUrl: guarded.connector.url, name, tenant: OTHER_TENANT }))).status,
      ).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});
