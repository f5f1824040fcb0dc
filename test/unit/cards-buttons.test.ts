// The button row: kept as the card's actions when it fits a 320 px phone, stacked one per line when it does not.
import { describe, expect, it } from 'vitest';
import { adaptiveCard, executeAction, title } from '../../src/cards/card.js';
import { digestCard } from '../../src/features/notifications/cards.js';

const run = (t: string) => executeAction(t, { verb: 'run', command: t.toLowerCase() });

describe('buttons on a phone', () => {
  it('two short buttons stay one row of card actions', () => {
    const { card } = adaptiveCard([title('Did you mean bills due?')], {
      summary: 's',
      actions: [run('Run "bills due"'), run('Show all commands')],
    });
    expect(card.actions?.map((a) => a.title)).toEqual(['Run "bills due"', 'Show all commands']);
    expect(card.body.some((e) => e.type === 'ActionSet')).toBe(false);
  });

  it('four buttons that would run past a 320 px card are stacked, one ActionSet each, in their order', () => {
    const actions = ['Transactions', 'Reimbursements', 'Budgets', 'Refresh'].map(run);
    const { card } = adaptiveCard([title('Spend')], { summary: 's', actions });
    expect(card.actions).toBeUndefined();
    const sets = card.body.filter((e) => e.type === 'ActionSet');
    expect(sets.map((e) => (e.actions as Array<{ title: string }>).map((a) => a.title))).toEqual([
      ['Transactions'],
      ['Reimbursements'],
      ['Budgets'],
      ['Refresh'],
    ]);
  });

  it("the digest's Refresh, Bills due and Overdue invoices are stacked", () => {
    const { card } = digestCard(
      {
        orgId: 'o',
        today: '2026-03-10',
        cadence: 'daily',
        dueSoon: [],
        overdueBills: [],
        overdueInvoices: [],
        truncated: false,
        asOf: 0,
        fingerprint: 'f',
      },
      { locale: 'en-US', timeZone: 'UTC' },
    );
    expect(card.body.filter((e) => e.type === 'ActionSet').map((e) => (e.actions as Array<{ title: string }>)[0]!.title)).toEqual([
      'Refresh',
      'Bills due',
      'Overdue invoices',
    ]);
  });
});
