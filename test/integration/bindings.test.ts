// Which BILL organisation a team sees: decided by the team's tenant and id, changed only by a billbridge admin.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { checkCard } from '../harness/cards.js';
import { ConnectorStandIn } from '../harness/connector.js';
import {
  channelMessage,
  DEFAULT_USER,
  groupChatMessage,
  installationUpdate,
  personalMessage,
  TENANT,
  teamIds,
} from '../harness/activities.js';
import { startMultiOrgBot, startTwoOrgSandbox } from '../harness/orgs.js';
import type { TestSandbox } from '../harness/sandbox.js';
import { NS } from '../../src/infra/state/types.js';
import type { OrgBinding } from '../../src/bindings/bindings.js';
import { accessPolicy } from '../../src/features/access.js';
import type { ConversationScope } from '../../src/features/types.js';
import { tableRows, textOf } from '../harness/finance.js';

const ADMIN = { id: '29:user-admin', name: 'Avery Admin', aadObjectId: '44444444-0000-4000-8000-0000000000ad' };
const SECOND_TENANT = 'cccccccc-0000-4000-8000-000000000003';

let sandbox: TestSandbox;
let orgA: string;
let orgB: string;
let bot: TestBot;

beforeAll(async () => {
  // Organisation B: a second organisation the same BILL user belongs to, with its own data.
  const orgs = await startTwoOrgSandbox();
  ({ sandbox, orgA, orgB } = orgs);
  bot = await startMultiOrgBot(orgs, ADMIN.aadObjectId, { env: { ALLOWED_TENANT_IDS: `${TENANT},${SECOND_TENANT}` } });
});
afterAll(async () => {
  await bot.close();
  await sandbox.stop();
});

function channelScope(name: string, tenant = TENANT): ConversationScope {
  const ids = teamIds(name);
  return {
    kind: 'channel',
    tenantId: tenant,
    teamId: ids.team,
    aadGroupId: undefined,
    channelId: ids.channel,
    conversationId: ids.channel,
    serviceUrl: bot.connector.url,
  };
}

async function ask(text: string, name: string, from: Partial<typeof ADMIN> = DEFAULT_USER, tenant = TENANT) {
  const ids = teamIds(name);
  const activity = channelMessage(text, { serviceUrl: bot.connector.url, team: ids.team, channel: ids.channel, from, tenant });
  expect((await bot.send(activity)).status).toBe(200);
  const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id);
  const card = ConnectorStandIn.card(reply!);
  expect(checkCard(card).problems).toEqual([]);
  return card;
}

const resolve = (scope: ConversationScope) => bot.app.orgBindings.resolve(scope);

describe('a multi-org deployment (BILL_ALLOWED_ORG_IDS set)', () => {
  it('binds nothing by itself: a new team is welcomed with how to link it, and resolves to no organisation', async () => {
    const ids = teamIds('fresh');
    await bot.send(installationUpdate('add', { serviceUrl: bot.connector.url, name: 'fresh' }));
    const [welcome] = await bot.connector.waitForMessages(1, ids.team);
    const text = JSON.stringify(ConnectorStandIn.card(welcome!));
    expect(text).toContain('not linked to a BILL organisation yet');
    expect(text).toContain('link {BILL organisation id}');
    expect(text).not.toContain(orgA);
    expect(await resolve(channelScope('fresh'))).toBeUndefined();
  });

  it('refuses link from someone who is not a billbridge admin, changes nothing, and records the refusal', async () => {
    const card = await ask(`link ${orgA}`, 'ops');
    expect(JSON.stringify(card)).toContain('Not allowed');
    expect(JSON.stringify(card)).toContain('Only billbridge admins');
    // The allow-list is not shown to non-admins.
    expect(JSON.stringify(card)).not.toContain(orgB);
    expect(await bot.app.state.entries(NS.bindings)).toEqual([]);
    expect(await resolve(channelScope('ops'))).toBeUndefined();
    const audit = readFileSync(join(bot.stateDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(audit).toContainEqual(
      expect.objectContaining({
        kind: 'admin',
        action: 'link',
        result: 'refused',
        aadObjectId: DEFAULT_USER.aadObjectId,
        teamId: teamIds('ops').team,
      }),
    );
  });

  it('lets an admin link a team to an allowed organisation; everyone in that team then uses it', async () => {
    const card = await ask(`link ${orgB.toLowerCase()}`, 'ops', ADMIN);
    expect(JSON.stringify(card)).toContain(`now uses BILL organisation **${orgB}**`);
    expect(await resolve(channelScope('ops'))).toBe(orgB);
    const stored = await bot.app.state.entries<OrgBinding>(NS.bindings);
    expect(stored.map(([, b]) => b)).toEqual([
      expect.objectContaining({ tenantId: TENANT, kind: 'team', targetId: teamIds('ops').team, orgId: orgB, linkedBy: ADMIN.aadObjectId }),
    ]);
    // Any channel of the team resolves the same way (the binding is the team's, not the channel's).
    expect(
      await resolve({
        ...channelScope('ops'),
        channelId: '19:another@thread.tacv2',
        conversationId: '19:another@thread.tacv2;messageid=1',
      }),
    ).toBe(orgB);
  });

  it('refuses an organisation outside the allow-list, and tells the admin which are allowed', async () => {
    const card = await ask('link 00801NOTALLOWED0001', 'ops', ADMIN);
    const text = JSON.stringify(card);
    expect(text).toContain("isn't one this billbridge may use");
    expect(text).toContain(orgA);
    expect(await resolve(channelScope('ops'))).toBe(orgB);
  });

  it('never takes the organisation from what people type, only from the tenant and team of the activity', async () => {
    // Org ids in the text of any command do not move the team.
    await ask(`help ${orgA}`, 'ops');
    expect(await resolve(channelScope('ops'))).toBe(orgB);
    // The same team thread id in another tenant is another team, and is not linked.
    expect(await resolve(channelScope('ops', SECOND_TENANT))).toBeUndefined();
    // Another team of the same tenant is not linked either.
    expect(await resolve(channelScope('payables'))).toBeUndefined();
    // A tampered record stored under the team's key but naming another team is not trusted.
    const [key, binding] = (await bot.app.state.entries<OrgBinding>(NS.bindings))[0]!;
    await bot.app.state.set(NS.bindings, key, { ...binding, targetId: teamIds('payables').team });
    expect(await resolve(channelScope('ops'))).toBeUndefined();
    await bot.app.state.set(NS.bindings, key, binding);
  });

  it('keeps chats apart: a group chat or personal chat is unbound until an admin links that chat', async () => {
    const chat = groupChatMessage('help', { serviceUrl: bot.connector.url, chat: '19:finance-chat@thread.v2' });
    const chatScope: ConversationScope = {
      kind: 'groupChat',
      tenantId: TENANT,
      teamId: undefined,
      aadGroupId: undefined,
      channelId: undefined,
      conversationId: chat.conversation.id,
      serviceUrl: bot.connector.url,
    };
    expect(await resolve(chatScope)).toBeUndefined();
    const dm = personalMessage(`link ${orgA}`, { serviceUrl: bot.connector.url, from: ADMIN });
    await bot.send(dm);
    const [reply] = await bot.connector.waitForMessages(1, dm.conversation.id);
    expect(JSON.stringify(ConnectorStandIn.card(reply!))).toContain('This chat now uses BILL organisation');
    expect(await resolve({ ...chatScope, kind: 'personal', conversationId: dm.conversation.id })).toBe(orgA);
    // Someone else's personal chat is untouched.
    expect(await resolve({ ...chatScope, kind: 'personal', conversationId: 'a:personal-someone-else' })).toBeUndefined();
  });

  it('a link to an organisation later removed from the allow-list stops resolving', async () => {
    const { OrgBindings } = await import('../../src/bindings/bindings.js');
    const narrowed = new OrgBindings({
      config: { ...bot.app.config, bill: { ...bot.app.config.bill, allowedOrgIds: [orgA] } },
      access: accessPolicy(bot.app.config),
      state: bot.app.state,
      clock: bot.app.clock,
      defaultOrgId: orgA,
    });
    expect(await narrowed.describe(channelScope('ops'))).toMatchObject({ state: 'orgNotAllowed', orgId: orgB });
    expect(await narrowed.resolve(channelScope('ops'))).toBeUndefined();
  });

  it('lets an admin unlink the team, after which it resolves to nothing again', async () => {
    const card = await ask('unlink', 'ops', ADMIN);
    expect(JSON.stringify(card)).toContain(`no longer uses BILL organisation **${orgB}**`);
    expect(await resolve(channelScope('ops'))).toBeUndefined();
    const again = await ask('unlink', 'ops', ADMIN);
    expect(JSON.stringify(again)).toContain('Nothing to unlink');
  });
});

describe('two teams bound to two organisations', () => {
  const relabel = (orgId: string, prefix: string): string[] => {
    const bills = sandbox.sandbox.model.org(orgId)!.bills;
    return bills.all().map((b) => {
      const invoiceNumber = `${prefix}-${b.id.slice(-6)}`;
      bills.put({ ...b, invoice: { ...b.invoice, invoiceNumber } });
      return invoiceNumber;
    });
  };
  let numbersA: string[];
  let numbersB: string[];

  beforeAll(async () => {
    // Every bill's invoice number says which organisation it belongs to.
    numbersA = relabel(orgA, 'ORGA');
    numbersB = relabel(orgB, 'ORGB');
    expect(JSON.stringify(await ask(`link ${orgA}`, 'east', ADMIN))).toContain('Linked');
    expect(JSON.stringify(await ask(`link ${orgB}`, 'west', ADMIN))).toContain('Linked');
  });

  it("each team sees only its own organisation's bills", async () => {
    const east = tableRows(await ask('bills due 90', 'east')).map((r) => r[1]!);
    const west = tableRows(await ask('bills due 90', 'west')).map((r) => r[1]!);
    expect(east.length).toBeGreaterThan(0);
    expect(west.length).toBeGreaterThan(0);
    expect(east.every((n) => n.startsWith('ORGA-') && numbersA.includes(n))).toBe(true);
    expect(west.every((n) => n.startsWith('ORGB-') && numbersB.includes(n))).toBe(true);
  });

  it("a team cannot reach the other organisation's bill even by typing its number", async () => {
    const target = numbersB[0]!;
    expect(textOf(await ask(`bill ${target}`, 'east'))).toContain(`No bill with invoice number "${target}"`);
    expect(textOf(await ask(`bill ${target}`, 'west'))).toContain(target);
  });

  it('an unlinked team gets the how-to-link card and BILL is not called', async () => {
    const before = sandbox.sandbox.stats().requests;
    const card = await ask('bills due', 'north');
    expect(textOf(card)).toContain('No BILL organisation linked');
    expect(textOf(card)).toContain('link {BILL organisation id}');
    expect(sandbox.sandbox.stats().requests).toBe(before);
  });
});

describe('a single-org deployment', () => {
  it('binds every team, group chat and personal chat of an allowed tenant to BILL_ORG_ID, and link explains there is nothing to link', async () => {
    const c = sandbox.credentials;
    const single = await startBot({
      env: {
        BILL_BASE_URL: sandbox.baseUrl,
        BILL_DEV_KEY: c.devKey,
        BILL_USERNAME: c.username,
        BILL_PASSWORD: c.password,
        BILL_ORG_ID: orgA,
        ALLOWED_TENANT_IDS: TENANT,
        ADMIN_AAD_OBJECT_IDS: ADMIN.aadObjectId,
      },
    });
    try {
      const r = single.app.orgBindings;
      const base = { aadGroupId: undefined, channelId: undefined, serviceUrl: '' };
      expect(
        await r.resolve({
          ...base,
          kind: 'channel',
          tenantId: TENANT,
          teamId: '19:any@thread.tacv2',
          conversationId: '19:any@thread.tacv2',
        }),
      ).toBe(orgA);
      expect(await r.resolve({ ...base, kind: 'groupChat', tenantId: TENANT, teamId: undefined, conversationId: '19:g@thread.v2' })).toBe(
        orgA,
      );
      expect(await r.resolve({ ...base, kind: 'personal', tenantId: TENANT, teamId: undefined, conversationId: 'a:1' })).toBe(orgA);
      expect(
        await r.resolve({
          ...base,
          kind: 'channel',
          tenantId: SECOND_TENANT,
          teamId: '19:any@thread.tacv2',
          conversationId: '19:any@thread.tacv2',
        }),
      ).toBeUndefined();
      const activity = channelMessage(`link ${orgB}`, { serviceUrl: single.connector.url, from: ADMIN });
      await single.send(activity);
      const [reply] = await single.connector.waitForMessages(1, activity.conversation.id);
      expect(JSON.stringify(ConnectorStandIn.card(reply!))).toContain('Nothing to link');
      expect(await single.app.state.entries(NS.bindings)).toEqual([]);
    } finally {
      await single.close();
    }
  });
});
