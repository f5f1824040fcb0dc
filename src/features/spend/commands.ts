// `spend [transactions | reimbursements | budgets]`: Spend & Expense through its API token (60 calls a minute). BILL
// cannot filter by status or receipt state (bill-v3-api.md §6): lists are capped by time and pages and filtered here.
import { InputError } from '../../errors.js';
import type { SpendClient } from '../../bill/spend.js';
import type { Reimbursement } from '../../bill/types.js';
import { answerKey, type Answer } from '../../mirror/answers.js';
import { shorten, type CardReply } from '../../cards/card.js';
import type { ListContext } from '../../cards/list.js';
import { addDays } from '../../infra/calendar.js';
import { budgetsCard, reimbursementsCard, spendNotConfiguredCard, spendOverviewCard, TRANSACTION_DAYS, transactionsCard } from './cards.js';
import type { BillGateway } from '../../bill/gateway.js';
import type { Mirror } from '../../mirror/mirror.js';
import type { Command, CommandContext } from '../types.js';
import { boundOrg, cachedAnswer, listContext, todayOf, type WithSettings } from '../finance.js';

/** What `spend` reads: the org's Spend & Expense client, kept answers (the mirror's answer cache), the settings. */
export interface SpendDeps extends WithSettings {
  mirror: Pick<Mirror, 'answers' | 'dropAnswer'>;
  bill: Pick<BillGateway, 'spend' | 'status'>;
}

/** Card transactions shown: those of the last TRANSACTION_DAYS, at most 10 pages of 50. */
const TRANSACTION_PAGES = 10;
const REIMBURSEMENT_PAGES = 5;

type Sub = 'overview' | 'transactions' | 'reimbursements' | 'budgets';

/** The other words people type for each list. */
const ALIASES: Record<Exclude<Sub, 'overview'>, string[]> = {
  transactions: ['transaction', 'cards', 'card', 'receipts'],
  reimbursements: ['reimbursement', 'expenses'],
  budgets: ['budget'],
};
// A Map, not an object literal: a typed word is never looked up among the properties every object inherits.
const SUBS = new Map(Object.entries(ALIASES).flatMap(([sub, words]) => [sub, ...words].map((word) => [word, sub as Sub] as const)));

const HINT = 'Type **spend** for an overview, or **spend transactions**, **spend reimbursements** or **spend budgets**.';

function transactions(ctx: CommandContext, deps: SpendDeps, client: SpendClient) {
  // The window starts at midnight UTC of the day 30 days before today in the team's zone: one cached answer per day.
  const from = `${addDays(todayOf(ctx, deps), -TRANSACTION_DAYS)}T00:00:00.000Z`;
  return cachedAnswer(ctx, deps, answerKey('spend.transactions', { from }), ['spend'], async () => {
    const { items, truncated } = await client.transactions.list({ occurredFrom: from, maxPages: TRANSACTION_PAGES }).all();
    return { transactions: items.map(({ receipts: _r, ...t }) => ({ ...t, receipts: undefined })), truncated };
  });
}

function reimbursements(ctx: CommandContext, deps: SpendDeps, client: SpendClient) {
  return cachedAnswer(ctx, deps, answerKey('spend.reimbursements'), ['spend'], async () => {
    const { items, truncated } = await client.reimbursements.list({ maxPages: REIMBURSEMENT_PAGES }).all();
    return { reimbursements: items.map(({ statusHistory: _h, receipts: _r, ...r }) => r as Reimbursement), truncated };
  });
}

function budgets(ctx: CommandContext, deps: SpendDeps, client: SpendClient) {
  return cachedAnswer(ctx, deps, answerKey('spend.budgets'), ['spend'], async () => ({
    budgets: (await client.budgets.list({ retired: false, maxPages: 10 }).all()).items,
  }));
}

export const spendCommand: Command<SpendDeps> = {
  name: 'spend',
  usage: 'spend [transactions | reimbursements | budgets]',
  description: 'Spend & Expense: card transactions missing receipts, pending reimbursements, budget use',
  examples: ['spend', 'spend transactions'],
  upstream: true,
  rank: 60,
  async run(ctx, deps) {
    const word = ctx.input.args.join(' ').toLowerCase();
    const sub = word === '' ? 'overview' : SUBS.get(word);
    if (!sub) throw new InputError(`I don't know "spend ${shorten(ctx.input.argText)}"`, HINT, `spend ${ctx.input.argText}`);
    // An API token belongs to one Spend & Expense company: only the token of the team's own organisation is used.
    const client = deps.bill.spend(boundOrg(ctx), { priority: 'interactive' });
    if (!client) return spendNotConfiguredCard({ note: deps.settings.note, otherOrgs: deps.bill.status().spendConfigured });
    // A list: its card over what was read, the card's Refresh and Show more running the same subcommand.
    const list = async <T>(read: Promise<Answer<T>>, card: (input: ListContext & T) => CardReply) => {
      const got = await read;
      return card({ ...listContext(ctx, deps, `spend ${sub}`, got.fetchedAt), ...got.value });
    };
    if (sub === 'transactions') return list(transactions(ctx, deps, client), transactionsCard);
    if (sub === 'reimbursements') return list(reimbursements(ctx, deps, client), reimbursementsCard);
    if (sub === 'budgets') return list(budgets(ctx, deps, client), budgetsCard);
    const [t, r, b] = await Promise.all([transactions(ctx, deps, client), reimbursements(ctx, deps, client), budgets(ctx, deps, client)]);
    const asOf = Math.min(t.fetchedAt, r.fetchedAt, b.fetchedAt);
    return spendOverviewCard({ ...t.value, ...r.value, ...b.value, ...listContext(ctx, deps, 'spend', asOf) });
  },
};
