// The BILL payment network from Teams, end to end: the real bot over HTTP, the embedded BILL sandbox (with its
// network) and the connector stand-in. A channel searches the network; vendor and customer cards say where a party
// stands and offer an invitation, which goes to BILL only as a linked person with a role BILL trusts with vendors;
// BILL's vendor.updated then refreshes the org's mirror and tells the subscribed channel.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startBot, type TestBot } from '../harness/bot.js';
import { DEFAULT_USER, channelMessage, executeInvoke, personalMessage, type Who } from '../harness/activities.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { sandboxControlOk } from '../harness/sandbox.js';
import { registerSecrets } from '../harness/secretScan.js';
import { buttons, expectValidCard, factsOf, tableRows, textOf } from '../harness/finance.js';
import { APPROVAL_VERBS, CONNECT_INPUTS } from '../../src/features/approvals/cards.js';
import { NETWORK_INVITE_VERB } from '../../src/features/network/cards.js';

const WEBHOOK_KEY = randomBytes(32).toString('base64');
const DANA: Required<Who> = DEFAULT_USER;
const TOM: Required<Who> = { id: '29:user-tom', name: 'Tom Becker', aadObjectId: '44444444-0000-4000-8000-0000000000c3' };
const PRIYA: Required<Who> = { id: '29:user-priya', name: 'Priya Raman', aadObjectId: '22222222-0000-4000-8000-0000000000a1' };
const VENDORS_CHANNEL = '19:channel-vendors@thread.tacv2';

let bot: TestBot;
const tokens: string[] = [];

type Card = Record<string, unknown>;
const sandbox = () => bot.app.sandbox!;
const invitationWrites = () =>
  sandbox()
    .requests()
    .filter((r) => r.route.startsWith('POST /v3/network/invitation')).length;
const networkReads = () =>
  sandbox()
    .requests()
    .filter((r) => r.route === 'GET /v3/network').length;

/** "@billbridge <text>" in the finance channel: the reply card and the activity (a click's base). */
async function inChannel(text: string, who: Who = DANA): Promise<{ card: Card; base: ReturnType<typeof channelMessage> }> {
  const activity = channelMessage(text, { serviceUrl: bot.connector.url, from: who });
  const before = bot.connector.messages(activity.conversation.id).length;
  await bot.send(activity);
  const msgs = await bot.connector.waitForMessages(before + 1, activity.conversation.id);
  const card = ConnectorStandIn.card(msgs[before]!) as Card;
  expectValidCard(card);
  return { card, base: activity };
}

async function click(
  base: ReturnType<typeof channelMessage> | ReturnType<typeof personalMessage>,
  data: Record<string, unknown>,
  who: Who,
) {
  const res = await bot.send(executeInvoke(data, base, { from: who, replyToId: 'card-1' }));
  expect(res.status).toBe(200);
  const card = res.json?.value as Card;
  expectValidCard(card);
  return card;
}

const inviteButton = (card: Card) => buttons(card).find((b) => b.data.verb === NETWORK_INVITE_VERB);

/** The person makes a sync token in BILL and links it in their personal chat through the connect card. */
async function link(who: Required<Who>, firstName: string): Promise<void> {
  const user = sandbox()
    .org.users.all()
    .find((u) => u.firstName === firstName)!;
  const token = await sandboxControlOk(sandbox().url, 'POST', `/users/${user.id}/sync-tokens`, {});
  const name = String(token?.name);
  const value = String(token?.value);
  tokens.push(value);
  const done = await click(
    personalMessage('', { serviceUrl: bot.connector.url, from: who }),
    { verb: APPROVAL_VERBS.connect, [CONNECT_INPUTS.tokenName]: name, [CONNECT_INPUTS.tokenValue]: value },
    who,
  );
  expect(textOf(done)).toContain('Connected to BILL');
}

/** A sandbox vendor or customer by name, its network state set to "not connected". */
function notConnected(kind: 'vendor' | 'customer', name: string): { id: string } {
  const org = sandbox().org;
  if (kind === 'vendor') {
    const v = org.vendors.all().find((x) => x.name === name)!;
    v.networkStatus = 'NOT_CONNECTED';
    v.archived = false;
    org.vendors.put(v);
    return v;
  }
  const c = org.customers.all().find((x) => x.name === name)!;
  c.archived = false;
  org.customers.put(c);
  org.networkConnections.delete(`customer:${c.id}`);
  return c;
}

beforeAll(async () => {
  bot = await startBot({ env: { SECRETS_KEY: randomBytes(32).toString('base64'), BILL_WEBHOOK_SECURITY_KEY: WEBHOOK_KEY } });
  registerSecrets(() => tokens);
  notConnected('vendor', 'Northwind Traders');
  notConnected('vendor', 'Acme Office Supplies');
  notConnected('customer', 'Contoso Ltd');
  await link(DANA, 'Dana'); // ADMINISTRATOR
  await link(TOM, 'Tom'); // CLERK: a MEMBER in BILL's roles
  const sub = await bot.say('subscribe vendors', { channel: VENDORS_CHANNEL });
  await bot.connector.waitForMessages(1, sub.activity.conversation.id);
});
afterAll(async () => {
  await bot.close();
});

describe('searching the BILL network', () => {
  it('lists the businesses named Acme in the BILL network and RPPS with their network ids, and says which is already a vendor', async () => {
    const { card } = await inChannel('network Acme');
    const rows = tableRows(card);
    const byName = new Map(rows.map((r) => [r[0]!.replace(/ \(.*\)$/, ''), r]));
    expect([...byName.keys()].sort()).toEqual(['Acme Office Supplies', 'Acme Water Utility', 'Acme Widgets LLC']);
    const office = sandbox()
      .model.network.all()
      .find((b) => b.name === 'Acme Office Supplies')!;
    expect(byName.get('Acme Office Supplies')).toEqual([
      expect.stringContaining('Acme Office Supplies'),
      'BILL',
      office.id,
      'Vendor · not connected',
    ]);
    expect(byName.get('Acme Water Utility')?.slice(1, 2)).toEqual(['RPPS']);
    expect(byName.get('Acme Water Utility')?.[2]).toMatch(/^0rv/);
    expect(byName.get('Acme Widgets LLC')?.[3]).toBe('—');
    expect(factsOf(card)['Already your vendors or customers']).toBe('1');
    // The one that is a vendor and not connected can be invited from here.
    expect(inviteButton(card)?.title).toBe('Invite Acme Office Supplies');
  });

  it('refuses an empty, a too long or a marked-up name with a helpful card and sends nothing to BILL', async () => {
    const before = networkReads();
    for (const [typed, heading] of [
      ['network', 'Which business?'],
      [`network ${'a'.repeat(120)}`, 'That name is too long'],
      ['network **Acme**', "I can't search the network for"],
      ['network [Acme](https://evil.example)', "I can't search the network for"],
      ['network ab', 'Type at least 3 letters'],
    ] as const) {
      const { card } = await inChannel(typed);
      expect(textOf(card)).toContain(heading);
    }
    expect(networkReads()).toBe(before);
  });

  it('escapes what BILL calls a business: a name with markdown in it is shown as typed, not as a link', async () => {
    sandbox().model.network.put({
      id: '00801markdownbiz00',
      name: 'Acme [click](https://evil.example) **Bold**',
      scope: 'BILL',
      autoConnect: true,
      zipOrPostalCode: '10001',
      city: 'New York',
      stateOrProvince: 'NY',
    });
    const { card } = await inChannel('network Bold');
    const json = JSON.stringify(card);
    expect(json).not.toContain('[click](https://evil.example)');
    expect(tableRows(card)[0]?.[0]).toContain('Acme [click](https://evil.example) **Bold**');
  });
});

describe('inviting a vendor to the BILL network', () => {
  let base: ReturnType<typeof channelMessage>;
  let data: Record<string, unknown>;

  beforeAll(async () => {
    const got = await inChannel('vendor Northwind Traders');
    base = got.base;
    expect(factsOf(got.card)['BILL network']).toBe('not connected');
    const b = inviteButton(got.card);
    expect(b?.title).toBe('Invite to the BILL network');
    data = b!.data;
  });

  it('is refused for a person who has not linked BILL, who is told how to; nothing is written', async () => {
    const before = invitationWrites();
    const card = await click(base, data, PRIYA);
    expect(textOf(card)).toContain('Connect your BILL account first');
    expect(textOf(card)).toContain('connect');
    expect(invitationWrites()).toBe(before);
    expect(
      sandbox()
        .org.vendors.all()
        .find((v) => v.name === 'Northwind Traders')?.networkStatus,
    ).toBe('NOT_CONNECTED');
  });

  it("is refused for a linked person whose BILL role can't manage vendors; nothing is written", async () => {
    const before = invitationWrites();
    const card = await click(base, data, TOM);
    expect(textOf(card)).toContain("Your BILL role can't send network invitations");
    expect(invitationWrites()).toBe(before);
  });

  it('refuses forged button data (another vendor, another network id) without calling BILL', async () => {
    const before = sandbox().requests().length;
    const other = sandbox()
      .org.vendors.all()
      .find((v) => v.name === 'Acme Office Supplies')!;
    for (const forged of [
      { ...data, id: other.id },
      { ...data, net: '00801somebodyelse' },
      { ...data, sig: 'x'.repeat(43) },
    ]) {
      const card = await click(base, forged, DANA);
      expect(textOf(card)).toContain("This button can't be used");
    }
    expect(sandbox().requests().length).toBe(before);
  });

  it('sends the connection request as the linked administrator: BILL records a pending request and the card says so', async () => {
    const before = invitationWrites();
    const card = await click(base, data, DANA);
    expect(textOf(card)).toContain('Northwind Traders invited to the BILL network');
    expect(factsOf(card)['BILL network']).toBe('invited, waiting for them to accept');
    expect(invitationWrites()).toBe(before + 1);
    const vendor = sandbox()
      .org.vendors.all()
      .find((v) => v.name === 'Northwind Traders')!;
    expect(vendor.networkStatus).toBe('PENDING');
    const business = sandbox()
      .model.network.all()
      .find((b) => b.name === 'Northwind Traders')!;
    expect(sandbox().org.networkConnections.get(`vendor:${vendor.id}`)?.networkId).toBe(business.id);
    // The vendor card now says so and offers no second invitation.
    const again = await inChannel('vendor Northwind Traders');
    expect(factsOf(again.card)['BILL network']).toBe('invited, waiting for them to accept');
    expect(inviteButton(again.card)).toBeUndefined();
  });

  it("BILL's vendor.updated when the vendor accepts refreshes the mirror and tells the channel subscribed to vendors", async () => {
    const vendor = sandbox()
      .org.vendors.all()
      .find((v) => v.name === 'Northwind Traders')!;
    // What the invitation left in the org's mirror (read as held, nothing re-read).
    const held = await bot.app.mirror.rows(sandbox().credentials.orgId, 'vendor', {
      waitMs: 5_000,
      confirm: false,
      where: (v) => v.id === vendor.id,
    });
    expect('rows' in held && held.rows[0]?.networkStatus).toBe('PENDING');
    await sandboxControlOk(sandbox().url, 'POST', `/network/vendor/${vendor.id}/accept`);
    const isNotice = (c: { kind: string; conversationId?: string }) =>
      (c.kind === 'send' || c.kind === 'reply') && !!c.conversationId?.startsWith(VENDORS_CHANNEL);
    const before = bot.connector.calls.filter(isNotice).length;
    const body = JSON.stringify({
      metadata: {
        eventId: randomUUID(),
        subscriptionId: 'sub-made-in-the-bill-app',
        organizationId: sandbox().credentials.orgId,
        eventType: 'vendor.updated',
        version: '1',
      },
      vendor: { ...sandbox().org.vendors.get(vendor.id) },
    });
    const res = await request(`${bot.url}/api/bill/webhooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-bill-sha-signature': createHmac('sha256', WEBHOOK_KEY).update(body).digest('base64'),
      },
      body,
    });
    await res.body.dump();
    expect(res.statusCode).toBeLessThan(300);
    const note = await bot.connector.waitFor((calls) => calls.filter(isNotice)[before]);
    const card = ConnectorStandIn.card(note) as Card;
    expect(textOf(card)).toContain('Northwind Traders');
    expect(factsOf(card)['BILL network']).toBe('connected');
    // The webhook marked the vendor stale: the mirror reads it again before answering, and holds what BILL now says.
    const rows = await bot.app.mirror.rows(sandbox().credentials.orgId, 'vendor', { waitMs: 5_000, where: (v) => v.id === vendor.id });
    expect('rows' in rows && rows.rows[0]?.networkStatus).toBe('CONNECTED');
  });
});

describe('a double click on Invite', () => {
  it('two clicks at the same moment (a double click, two devices) send one invitation; the other click is told it is on its way', async () => {
    const { card, base } = await inChannel('vendor Acme Office Supplies');
    const b = inviteButton(card)!;
    const before = invitationWrites();
    // Each BILL call takes 100 ms, so the second click arrives while the first is still at BILL.
    await sandboxControlOk(sandbox().url, 'POST', '/latency', { ms: 100 });
    const cards = await Promise.all([click(base, b.data, DANA), click(base, b.data, DANA)]).finally(() =>
      sandboxControlOk(sandbox().url, 'POST', '/latency', { ms: 0 }),
    );
    expect(invitationWrites()).toBe(before + 1);
    expect(cards.filter((c) => textOf(c).includes('invited to the BILL network'))).toHaveLength(1);
    expect(cards.filter((c) => textOf(c).includes('already on its way to BILL'))).toHaveLength(1);
    // Once it is on its way, a later click finds the vendor invited and sends nothing either.
    const later = await click(base, b.data, DANA);
    expect(textOf(later)).toContain('is already on the BILL network');
    expect(invitationWrites()).toBe(before + 1);
  });
});

describe('inviting a customer to the BILL network', () => {
  it('connects a customer that is in the network, as the linked person, and their card then says so', async () => {
    // BILL's customers carry no network status: the card makes no call for it, and Invite checks it in BILL.
    const calls = sandbox().requests().length;
    const { card, base } = await inChannel('customer Contoso Ltd');
    expect(factsOf(card)['BILL network']).toBe('not checked (Invite checks it in BILL)');
    expect(
      sandbox()
        .requests()
        .slice(calls)
        .filter((r) => r.route.includes('/v3/network')),
    ).toEqual([]);
    const b = inviteButton(card)!;
    const done = await click(base, b.data, DANA);
    expect(factsOf(done)['BILL network']).toBe('connected');
    const customer = sandbox()
      .org.customers.all()
      .find((c) => c.name === 'Contoso Ltd')!;
    expect(sandbox().org.networkConnections.get(`customer:${customer.id}`)?.status).toBe('CONNECTED');
    const again = await inChannel('customer Contoso Ltd');
    expect(factsOf(again.card)['BILL network']).toBe('connected');
  });
});
