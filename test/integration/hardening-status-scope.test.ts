// `status` speaks for the team that asks: its Spend & Expense row says whether THIS team's organisation has a token
// (tokens are per organisation), and what only admins should act on (stored secrets SECRETS_KEY cannot open) is shown
// to admins only.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import type { Who } from '../harness/activities.js';
import { askInTeam, startMultiOrgBot, startTwoOrgSandbox, type TwoOrgs } from '../harness/orgs.js';
import { factsOf, textOf } from '../harness/finance.js';
import { registerSecrets } from '../harness/secretScan.js';
import { ManualClock } from '../../src/infra/clock.js';
import { NS } from '../../src/infra/state/types.js';
import { eventKey, outboxKey } from '../../src/notify/receiver.js';
import { TENANT, teamIds } from '../harness/activities.js';

const ADMIN: Required<Who> = { id: '29:user-admin', name: 'Avery Admin', aadObjectId: '44444444-0000-4000-8000-0000000000ad' };
const MEMBER: Required<Who> = { id: '29:user-mo', name: 'Mo Member', aadObjectId: '44444444-0000-4000-8000-00000000000e' };
const clock = new ManualClock(Date.parse('2026-03-02T15:00:00Z'));
const bots: TestBot[] = [];
afterAll(async () => {
  for (const bot of bots) await bot.close();
});

/** `text` typed by `who` in the channel of `team`; resolves with the bot's card. */
async function ask(bot: TestBot, text: string, team: string, who: Who): Promise<unknown> {
  // A manual clock: moving it on keeps the channel's Bot Connector budget open.
  clock.advance(2_000);
  return askInTeam(bot, text, team, who);
}

describe('status in multi-organisation mode', () => {
  let orgs: TwoOrgs;
  let orgA: string;
  let orgB: string;
  beforeAll(async () => {
    orgs = await startTwoOrgSandbox({ clock });
    ({ orgA, orgB } = orgs);
  });
  afterAll(async () => {
    await orgs.sandbox.stop();
  });

  it("with only organisation A's Spend & Expense token, a team linked to B reads that S&E is not configured for its organisation; A's team reads it is", async () => {
    const bot = await startMultiOrgBot(orgs, ADMIN.aadObjectId, {
      clock,
      env: { BILL_SPEND_API_TOKEN: orgs.tokenA, USER_COMMANDS_PER_MINUTE: '10000' },
    });
    bots.push(bot);
    expect(JSON.stringify(await ask(bot, `link ${orgA}`, 'alpha', ADMIN))).toContain('Linked');
    expect(JSON.stringify(await ask(bot, `link ${orgB}`, 'beta', ADMIN))).toContain('Linked');

    for (const who of [ADMIN, MEMBER]) {
      const beta = factsOf(await ask(bot, 'status', 'beta', who));
      expect(beta['Spend & Expense'], `beta, ${who.name}`).toMatch(/^not configured for this organisation/);
      const alpha = factsOf(await ask(bot, 'status', 'alpha', who));
      expect(alpha['Spend & Expense'], `alpha, ${who.name}`).toBe('API token configured');
    }
    // Admins are told where a token goes; a team linked to no organisation has no S&E to speak of.
    expect(factsOf(await ask(bot, 'status', 'beta', ADMIN))['Spend & Expense']).toContain('BILL_SPEND_API_TOKENS');
    const unlinked = factsOf(await ask(bot, 'status', 'gamma', ADMIN));
    expect(unlinked['Spend & Expense']).toBe('no organisation bound here');
  });

  it("a team linked to B reads none of A's queued or undelivered notifications in status; A's team and the admin do", async () => {
    const bot = await startMultiOrgBot(orgs, ADMIN.aadObjectId, { clock, env: { USER_COMMANDS_PER_MINUTE: '10000' } });
    bots.push(bot);
    expect(JSON.stringify(await ask(bot, `link ${orgA}`, 'alpha', ADMIN))).toContain('Linked');
    expect(JSON.stringify(await ask(bot, `link ${orgB}`, 'beta', ADMIN))).toContain('Linked');
    // Organisation A's notifications: one waiting in the outbox (its next try tomorrow), one that could not be delivered.
    const alpha = teamIds('alpha');
    const target = { tenantId: TENANT, teamId: alpha.team, channelId: alpha.channel };
    const state = bot.app.state;
    await state.set(NS.outbox, outboxKey(orgA, 'evt-a-waiting'), {
      v: 1,
      eventId: 'evt-a-waiting',
      type: 'bill.updated',
      orgId: orgA,
      entityType: 'bill',
      entity: { id: '00n01AAAAAAAAAAAAAAA' },
      errors: [],
      receivedAt: clock.now(),
      targets: {
        [`${TENANT}|team|${alpha.team}|${alpha.channel}|bills`]: { state: 'pending', tries: 1, nextAt: clock.now() + 86_400_000 },
      },
    });
    await state.set(
      NS.deadLetters,
      `${eventKey(orgA, 'evt-a-dead')}|${TENANT}|${alpha.team}|${alpha.channel}`,
      {
        eventId: 'evt-a-dead',
        type: 'bill.created',
        orgId: orgA,
        ...target,
        kind: 'bills',
        tries: 6,
        status: 500,
        code: undefined,
        reason: 'x',
        at: clock.now(),
      },
      { ttlMs: 86_400_000 },
    );

    const beta = factsOf(await ask(bot, 'status', 'beta', MEMBER));
    expect(beta.Outbox).toBe('empty');
    expect(beta['Dead letters']).toBe('none');
    const alphaMember = factsOf(await ask(bot, 'status', 'alpha', MEMBER));
    expect(alphaMember.Outbox).toMatch(/^1 events, 1 deliveries waiting/);
    expect(alphaMember['Dead letters']).toBe('1 in the last 30 days, 1 here');
    // A billbridge admin looks after every organisation the deployment serves.
    const betaAdmin = factsOf(await ask(bot, 'status', 'beta', ADMIN));
    expect(betaAdmin.Outbox).toMatch(/^1 events, 1 deliveries waiting/);
    expect(betaAdmin['Dead letters']).toBe('1 in the last 30 days, none here');
  });
});

describe('status when another organisation cannot sign in', () => {
  it("a team linked to A reads A's BILL as reachable while organisation C's sign-in is refused; C's team reads it failing", async () => {
    const orgs = await startTwoOrgSandbox({ clock });
    try {
      // C is allowed here but BILL does not know it: every sign-in to it is refused.
      const orgC = '00801NOSUCHORGANIZAT';
      const bot = await startMultiOrgBot(orgs, ADMIN.aadObjectId, {
        clock,
        env: { BILL_ALLOWED_ORG_IDS: `${orgs.orgA},${orgs.orgB},${orgC}`, USER_COMMANDS_PER_MINUTE: '10000' },
      });
      bots.push(bot);
      expect(JSON.stringify(await ask(bot, `link ${orgs.orgA}`, 'alpha', ADMIN))).toContain('Linked');
      expect(JSON.stringify(await ask(bot, `link ${orgC}`, 'gamma', ADMIN))).toContain('Linked');
      await ask(bot, 'bills overdue', 'alpha', MEMBER);
      await ask(bot, 'bills overdue', 'gamma', MEMBER);
      const gamma = factsOf(await ask(bot, 'status', 'gamma', MEMBER));
      expect(gamma.Connectivity).toMatch(/^failing/);
      for (const who of [MEMBER, ADMIN]) {
        const alpha = await ask(bot, 'status', 'alpha', who);
        expect(factsOf(alpha).Connectivity, who.name).toBe('reachable');
        expect(textOf(alpha), who.name).not.toContain('cannot talk to BILL');
      }
    } finally {
      await orgs.sandbox.stop();
    }
  });
});

describe('status after a restart with a changed SECRETS_KEY', () => {
  const WEBHOOK_KEY = randomBytes(32).toString('base64');
  registerSecrets(() => [WEBHOOK_KEY]);
  const stateDir = mkdtempSync(join(tmpdir(), 'billbridge-status-secrets-'));
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  it('an admin\'s status says "1 stored secret cannot be opened"; a member\'s status does not mention it', async () => {
    const first = await startBot({
      clock,
      stateDir,
      env: { SECRETS_KEY: randomBytes(32).toString('base64'), ADMIN_AAD_OBJECT_IDS: ADMIN.aadObjectId },
    });
    try {
      const orgId = first.app.sandbox!.credentials.orgId;
      await first.app.notify.keys.save({
        subscriptionId: 'sub-status',
        orgId,
        name: 'billbridge',
        notificationUrl: 'https://bot.example.com/api/bill/webhooks',
        events: ['invoice.updated'],
        securityKey: WEBHOOK_KEY,
      });
      // With the key it was sealed under, nothing is said.
      const sealedOk = textOf(await ask(first, 'status', 'finance', ADMIN));
      expect(sealedOk).toContain('billbridge status');
      expect(sealedOk).not.toContain('cannot be opened');
    } finally {
      await first.close();
    }

    const changed = await startBot({
      clock,
      stateDir,
      env: { SECRETS_KEY: randomBytes(32).toString('base64'), ADMIN_AAD_OBJECT_IDS: ADMIN.aadObjectId },
    });
    bots.push(changed);
    const admin = JSON.stringify(await ask(changed, 'status', 'finance', ADMIN));
    expect(admin).toContain('1 stored secret cannot be opened with SECRETS_KEY');
    const member = JSON.stringify(await ask(changed, 'status', 'finance', MEMBER));
    expect(member).toContain('billbridge status');
    expect(member).not.toContain('cannot be opened');
    expect(member).not.toContain('SECRETS_KEY');
  }, 60_000);
});
