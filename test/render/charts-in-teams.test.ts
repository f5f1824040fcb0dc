// The finance cards with charts, laid out by Microsoft's adaptivecards renderer in headless Chromium: it knows no
// Chart.* element, so it lays out each chart's fallback as a host without charts would, and that must read intact at
// Teams' card widths: no amount broken across lines or cut off, and the same text as the card without its charts.
import { describe, expect, it } from 'vitest';
import { galleryCards } from '../../tools/galleryCards.js';
import { TEAMS_THEMES } from '../../tools/hostConfigs.js';
import { invoicesOverdueCard, type AgingInvoice } from '../../src/features/receivables/cards.js';
import { chartsOf, withoutCharts } from '../harness/charts.js';
import { sharedCardRenderer, type RenderCase } from '../harness/render.js';

const CASES: RenderCase[] = TEAMS_THEMES.flatMap((theme) => [320, 450].map((width) => ({ theme, width })));
const DESKTOP: RenderCase = { theme: 'light', width: 450 };
const PHONE: RenderCase = { theme: 'light', width: 320 };

const invoice = (n: number, customerId: string, dueDate: string, dueAmount: number): AgingInvoice => ({
  id: `INV${n}`,
  customerId,
  dueDate,
  dueAmount,
  status: 'OPEN',
  archived: false,
});
const twoCurrencies = invoicesOverdueCard({
  today: '2026-03-10',
  fmt: { locale: 'en-US', timeZone: 'UTC' },
  asOf: Date.parse('2026-03-10T10:42:00.000Z'),
  customerOf: (id) => (id === 'c1' ? { name: 'Contoso', currency: 'USD' } : { name: 'Fabrikam GmbH', currency: 'EUR' }),
  invoices: [
    invoice(1, 'c1', '2026-03-01', 12_345.67),
    invoice(2, 'c1', '2025-11-01', 1_050.5),
    invoice(3, 'c2', '2026-02-20', 98_765.43),
    invoice(4, 'c2', '2026-01-15', 20),
  ],
  page: 0,
  command: 'invoices overdue',
});

const cards = [
  ...galleryCards()
    .filter((c) => chartsOf(c.reply.card).length > 0)
    .map((c) => [c.name, c.reply.card] as const),
  ['invoices overdue in dollars and euros', twoCurrencies.card] as const,
];

const renderer = sharedCardRenderer();

describe('cards with charts where the host draws no charts (light, dark, high contrast; 320 px and 450 px)', () => {
  it('the gallery has a card for each chart: aging, cash out, budget use, spend by budget', () => {
    expect(cards.map(([name]) => name)).toEqual(
      expect.arrayContaining(['bills due', 'invoices overdue', 'spend', 'spend budgets', 'invoices overdue in dollars and euros']),
    );
  });

  it.each(cards)('%s: the fallback reads intact, nothing dropped without one, no amount split or cut off', async (_name, card) => {
    expect(await renderer.problems(card, CASES)).toEqual([]);
  });

  it.each(cards)('%s: shows exactly the text of the card without its charts, on a phone and a desktop', async (_name, card) => {
    for (const renderCase of [PHONE, DESKTOP]) {
      const shown = await renderer.text(card, renderCase);
      expect(shown.length).toBeGreaterThan(0);
      expect(shown).toBe(await renderer.text(withoutCharts(card), renderCase));
    }
  });

  it('the aging fallback is the bucket lines, each amount on one line, in both currencies', async () => {
    const shown = await renderer.text(twoCurrencies.card, PHONE);
    expect(shown).toMatch(/1–30 days\s+\$12,345\.67 \+ €98,765\.43 · 2 invoices/);
    expect(shown).toMatch(/31–60 days\s+€20\.00 · 1 invoice/);
    expect(shown).toMatch(/90\+ days\s+\$1,050\.50 · 1 invoice/);
  });
});
