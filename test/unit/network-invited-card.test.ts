// The answer to an invitation names the vendor or customer BILL has: a name of any length still makes a card Teams takes.
import { describe, expect, it } from 'vitest';
import { invitedCard } from '../../src/features/network/cards.js';
import { refusalCard } from '../../src/features/approvals/cards.js';
import { checkCard } from '../harness/cards.js';

const long = `Acme ${'A'.repeat(60_000)}`;

describe('a vendor named with 60,000 characters in BILL', () => {
  it('is cut short on the invited card, not sent as a card too large for Teams', () => {
    const { card } = invitedCard({
      kind: 'vendor',
      name: long,
      how: { email: 'ap@acme.example' },
      status: 'INVITED',
      byName: 'Dana Lee',
      at: '10:42 AM',
    });
    expect(checkCard(card).problems).toEqual([]);
    expect(checkCard(card).bytes).toBeLessThan(40 * 1024);
    expect(JSON.stringify(card)).toMatch(/Acme A{100,}…/);
  });

  it('is cut short in the heading of a refusal ("… is already on the BILL network")', () => {
    const { card } = refusalCard(`${long} is already on the BILL network`, 'BILL says: connected. Nothing was sent.');
    expect(checkCard(card).problems).toEqual([]);
    expect(checkCard(card).bytes).toBeLessThan(40 * 1024);
    expect(JSON.stringify(card)).toMatch(/Acme A{100,}…/);
  });
});
