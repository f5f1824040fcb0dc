// Spend & Expense cards: card transactions, pending reimbursements, budget use, an overview of the three, and how to
// enable S&E. Amounts are USD (S&E is US-only).
import type { Budget, Reimbursement, SpendTransaction } from '../../bill/types.js';
import { adaptiveCard, executeAction, text, title, TONE_STYLE, type CardReply } from '../../cards/card.js';
import { donutChart, horizontalBarChart, type ChartPoint } from '../../cards/chart.js';
import { calendarDate, instantDate, money, percent, sum, type FormatOptions } from '../../cards/format.js';
import { detailCard, listCard, type AsOf, type ListContext } from '../../cards/list.js';
import { count, reimbursementPending, reimbursementWords } from '../../cards/words.js';

const USD = 'USD';

export const TRANSACTION_DAYS = 30;

const isDecline = (tx: SpendTransaction): boolean => tx.transactionType === 'DECLINE';

/** A receipt the budget asks for and nobody attached (declines need none). */
const missingReceipt = (tx: SpendTransaction): boolean =>
  !isDecline(tx) && (tx.receiptStatus === 'MISSING' || (tx.receiptRequired === true && tx.receiptStatus !== 'ATTACHED'));

const usd = (items: Array<{ amount: number }>, fmt: FormatOptions): string => money(sum(items.map((i) => i.amount)), USD, fmt.locale);

/** What the transactions card and the overview both say first: spent (declines moved no money) and missing receipts. */
function transactionTotals(transactions: SpendTransaction[], fmt: FormatOptions) {
  const spent = transactions.filter((t) => !isDecline(t));
  const missing = transactions.filter(missingReceipt);
  const totals: Array<[string, string]> = [
    ['Spent', `${usd(spent, fmt)} · ${count(spent.length, 'transaction', fmt.locale)}`],
    ['Missing receipts', missing.length ? `${count(missing.length, 'transaction', fmt.locale)} · ${usd(missing, fmt)}` : 'none'],
  ];
  return { spent, missing, totals };
}

/** Active budgets with how much of their limit is used this period, most used first. */
function budgetRows(budgets: Budget[]) {
  return budgets
    .filter((b) => !b.retired)
    .map((b) => {
      const spent = b.currentPeriod?.spent?.total ?? 0;
      const limit = b.currentPeriod?.limit ?? b.recurringLimit ?? 0;
      return { b, use: { spent, limit, ratio: limit > 0 ? spent / limit : undefined } };
    })
    .sort((x, y) => (y.use.ratio ?? -1) - (x.use.ratio ?? -1) || x.b.name.localeCompare(y.b.name));
}

export function transactionsCard(input: ListContext & { transactions: SpendTransaction[]; truncated?: boolean }): CardReply {
  const { fmt } = input;
  // BILL has sent transactions without a time: they sort as the text "undefined" rather than throwing.
  const when = (t: { occurredTime?: unknown }) => String(t.occurredTime);
  const rows = [...input.transactions].sort((a, b) => when(b).localeCompare(when(a)) || a.id.localeCompare(b.id));
  const { spent, missing, totals } = transactionTotals(rows, fmt);
  const declined = rows.filter(isDecline);
  if (declined.length > 0) totals.push(['Declined', count(declined.length, 'transaction', fmt.locale)]);
  return listCard({
    ...input,
    title: `Card transactions, last ${TRANSACTION_DAYS} days`,
    subtitle: 'Newest first · transactions missing a receipt are flagged',
    totals,
    columns: ['Date', 'Merchant', 'Cardholder', { header: 'Amount', figure: true }, 'Receipt'],
    items: rows,
    row: (t) => [
      instantDate(t.occurredTime, fmt) ?? '—',
      t.merchantName || t.rawMerchantName || 'Unknown merchant',
      t.userName || '—',
      money(t.amount, USD, fmt.locale),
      isDecline(t) ? 'Declined' : missingReceipt(t) ? 'Missing' : t.receiptStatus === 'ATTACHED' ? 'Attached' : 'Not needed',
    ],
    tone: (t) => (missingReceipt(t) ? 'Attention' : undefined),
    noun: 'transactions',
    empty: `No card transactions in the last ${TRANSACTION_DAYS} days.`,
    footnotes: [input.truncated ? 'Only the newest transactions BILL returned in one answer are counted' : undefined],
    summary: `${count(spent.length, 'card transaction')} in the last ${TRANSACTION_DAYS} days, ${usd(spent, fmt)}; ${missing.length} missing receipts.`,
  });
}

/** Any reimbursements in; the card keeps the pending ones. */
export function reimbursementsCard(input: ListContext & { reimbursements: Reimbursement[]; truncated?: boolean }): CardReply {
  const { fmt } = input;
  const rows = input.reimbursements
    .filter(reimbursementPending)
    .sort((a, b) => String(a.submittedTime).localeCompare(String(b.submittedTime)) || a.id.localeCompare(b.id));
  const total = usd(rows, fmt);
  const failed = rows.filter((r) => r.status === 'PAYMENT_FAILED');
  const totals: Array<[string, string]> = [['Pending', `${total} · ${count(rows.length, 'reimbursement', fmt.locale)}`]];
  if (failed.length) totals.push(['Payment failed', count(failed.length, 'reimbursement', fmt.locale)]);
  return listCard({
    ...input,
    title: 'Pending reimbursements',
    subtitle: 'Submitted and not yet paid, oldest first',
    totals,
    columns: ['Submitted', 'For', { header: 'Amount', figure: true }, 'Status'],
    items: rows,
    row: (r) => [
      instantDate(r.submittedTime, fmt) ?? '—',
      r.merchantName || (r.type === 'MILEAGE' ? `Mileage${r.note ? ` — ${r.note}` : ''}` : r.note || 'Out-of-pocket expense'),
      money(r.amount, USD, fmt.locale),
      reimbursementWords(r).words,
    ],
    tone: (r) => reimbursementWords(r).tone,
    noun: 'reimbursements',
    empty: 'No pending reimbursements.',
    footnotes: [input.truncated ? 'Only the newest reimbursements BILL returned in one answer are counted' : undefined],
    summary: rows.length === 0 ? 'No pending reimbursements.' : `${count(rows.length, 'pending reimbursement')}, ${total}.`,
  });
}

/** Over the limit, or at 80% of it or more: the row's tone, in words and in the chart. */
const budgetTone = (ratio = 0): 'Attention' | 'Warning' | undefined => (ratio > 1 ? 'Attention' : ratio >= 0.8 ? 'Warning' : undefined);

/** Bars in the budgets chart: the first page of the table (a 320 px card holds about this many rows of bars). */
const CHART_BUDGETS = 10;

/** Slices in the spend donut: the largest budgets, the rest as one "Other" slice (more colours than this read as noise). */
const DONUT_SLICES = 6;

/** Card spend by budget, largest first, the rest as "Other"; declines moved no money and are left out. */
function spendByBudget(transactions: SpendTransaction[]): ChartPoint[] {
  const by = new Map<string, number>();
  for (const t of transactions) {
    const name = t.budgetName?.trim() || 'No budget';
    if (!isDecline(t)) by.set(name, sum([by.get(name), t.amount]));
  }
  const slices = [...by.entries()]
    .map(([label, value]) => ({ label, value }))
    .filter((s) => s.value > 0)
    .sort((a, b) => b.value - a.value || a.label.localeCompare(b.label));
  if (slices.length <= DONUT_SLICES) return slices;
  const rest = slices.slice(DONUT_SLICES - 1);
  return [...slices.slice(0, DONUT_SLICES - 1), { label: 'Other', value: sum(rest.map((s) => s.value)) }];
}

export function budgetsCard(input: ListContext & { budgets: Budget[] }): CardReply {
  const { fmt } = input;
  const rows = budgetRows(input.budgets);
  const spent = sum(rows.map((r) => r.use.spent));
  const limit = sum(rows.map((r) => r.use.limit));
  const over = rows.filter((r) => (r.use.ratio ?? 0) > 1);
  const pct = (ratio: number | undefined) => percent(ratio, fmt.locale);
  // Share of each limit used, most used first, as the table lists them; the table says the same in words and figures,
  // so a host without charts drops the chart and shows the card as before.
  const used = rows.filter((r) => r.use.ratio !== undefined).slice(0, CHART_BUDGETS);
  const charts = used.length
    ? [
        horizontalBarChart({
          title: rows.length > CHART_BUDGETS ? 'Most used budgets, % of limit' : '% of limit used',
          points: used.map(({ b, use }) => ({
            label: b.name || 'Unnamed budget',
            value: (use.ratio ?? 0) * 100,
            color: TONE_STYLE[budgetTone(use.ratio) ?? 'Good'],
          })),
          fallback: 'drop',
        }),
      ]
    : [];
  return listCard({
    ...input,
    title: 'Budgets this period',
    subtitle: "Spent of each budget's limit in its current period, most used first",
    totals: [
      ['Spent', `${money(spent, USD, fmt.locale)} of ${money(limit, USD, fmt.locale)} (${pct(limit > 0 ? spent / limit : undefined)})`],
      ['Over limit', over.length ? over.map((r) => r.b.name).join(', ') : 'none'],
    ],
    charts,
    columns: ['Budget', { header: 'Spent', figure: true }, 'Limit', 'Used', 'Period ends'],
    items: rows,
    row: ({ b, use }) => [
      b.name || 'Unnamed budget',
      money(use.spent, USD, fmt.locale),
      money(use.limit, USD, fmt.locale),
      pct(use.ratio),
      calendarDate(b.currentPeriod?.endDate, fmt.locale),
    ],
    tone: ({ use }) => budgetTone(use.ratio),
    noun: 'budgets',
    empty: 'No active budgets in Spend & Expense.',
    summary:
      rows.length === 0
        ? 'No active budgets.'
        : `${count(rows.length, 'budget')}: ${money(spent, USD, fmt.locale)} spent of ${money(limit, USD, fmt.locale)}${over.length ? `; ${over.length} over limit` : ''}.`,
  });
}

/** `spend` alone: the three in one glance, with buttons for each list. */
export function spendOverviewCard(
  input: AsOf & { transactions: SpendTransaction[]; reimbursements: Reimbursement[]; budgets: Budget[] },
): CardReply {
  const { fmt } = input;
  const { spent, missing, totals } = transactionTotals(input.transactions, fmt);
  const pending = input.reimbursements.filter(reimbursementPending);
  const budgets = budgetRows(input.budgets).slice(0, 5);
  const byBudget = spendByBudget(input.transactions);
  return detailCard({
    ...input,
    command: 'spend',
    title: 'Spend & Expense',
    sections: [
      {
        heading: `Card transactions, last ${TRANSACTION_DAYS} days`,
        facts: totals,
        // New on this card and said nowhere else on it, so a host without charts drops it and shows the card as before.
        chart: byBudget.length
          ? donutChart({ title: `Card spend by budget, ${USD}`, colorSet: 'categorical', points: byBudget, fallback: 'drop' })
          : undefined,
      },
      { heading: 'Reimbursements', facts: [['Pending', `${usd(pending, fmt)} · ${count(pending.length, 'reimbursement', fmt.locale)}`]] },
      {
        heading: 'Budgets this period',
        facts: budgets.map(({ b, use }): [string, string] => [
          b.name,
          `${percent(use.ratio, fmt.locale)} · ${money(use.spent, USD, fmt.locale)} of ${money(use.limit, USD, fmt.locale)}`,
        ]),
        none: 'No active budgets.',
      },
    ],
    summary: `Spend: ${usd(spent, fmt)} in ${TRANSACTION_DAYS} days, ${missing.length} missing receipts, ${pending.length} pending reimbursements.`,
    actions: ['Transactions', 'Reimbursements', 'Budgets'].map((list) =>
      executeAction(list, { verb: 'run', command: `spend ${list.toLowerCase()}` }),
    ),
  });
}

/**
 * How to turn Spend & Expense on: no token at all, or (`otherOrgs`) tokens for other organisations only (a token belongs
 * to one organisation, and another organisation's must not answer).
 */
export function spendNotConfiguredCard(opts: { note?: string; otherOrgs?: boolean } = {}): CardReply {
  const [heading, why, how, summary] = opts.otherOrgs
    ? [
        'Spend & Expense is not set up for this organisation',
        'A Spend & Expense API token belongs to one organisation, and billbridge has none for the organisation this team is linked to.',
        'To enable it, a Spend & Expense administrator of this organisation creates an API token (Settings → API tokens) and the billbridge operator adds it to **BILL_SPEND_API_TOKENS** as organisationId:token, then restarts billbridge.',
        'Spend & Expense is not set up for this organisation.',
      ]
    : [
        'Spend & Expense is not connected',
        'billbridge reads card transactions, reimbursements and budgets with a Spend & Expense API token, and none is configured.',
        'To enable it, a Spend & Expense administrator creates an API token (Settings → API tokens) and the billbridge operator sets it as **BILL_SPEND_API_TOKEN**, then restarts billbridge.',
        'Spend & Expense is not connected: set BILL_SPEND_API_TOKEN to enable it.',
      ];
  const body = [title(heading), text(why), text(how)];
  if (opts.note) body.push(text(opts.note, { subtle: true, size: 'Small' }));
  return adaptiveCard(body, { summary });
}
