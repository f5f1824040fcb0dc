// `spend` (card transactions missing receipts, pending reimbursements, budget use) and `status` in a channel.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { spendCommand } from '../../src/features/spend/commands.js';
import type { CommandContext } from '../../src/features/types.js';
import { DEFAULT_USER } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { allRows, ask, buttons, channelScope, expectValidCard, factsOf, money, textOf, total } from '../harness/finance.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
let bot: TestBot;

beforeAll(async () => {
  // The status test reads what admins see (hosts, paths, ids): the default test user is an admin here.
  bot = await startBot({
    clock: new ManualClock(NOW),
    env: { USER_COMMANDS_PER_MINUTE: '10000', ADMIN_AAD_OBJECT_IDS: DEFAULT_USER.aadObjectId },
  });
});
afterAll(async () => {
  await bot.close();
});

const spend = () => bot.app.sandbox!.org.spend;
const date = (iso: string) => new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' }).format(new Date(iso));

describe('spend', () => {
  it('transactions: every card transaction of the last 30 days, newest first, missing receipts flagged and counted', async () => {
    const from = Date.parse('2026-02-08T00:00:00.000Z');
    const expected = spend()
      .transactions.all()
      .filter((t) => Date.parse(t.occurredTime) >= from)
      .sort((a, b) => b.occurredTime.localeCompare(a.occurredTime) || a.id.localeCompare(b.id));
    const spent = expected.filter((t) => t.transactionType !== 'DECLINE');
    const missing = spent.filter((t) => t.receiptStatus === 'MISSING' || (t.receiptRequired && t.receiptStatus !== 'ATTACHED'));
    expect(missing.length).toBeGreaterThan(0);
    const { rows, first } = await allRows(bot.app, 'spend transactions');
    expectValidCard(first.reply.card);
    expect(rows.map((r) => [r[0], r[1], r.at(-1)])).toEqual(expected.map((t) => [date(t.occurredTime), t.merchantName, money(t.amount)]));
    expect(rows.filter((r) => r[3] === 'Missing')).toHaveLength(missing.length);
    const f = factsOf(first.reply.card);
    expect(f.Spent).toBe(`${money(total(spent.map((t) => t.amount)))} · ${spent.length} transactions`);
    expect(f['Missing receipts']).toBe(
      `${missing.length} transaction${missing.length === 1 ? '' : 's'} · ${money(total(missing.map((t) => t.amount)))}`,
    );
  });

  it('reimbursements: every one not yet paid, oldest first, with the total', async () => {
    const expected = spend()
      .reimbursements.all()
      .filter((r) => r.status !== 'PAID' && r.status !== 'ARCHIVED')
      .sort((a, b) => a.submittedTime!.localeCompare(b.submittedTime!) || a.id.localeCompare(b.id));
    const { rows, first } = await allRows(bot.app, 'spend reimbursements');
    expectValidCard(first.reply.card);
    expect(rows.map((r) => r.at(-1))).toEqual(expected.map((r) => money(r.amount)));
    expect(factsOf(first.reply.card).Pending).toBe(`${money(total(expected.map((r) => r.amount)))} · ${expected.length} reimbursements`);
  });

  it("budgets: each active budget's spend of its limit this period, most used first", async () => {
    const expected = spend()
      .budgets.all()
      .filter((b) => !b.retired)
      .map((b) => ({ b, ratio: b.currentPeriod!.spent!.total / b.currentPeriod!.limit! }))
      .sort((x, y) => y.ratio - x.ratio);
    const { rows, first } = await allRows(bot.app, 'spend budgets');
    expectValidCard(first.reply.card);
    expect(rows.map((r) => [r[0], r.at(-1), r[1]])).toEqual(
      expected.map(({ b }) => [b.name, money(b.currentPeriod!.spent!.total), money(b.currentPeriod!.limit!)]),
    );
    expect(rows.map((r) => r[0])).not.toContain('Sales 2023 (retired)');
  });

  it('spend alone sums up all three, with a button for each list', async () => {
    const r = await ask(bot.app, 'spend');
    expectValidCard(r.reply.card);
    expect(textOf(r.reply.card)).toContain('Card transactions, last 30 days');
    expect(buttons(r.reply.card).map((b) => b.data.command)).toEqual([
      'spend transactions',
      'spend reimbursements',
      'spend budgets',
      'spend',
    ]);
    const unknown = await ask(bot.app, 'spend cars');
    expect(textOf(unknown.reply.card)).toContain('I don\'t know "spend cars"');
  });

  it('a word that names what every JavaScript object has (constructor, __proto__, toString) is not a subcommand', async () => {
    for (const word of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      const before = bot.app.sandbox!.stats().requests;
      const r = await ask(bot.app, `spend ${word}`);
      expectValidCard(r.reply.card);
      expect(textOf(r.reply.card), word).toContain(`I don't know "spend ${word}"`);
      expect(bot.app.sandbox!.stats().requests, word).toBe(before);
    }
  });

  it('without a Spend & Expense API token the card says how to enable it and calls nothing', async () => {
    const { spend } = bot.app.features;
    const noToken = { spend: () => undefined, status: () => bot.app.bill.status() };
    const before = bot.app.sandbox!.stats().requests;
    const ctx: CommandContext = {
      input: { name: 'spend', args: [], argText: '', page: 0 },
      scope: channelScope(),
      caller: { id: '29:x', aadObjectId: undefined, name: 'X' },
      orgId: bot.app.sandbox!.org.id,
      correlationId: 'spend-no-token',
      now: new Date(NOW),
      log: bot.app.log,
    };
    const reply = await spendCommand.run(ctx, { ...spend, bill: noToken });
    expectValidCard(reply.card);
    expect(textOf(reply.card)).toContain('BILL_SPEND_API_TOKEN');
    expect(bot.app.sandbox!.stats().requests).toBe(before);
  });
});

describe('status', () => {
  it('says which organisation this team uses, that BILL answers, the session age, budgets, cache, audit log and version', async () => {
    await ask(bot.app, 'bills due');
    const res = await bot.say('status');
    const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
    const card = ConnectorStandIn.card(reply!);
    expectValidCard(card);
    const f = factsOf(card);
    expect(f['BILL organisation']).toContain(bot.app.sandbox!.org.id);
    expect(f.Backend).toMatch(/^embedded sandbox at 127\.0\.0\.1:\d+/);
    expect(f.Connectivity).toBe('reachable');
    expect(f.Session).toMatch(/^signed in \d+ s ago, idle \d+ s/);
    expect(f['Spend & Expense']).toBe('API token configured');
    const text = textOf(card);
    expect(text).toContain('Upstream budgets');
    expect(text).toContain('Hit ratio');
    expect(text).toContain(bot.app.audit.location);
    expect(text).toContain(`billbridge ${bot.app.config.version}`);
    expect(JSON.stringify(card)).not.toContain(bot.app.sandbox!.credentials.devKey);
  });
});

describe("a Spend & Expense pause is named as Spend & Expense's, not BILL's", () => {
  /** A bot whose Spend & Expense budget (its 60 calls a minute per token) is `perMinute` here. */
  async function spendBot(perMinute: number): Promise<TestBot> {
    return startBot({ clock: new ManualClock(NOW), env: { USER_COMMANDS_PER_MINUTE: '10000', LIMIT_SPEND_PER_MINUTE: String(perMinute) } });
  }

  it("the token's calls a minute spent here: the card says Spend & Expense is busy", async () => {
    const b = await spendBot(1);
    try {
      expect((await ask(b.app, 'spend budgets')).outcome).toBe('ok');
      const busy = await ask(b.app, 'spend reimbursements');
      expectValidCard(busy.reply.card);
      expect(textOf(busy.reply.card)).toMatch(/^BILL Spend & Expense is busy\nBILL Spend & Expense is busy — try again in \d+ s\./);
      expect(JSON.stringify(busy.reply.card)).not.toMatch(/"BILL is busy/);
    } finally {
      await b.close();
    }
  });

  it('Spend & Expense answering 429 (its 60 a minute spent by another client of the token): the card says so too', async () => {
    const b = await spendBot(1_000);
    try {
      const sb = b.app.sandbox!;
      // Another client of the same token spends its minute at Spend & Expense itself.
      for (let i = 0; i < 60; i++) {
        const res = await fetch(`${sb.spendBaseUrl}/v3/spend/budgets?max=1`, { headers: { apiToken: sb.credentials.spendApiToken } });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
      const busy = await ask(b.app, 'spend budgets');
      expectValidCard(busy.reply.card);
      expect(textOf(busy.reply.card)).toMatch(/^BILL Spend & Expense is busy\nBILL Spend & Expense is busy — try again in \d+ s\./);
      // The pause is kept: the next Spend & Expense command is told at once, without asking BILL again.
      const before = sb.stats().requests;
      expect(textOf((await ask(b.app, 'spend reimbursements')).reply.card)).toMatch(/^BILL Spend & Expense is busy/);
      expect(sb.stats().requests).toBe(before);
    } finally {
      await b.close();
    }
  });
});
