// Charts on the finance cards (Teams' Chart.* elements): each plots exactly the figures the card's table or totals
// already show, one chart per currency, with names from BILL as plain text, a fallback for hosts without charts, and
// the card under Teams' 28 KB.
import { describe, expect, it } from 'vitest';
import type { Bill, Budget, SpendTransaction } from '../../src/bill/types.js';
import { billsDueCard } from '../../src/features/payables/cards.js';
import { invoicesOverdueCard, type AgingInvoice } from '../../src/features/receivables/cards.js';
import { budgetsCard, spendOverviewCard } from '../../src/features/spend/cards.js';
import { galleryCards } from '../../tools/galleryCards.js';
import { sum } from '../../src/cards/format.js';
import { addDays } from '../../src/infra/calendar.js';
import { factsOf, tableRows } from '../harness/finance.js';
import { checkCard, type CardJson } from '../harness/cards.js';
import { chartsOf, withoutCharts } from '../harness/charts.js';

const FMT = { locale: 'en-US', timeZone: 'UTC' };
const NOW = Date.parse('2026-03-10T10:42:00.000Z');
const TODAY = '2026-03-10';
/** Teams refuses a bot message over 28 KB. */
const TEAMS_LIMIT = 28 * 1024;

/** "$1,250.00" -> 1250 */
function amount(text: string): number {
  return Number(text.replace(/[^\d.-]/g, ''));
}

const byName = new Map(galleryCards().map((c) => [c.name, c.reply.card]));
function gallery(name: string): CardJson {
  const card = byName.get(name);
  if (!card) throw new Error(`no gallery card ${name}`);
  return card;
}

function invoice(n: number, customerId: string, dueDate: string, dueAmount: number): AgingInvoice {
  return { id: `INV${n}`, customerId, dueDate, dueAmount, totalAmount: dueAmount, status: 'OPEN', archived: false };
}

const ar = {
  today: TODAY,
  fmt: FMT,
  asOf: NOW,
  customerOf: (id: string) =>
    ({ c1: { name: 'Contoso', currency: 'USD' }, c2: { name: 'Fabrikam GmbH', currency: 'EUR' }, c3: { name: 'Northwind' } })[id],
};

describe('AR aging chart (invoices overdue)', () => {
  it('plots the four buckets with the amounts the bucket lines total, and falls back to those lines', () => {
    const card = gallery('invoices overdue');
    const [chart, ...more] = chartsOf(card);
    expect(more).toEqual([]);
    expect(chart).toMatchObject({ type: 'Chart.VerticalBar', title: 'Overdue by days past due', yAxisTitle: 'USD', showBarValues: true });
    const facts = factsOf(card);
    expect(chart?.data.map((d) => d.x)).toEqual(['1–30 days', '31–60 days', '61–90 days', '90+ days']);
    for (const d of chart?.data ?? []) {
      const line = facts[d.x ?? ''] ?? '';
      expect(d.y, d.x).toBe(line === '—' ? 0 : amount(line.split(' · ')[0] ?? ''));
    }
    // The customers' table adds up to the same buckets.
    const rows = tableRows(card);
    expect(rows.length).toBeGreaterThan(0);
    expect(sum(chart?.data.map((d) => d.y) ?? [])).toBe(amount(facts.Overdue?.split(' · ')[0] ?? ''));
    expect(chart?.fallback).toMatchObject({ type: 'FactSet' });
    expect((chart?.fallback as CardJson).facts?.map((f) => f.title)).toEqual(['1–30 days', '31–60 days', '61–90 days', '90+ days']);
  });

  it('a host without charts sees the total and the four bucket lines, as before charts', () => {
    const plain = withoutCharts(gallery('invoices overdue')) as CardJson;
    const facts = (plain.body ?? []).filter((e) => e.type === 'FactSet').flatMap((e) => e.facts?.map((f) => f.title) ?? []);
    expect(facts).toEqual(['Overdue', '1–30 days', '31–60 days', '61–90 days', '90+ days']);
    expect(checkCard(plain).problems).toEqual([]);
  });

  it('never adds euros to dollars: one chart per currency, the first carrying the fallback', () => {
    const { card } = invoicesOverdueCard({
      ...ar,
      invoices: [
        invoice(1, 'c1', '2026-03-01', 100),
        invoice(2, 'c1', '2025-11-01', 50.5),
        invoice(3, 'c2', '2026-02-20', 80),
        invoice(4, 'c3', '2026-01-15', 20),
      ],
      page: 0,
      command: 'invoices overdue',
    });
    const charts = chartsOf(card);
    expect(charts.map((c) => [c.title, c.yAxisTitle, c.data.map((d) => d.y)])).toEqual([
      // Northwind has no invoice currency: USD, as the totals count it.
      ['Overdue by days past due, USD', 'USD', [100, 20, 0, 50.5]],
      ['Overdue by days past due, EUR', 'EUR', [80, 0, 0, 0]],
    ]);
    expect(charts[0]?.fallback).toMatchObject({ type: 'FactSet' });
    expect(charts[1]?.fallback).toBe('drop');
    expect(factsOf(card)['1–30 days']).toBe('$100.00 + €80.00 · 2 invoices');
  });

  it('an invoice whose BILL due date is no calendar day is not counted overdue, so the total is what the buckets hold', () => {
    const { card } = invoicesOverdueCard({
      ...ar,
      invoices: [invoice(1, 'c1', '2026-03-01', 100), invoice(2, 'c1', '2025-13-45', 999)],
      page: 0,
      command: 'invoices overdue',
    });
    expect(chartsOf(card).map((c) => c.data.map((d) => d.y))).toEqual([[100, 0, 0, 0]]);
    const json = JSON.stringify(card);
    expect(json).toContain('$100.00 · 1 invoice · 1 customer');
    expect(json).not.toContain('1,099');
  });

  it('no overdue invoices: no chart, and the bucket lines as before', () => {
    const card = gallery('invoices overdue — none');
    expect(chartsOf(card)).toEqual([]);
    expect(factsOf(card)['90+ days']).toBe('—');
  });
});

describe('cash out by due day (bills due)', () => {
  it('a bar a day from today to the end of the window, each the amount due of the bills listed for that day', () => {
    const card = gallery('bills due');
    const [chart, ...more] = chartsOf(card);
    expect(more).toEqual([]);
    expect(chart).toMatchObject({ type: 'Chart.VerticalBar', title: 'Cash out by due day', yAxisTitle: 'USD', fallback: 'drop' });
    expect(chart?.data.map((d) => d.x)).toEqual(['Mar 10', 'Mar 11', 'Mar 12', 'Mar 13', 'Mar 14', 'Mar 15', 'Mar 16', 'Mar 17']);
    expect(sum(chart?.data.map((d) => d.y) ?? [])).toBe(amount(factsOf(card).Due?.split(' · ')[0] ?? ''));
  });

  const bill = (n: number, dueDate: string, dueAmount: number, vendorId = 'v1'): Bill => ({
    id: `BILL${n}`,
    archived: false,
    vendorId,
    vendorName: vendorId === 'v1' ? 'Acme Office Supplies' : 'Papeterie Durand',
    amount: dueAmount,
    dueAmount,
    paidAmount: 0,
    dueDate,
    invoice: { invoiceNumber: `A-${n}` },
    paymentStatus: 'UNPAID',
    approvalStatus: 'UNASSIGNED',
    createdTime: '2026-01-01T00:00:00.000Z',
    updatedTime: '2026-01-01T00:00:00.000Z',
  });
  const ap = { today: TODAY, fmt: FMT, asOf: NOW, currencyOf: (id: string) => (id === 'v2' ? 'EUR' : 'USD') };

  it('per day the same amounts the table lists; per currency; overdue bills are not cash out in the window', () => {
    const due = [bill(1, '2026-03-10', 100), bill(2, '2026-03-12', 40.25), bill(3, '2026-03-12', 9.75), bill(4, '2026-03-11', 70, 'v2')];
    const { card } = billsDueCard({ ...ap, days: 3, due, overdue: [bill(9, '2026-03-01', 999)], page: 0, command: 'bills due 3' });
    const charts = chartsOf(card);
    expect(charts.map((c) => [c.title, c.data.map((d) => [d.x, d.y])])).toEqual([
      [
        'Cash out by due day, USD',
        [
          ['Mar 10', 100],
          ['Mar 11', 0],
          ['Mar 12', 50],
          ['Mar 13', 0],
        ],
      ],
      [
        'Cash out by due day, EUR',
        [
          ['Mar 10', 0],
          ['Mar 11', 70],
          ['Mar 12', 0],
          ['Mar 13', 0],
        ],
      ],
    ]);
    expect(tableRows(card).map((r) => r.at(-1))).toEqual(['$100.00', '€70.00', '$40.25', '$9.75']);
  });

  it('a 90-day window has a bar a week (13), not 91, and the card stays under 28 KB', () => {
    const due = Array.from({ length: 400 }, (_, i) => bill(i, addDays(TODAY, i % 91), 1000 + i));
    const { card } = billsDueCard({ ...ap, days: 90, due, overdue: [], page: 0, command: 'bills due 90' });
    const [chart] = chartsOf(card);
    expect(chart?.title).toBe('Cash out by due week');
    expect(chart?.data).toHaveLength(13);
    expect(sum(chart?.data.map((d) => d.y) ?? [])).toBe(sum(due.map((b) => b.dueAmount ?? 0)));
    expect(checkCard(card).bytes).toBeLessThan(TEAMS_LIMIT);
  });

  it('nothing due: no chart', () => {
    expect(chartsOf(gallery('bills due — nothing due, nothing overdue'))).toEqual([]);
  });

  it('a host without charts sees the card exactly as before: the chart is dropped, the table follows', () => {
    const card = gallery('bills due');
    const plain = withoutCharts(card) as CardJson;
    expect(JSON.stringify(plain)).not.toContain('Chart.');
    expect(tableRows(plain)).toEqual(tableRows(card));
    expect((plain.body ?? []).length).toBe((card.body ?? []).length - 1);
  });
});

describe('budget use (spend budgets)', () => {
  it('a bar per budget in the order of the table, the share of its limit used, coloured by the row tone', () => {
    const card = gallery('spend budgets');
    const [chart] = chartsOf(card);
    expect(chart).toMatchObject({ type: 'Chart.HorizontalBar', displayMode: 'AbsoluteWithAxis', fallback: 'drop' });
    const rows = tableRows(card);
    expect(chart?.data.map((d) => d.x)).toEqual(rows.map((r) => r[0]));
    // The table's Used column rounds to whole percents; the chart keeps two decimals.
    const used = rows.map((r) => Number(r.find((cell) => cell.endsWith('%'))?.replace('%', '')));
    expect(used.every(Number.isFinite)).toBe(true);
    expect(chart?.data.map((d) => Math.round(d.y ?? 0))).toEqual(used);
  });

  it('over the limit reads attention, at 80% warning, else good; a budget with no limit has no bar', () => {
    const budget = (name: string, spent: number, limit: number): Budget => ({
      id: name,
      name,
      retired: false,
      currentPeriod: { limit, endDate: '2026-03-31', spent: { cleared: spent, pending: 0, total: spent } },
    });
    const { card } = budgetsCard({
      budgets: [budget('Travel', 1200, 1000), budget('Software', 850, 1000), budget('Office', 100, 1000), budget('Unlimited', 50, 0)],
      fmt: FMT,
      asOf: NOW,
      page: 0,
      command: 'spend budgets',
    });
    expect(chartsOf(card)[0]?.data).toEqual([
      { x: 'Travel', y: 120, color: 'attention' },
      { x: 'Software', y: 85, color: 'warning' },
      { x: 'Office', y: 10, color: 'good' },
    ]);
  });
});

describe('spend by budget (spend)', () => {
  const tx = (n: number, amount: number, budgetName: string | undefined, transactionType = 'CLEAR'): SpendTransaction => ({
    id: `T${n}`,
    transactionType,
    amount,
    occurredTime: '2026-03-09T12:00:00.000Z',
    ...(budgetName === undefined ? {} : { budgetName }),
  });
  const overview = (transactions: SpendTransaction[]) =>
    spendOverviewCard({ transactions, reimbursements: [], budgets: [], fmt: FMT, asOf: NOW }).card;

  it('slices add up to the Spent line; the largest first', () => {
    const card = gallery('spend');
    const [chart] = chartsOf(card);
    expect(chart).toMatchObject({ type: 'Chart.Donut', colorSet: 'categorical', fallback: 'drop' });
    const values = chart?.data.map((d) => d.value ?? 0) ?? [];
    expect(values).toEqual([...values].sort((a, b) => b - a));
    expect(sum(values)).toBe(amount(factsOf(card).Spent?.split(' · ')[0] ?? ''));
  });

  it('declines moved no money and are left out; past six budgets the rest is one "Other" slice', () => {
    const names = ['Travel', 'Software', 'Marketing', 'Office', 'Events', 'Training', 'Meals'];
    const card = overview([
      ...names.map((name, i) => tx(i, 700 - i * 100, name)),
      tx(90, 5000, 'Travel', 'DECLINE'),
      tx(91, 15, undefined),
    ]);
    expect(chartsOf(card)[0]?.data).toEqual([
      { legend: 'Travel', value: 700 },
      { legend: 'Software', value: 600 },
      { legend: 'Marketing', value: 500 },
      { legend: 'Office', value: 400 },
      { legend: 'Events', value: 300 },
      { legend: 'Other', value: 315 },
    ]);
  });

  it('a budget name from BILL is plain text in the chart: markup shows as typed, one line, shortened', () => {
    const card = overview([tx(1, 10, '**Travel** [click](https://evil.example)\nnext line and a very long tail of words')]);
    expect(chartsOf(card)[0]?.data[0]?.legend).toBe('**Travel** [click](https://evil…');
  });

  it('no card spend: no chart', () => {
    expect(chartsOf(overview([tx(1, 40, 'Travel', 'DECLINE')]))).toEqual([]);
  });
});

describe('every card with a chart', () => {
  it('stays under 28 KB with long names and every bar filled', () => {
    const long = 'Very Long Customer Name Holdings International Limited';
    const customers = Array.from({ length: 40 }, (_, i) => [`c${i}`, { name: `${long} ${i}`, currency: i % 3 === 0 ? 'EUR' : 'USD' }]);
    const lookup = new Map(customers as Array<[string, { name: string; currency: string }]>);
    const invoices = Array.from({ length: 2000 }, (_, i) =>
      invoice(i, `c${i % 40}`, `2025-${String(1 + (i % 12)).padStart(2, '0')}-15`, 10 + i),
    );
    const { card } = invoicesOverdueCard({ ...ar, customerOf: (id) => lookup.get(id), invoices, page: 0, command: 'invoices overdue' });
    expect(chartsOf(card)).toHaveLength(2);
    expect(checkCard(card).bytes).toBeLessThan(TEAMS_LIMIT);
    for (const name of ['bills due', 'bills due 60 — page 2', 'invoices overdue', 'spend budgets', 'spend']) {
      expect(checkCard(gallery(name)).bytes, name).toBeLessThan(TEAMS_LIMIT);
    }
  });
});
