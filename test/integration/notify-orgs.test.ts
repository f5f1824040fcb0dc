// Several BILL organisations (multi-org mode): an event reaches only the channels of teams bound to its organisation,
// the binding is checked again right before each send, and removing the bot from a team removes what it followed.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { installationUpdate, teamIds } from '../harness/activities.js';
import { post } from '../harness/net.js';
import { askInTeam, startMultiOrgBot, startTwoOrgSandbox } from '../harness/orgs.js';
import type { TestSandbox } from '../harness/sandbox.js';
import { ManualClock } from '../../src/infra/clock.js';
import { NS } from '../../src/infra/state/types.js';
import { RETRY_DELAYS_MS } from '../../src/notify/worker.js';

const ADMIN = { id: '29:user-admin', name: 'Avery Admin', aadObjectId: '44444444-0000-4000-8000-0000000000ad' };
const KEY = randomBytes(32).toString('base64');
// Each organisation's subscription has its own key: a key verifies events of its own organisation only.
const KEY_B = randomBytes(32).toString('base64');
const clock = new ManualClock(Date.parse('2026-03-02T15:00:00Z'));

let sandbox: TestSandbox;
let orgA: string;
let orgB: string;
let bot: TestBot;

beforeAll(async () => {
  const orgs = await startTwoOrgSandbox({ clock });
  ({ sandbox, orgA, orgB } = orgs);
  bot = await startMultiOrgBot(orgs, ADMIN.aadObjectId, {
    clock,
    env: { BILL_WEBHOOK_SECURITY_KEY: KEY, BILL_WEBHOOK_SECURITY_KEYS: `${orgB}:${KEY_B}` },
  });
});
afterAll(async () => {
  await bot.close();
  await sandbox.stop();
});

const ask = async (text: string, team: string): Promise<string> => JSON.stringify(await askInTeam(bot, text, team, ADMIN));

/**
 * A vendor.created event about a vendor BILL (the sandbox) really has in that organisation: cards show BILL's record.
 * The receiver's answer (`accepted`, `duplicate`...) must be `expected`.
 */
async function vendorEvent(orgId: string, name: string, eventId = randomUUID(), expected = 'accepted'): Promise<void> {
  const org = sandbox.sandbox.model.org(orgId)!;
  const vendor = { ...org.vendors.all()[0]!, id: `009${randomUUID().replace(/-/g, '').slice(0, 17)}`, name, billCurrency: 'USD' };
  org.vendors.put(vendor);
  const body = JSON.stringify({
    metadata: { eventId, subscriptionId: 'sub-outside', organizationId: orgId, eventType: 'vendor.created', version: '1' },
    vendor: { id: vendor.id, name, billCurrency: 'USD' },
  });
  const res = await post(`${bot.url}/api/bill/webhooks`, body, {
    'x-bill-sha-signature': createHmac('sha256', orgId === orgB ? KEY_B : KEY)
      .update(body)
      .digest('base64'),
  });
  expect(res.json?.status).toBe(expected);
}

/** Vendor cards posted in a team's channel. */
const cards = (team: string) => bot.connector.messages(teamIds(team).channel).map((c) => JSON.stringify(ConnectorStandIn.card(c)));

describe('events go to the teams bound to their organisation', () => {
  it('each team hears about its own organisation only', async () => {
    expect(await ask(`link ${orgA}`, 'alpha')).toContain('Linked');
    expect(await ask(`link ${orgB}`, 'beta')).toContain('Linked');
    expect(await ask('subscribe vendors', 'alpha')).toContain('Subscribed');
    expect(await ask('subscribe vendors', 'beta')).toContain('Subscribed');
    await vendorEvent(orgA, 'Only For Alpha');
    await vendorEvent(orgB, 'Only For Beta');
    await bot.app.notify.worker.drain();
    expect(cards('alpha')).toEqual([expect.stringContaining('New vendor: Only For Alpha')]);
    expect(cards('beta')).toEqual([expect.stringContaining('New vendor: Only For Beta')]);
  });

  it('a card waiting for a retry is not sent once its team was linked to another organisation', async () => {
    bot.connector.failSends(1, { status: 412, body: { error: { code: 'PreconditionFailed', message: 'busy' } } }, teamIds('alpha').channel);
    await vendorEvent(orgA, 'Before The Relink');
    await bot.app.notify.worker.drain();
    expect(cards('alpha')).toHaveLength(1);
    expect(await ask(`link ${orgB}`, 'alpha')).toContain('now uses BILL organisation');
    clock.advance(RETRY_DELAYS_MS[0]! * 2);
    await bot.app.notify.worker.drain();
    expect(cards('alpha')).toHaveLength(1);
    expect(bot.logs.records().some((r) => r.msg === "channel no longer bound to the event's organisation; not sent")).toBe(true);
    expect((await bot.app.state.entries(NS.outbox)).filter(([key]) => key.startsWith('ev|'))).toEqual([]);
    // Now alpha follows organisation B like beta does.
    await vendorEvent(orgB, 'Both Teams');
    await vendorEvent(orgA, 'Nobody');
    await bot.app.notify.worker.drain();
    expect(cards('alpha').at(-1)).toContain('Both Teams');
    expect(cards('beta').at(-1)).toContain('Both Teams');
    expect([...cards('alpha'), ...cards('beta')].join()).not.toContain('Nobody');
  });

  it('removing the bot from a team removes its subscriptions and digest', async () => {
    expect(await ask('digest daily 09:00', 'alpha')).toContain('Digest scheduled');
    const alpha = teamIds('alpha').team;
    const owned = async () =>
      [
        ...(await bot.app.state.entries<{ teamId?: string }>(NS.subscriptions)),
        ...(await bot.app.state.entries<{ teamId?: string }>(NS.digests)),
      ].filter(([k]) => k.includes(alpha));
    expect((await owned()).length).toBe(2);
    expect((await bot.send(installationUpdate('remove', { serviceUrl: bot.connector.url, name: 'alpha' }))).status).toBe(200);
    expect(await owned()).toEqual([]);
    await vendorEvent(orgB, 'After Alpha Left');
    await bot.app.notify.worker.drain();
    expect(cards('alpha').join()).not.toContain('After Alpha Left');
    expect(cards('beta').at(-1)).toContain('After Alpha Left');
  });
});

describe("event ids are one organisation's own", () => {
  it("an event of one organisation whose id another organisation's event had is delivered, not dropped as a duplicate", async () => {
    expect(await ask(`link ${orgA}`, 'gamma')).toContain('Linked');
    expect(await ask('subscribe vendors', 'gamma')).toContain('Subscribed');
    const shared = randomUUID();
    await vendorEvent(orgA, 'Same Id In Alpha Org', shared);
    await vendorEvent(orgB, 'Same Id In Beta Org', shared);
    await bot.app.notify.worker.drain();
    expect(cards('gamma').at(-1)).toContain('New vendor: Same Id In Alpha Org');
    expect(cards('beta').at(-1)).toContain('New vendor: Same Id In Beta Org');
    // Each organisation's redelivery of its own event is still recognised.
    await vendorEvent(orgA, 'Same Id In Alpha Org', shared, 'duplicate');
    await vendorEvent(orgB, 'Same Id In Beta Org', shared, 'duplicate');
  });
});
