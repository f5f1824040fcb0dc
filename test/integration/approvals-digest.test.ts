// The approvers' daily digest with a fake clock: a personal message at the chosen time in BOT_TIMEZONE with the bills
// waiting for that person (read in their own BILL session), once per day, and nothing on days nothing waits.
// Also: without SECRETS_KEY approvals are off from startup, and say so.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { APPROVAL_VERBS, CONNECT_INPUTS } from '../../src/features/approvals/cards.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { executeInvoke, personalMessage, type Who } from '../harness/activities.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { checkCard, type CardJson } from '../harness/cards.js';
import { registerSecrets } from '../harness/secretScan.js';

const PRIYA: Required<Who> = { id: '29:user-priya', name: 'Priya Raman', aadObjectId: '22222222-0000-4000-8000-0000000000a1' };
const MARCUS: Required<Who> = { id: '29:user-marcus', name: 'Marcus Lee', aadObjectId: '33333333-0000-4000-8000-0000000000b2' };
// Monday 23 November 2026, 07:00 UTC = 08:00 in Berlin.
const MONDAY_0800_BERLIN = Date.UTC(2026, 10, 23, 7, 0);
const MIN = 60_000;

const clock = new ManualClock(MONDAY_0800_BERLIN);
let bot: TestBot;
const tokens: string[] = [];
const dm = (who: Who) => `a:personal-${who.aadObjectId}`;

type Card = CardJson;
const textsOf = (card: Card): string[] => {
  const out: string[] = [];
  const walk = (n: unknown) => {
    if (!n || typeof n !== 'object') return;
    if (Array.isArray(n)) {
      n.forEach(walk);
      return;
    }
    const node = n as Card;
    if (node.type === 'TextBlock') out.push(String(node.text).replace(/\\(.)/g, '$1'));
    Object.values(node).forEach(walk);
  };
  walk(card.body);
  return out;
};

async function say(b: TestBot, who: Who, text: string): Promise<Card> {
  const before = b.connector.messages(dm(who)).length;
  await b.send(personalMessage(text, { serviceUrl: b.connector.url, from: who }));
  const msgs = await b.connector.waitForMessages(before + 1, dm(who));
  return ConnectorStandIn.card(msgs[before]!);
}

async function link(who: Required<Who>, firstName: string): Promise<string> {
  const org = bot.app.sandbox!.org;
  const user = org.users.all().find((u) => u.firstName === firstName)!;
  const name = `${firstName.toLowerCase()}-teams`;
  const value = randomBytes(24).toString('base64url');
  user.syncTokens = [{ name, value }];
  org.users.put(user);
  tokens.push(value);
  const res = await bot.send(
    executeInvoke(
      { verb: APPROVAL_VERBS.connect, [CONNECT_INPUTS.tokenName]: name, [CONNECT_INPUTS.tokenValue]: value },
      personalMessage('', { serviceUrl: bot.connector.url, from: who }),
      { replyToId: 'connect-card' },
    ),
  );
  expect(textsOf(res.json?.value as Card)[0]).toBe('Connected to BILL');
  return user.id;
}

/** Leaves exactly `billIds` waiting on this user (a one-person chain each); every other bill waits on someone else. */
function waitingOn(userId: string, billIds: string[]): void {
  const org = bot.app.sandbox!.org;
  for (const b of org.bills.all()) {
    const mine = billIds.includes(b.id);
    if (!mine && !b.approvers?.some((a) => a.userId === userId)) continue;
    b.approvers = mine ? [{ userId, status: 'WAITING', approverOrder: 1 }] : b.approvers!.filter((a) => a.userId !== userId);
    b.approvalStatus = mine ? 'ASSIGNED' : b.approvers.length ? b.approvalStatus : 'UNASSIGNED';
    org.bills.put(b);
  }
}

const digestsTo = (who: Who) => bot.connector.messages(dm(who)).filter((m) => (m.body?.summary ?? '').startsWith('Approvals digest'));

beforeAll(async () => {
  bot = await startBot({ clock, env: { SECRETS_KEY: randomBytes(32).toString('hex'), BOT_TIMEZONE: 'Europe/Berlin' } });
  registerSecrets(() => tokens);
});
afterAll(async () => {
  await bot.close();
});

describe('the approvals digest', () => {
  let priyaId: string;
  let bills: string[];

  beforeAll(async () => {
    priyaId = await link(PRIYA, 'Priya');
    await link(MARCUS, 'Marcus');
    bills = bot.app
      .sandbox!.org.bills.all()
      .filter((b) => !b.archived && b.paymentStatus === 'UNPAID')
      .slice(0, 2)
      .map((b) => b.id);
    waitingOn(priyaId, bills);
  });

  it('is set per person in their personal chat, in BOT_TIMEZONE', async () => {
    const card = await say(bot, PRIYA, 'approvals digest daily 8:30');
    expect(checkCard(card).problems).toEqual([]);
    expect(textsOf(card)[0]).toBe('Approvals digest set');
    expect(textsOf(card).join(' ')).toContain('Every day at **08:30** (Europe/Berlin)');
    expect(textsOf(card).join(' ')).toContain('Nov 23, 2026');
    const wrong = await say(bot, PRIYA, 'approvals digest daily teatime');
    expect(textsOf(wrong)[0]).toContain("can't read");
  });

  it('sends nothing before the time, then one personal message with the bills waiting, once', async () => {
    clock.set(MONDAY_0800_BERLIN + 29 * MIN);
    expect(await bot.app.approvalDigest.tick()).toEqual({ sent: 0, empty: 0, failed: 0 });
    expect(digestsTo(PRIYA)).toHaveLength(0);

    clock.set(MONDAY_0800_BERLIN + 31 * MIN);
    expect(await bot.app.approvalDigest.tick()).toEqual({ sent: 1, empty: 0, failed: 0 });
    const [digest] = await bot.connector.waitFor(() => (digestsTo(PRIYA).length === 1 ? digestsTo(PRIYA) : undefined));
    const card = ConnectorStandIn.card(digest!);
    expect(checkCard(card).problems).toEqual([]);
    expect(textsOf(card)[0]).toBe('Waiting for your approval');
    // Both waiting bills, each with the approver's own buttons (a personal chat needs no user-specific view).
    const buttons = JSON.stringify(card);
    for (const id of bills) expect(buttons).toContain(`"bill":"${id}"`);
    expect(card.refresh).toBeUndefined();

    clock.advance(5 * MIN);
    expect((await bot.app.approvalDigest.tick()).sent).toBe(0);
    expect(digestsTo(PRIYA)).toHaveLength(1);
    // Marcus never asked for one.
    expect(digestsTo(MARCUS)).toHaveLength(0);
  });

  it('lets the digest card be used to approve, as the approver', async () => {
    const card = ConnectorStandIn.card(digestsTo(PRIYA)[0]!);
    const approve = (card.body ?? [])
      .flatMap((c) => c.items ?? [])
      .flatMap((i) => (i.type === 'ActionSet' ? (i.actions ?? []) : []))
      .find((a) => a.verb === APPROVAL_VERBS.approve);
    expect(approve?.data).toBeDefined();
    const res = await bot.send(
      executeInvoke(approve!.data!, personalMessage('', { serviceUrl: bot.connector.url, from: PRIYA }), {
        replyToId: digestsTo(PRIYA)[0]!.body?.id ?? 'digest',
      }),
    );
    expect(textsOf(res.json?.value as Card).some((t) => t.startsWith('Approved by Priya Raman at'))).toBe(true);
    expect(bot.app.sandbox!.org.approvalDecisions.at(-1)).toMatchObject({
      billId: approve!.data!.bill,
      userId: priyaId,
      action: 'APPROVE',
    });
  });

  it('sends nothing on a day nothing waits', async () => {
    waitingOn(priyaId, []);
    clock.set(MONDAY_0800_BERLIN + 24 * 60 * MIN + 31 * MIN);
    expect(await bot.app.approvalDigest.tick()).toEqual({ sent: 0, empty: 1, failed: 0 });
    expect(digestsTo(PRIYA)).toHaveLength(1);
  });

  it('skips a slot missed by more than the catch-up window (the bot was down)', async () => {
    waitingOn(priyaId, bills.slice(1));
    clock.set(MONDAY_0800_BERLIN + 2 * 24 * 60 * MIN + 30 * MIN + 3 * 60 * MIN);
    expect(await bot.app.approvalDigest.tick()).toEqual({ sent: 0, empty: 0, failed: 0 });
  });

  it('stops when turned off', async () => {
    const card = await say(bot, PRIYA, 'approvals digest off');
    expect(textsOf(card)[0]).toBe('Approvals digest off');
    clock.set(MONDAY_0800_BERLIN + 3 * 24 * 60 * MIN + 31 * MIN);
    expect(await bot.app.approvalDigest.tick()).toEqual({ sent: 0, empty: 0, failed: 0 });
  });
});

describe('without SECRETS_KEY', () => {
  it('starts with approvals off, says so, and collects nothing', async () => {
    const plain = await startBot({ connector: bot.connector });
    try {
      expect(plain.app.approvals).toBeUndefined();
      expect(plain.logs.text()).toContain('approvals are off: SECRETS_KEY is not set');
      for (const command of ['connect', 'approvals', 'approvals digest daily 08:00']) {
        const card = await say(plain, PRIYA, command);
        expect(textsOf(card)[0], command).toBe('Approvals are off');
        expect(JSON.stringify(card)).not.toContain('Input.Text');
      }
      expect(await plain.app.approvalDigest.tick()).toEqual({ sent: 0, empty: 0, failed: 0 });
    } finally {
      await plain.close();
    }
  });
});
