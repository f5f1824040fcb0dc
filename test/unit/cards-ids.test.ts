// Identifiers kept on one line with word joiners: what a card shows, and that an id copied back into a command works.
import { describe, expect, it } from 'vitest';
import { keepTogether, shortRef } from '../../src/cards/card.js';
import { notificationCard } from '../../src/features/notifications/cards.js';
import { parseCommandLine } from '../../src/features/parse.js';
import type { OutboxEvent } from '../../src/notify/types.js';

const WJ = '\u2060';
const names = ['bill', 'invoice'];

describe('ids on cards', () => {
  it('a shortened id keeps its ellipsis with its last characters: no line break can fall between them', () => {
    expect(shortRef('00n01QWERTYk8S0')).toBe(`…${WJ}k8S0`);
  });

  it('an invoice number keeps its hyphens, dashes and slashes joined, and an escaped character stays escaped', () => {
    expect(keepTogether('PIO-63517')).toBe(`PIO${WJ}-${WJ}63517`);
    expect(keepTogether('2026/03–7')).toBe(`2026${WJ}/${WJ}03${WJ}–${WJ}7`);
    expect(keepTogether('\\-12')).toBe(`\\-12`);
  });

  it('an id too long for a phone column is left free to wrap rather than run past the card', () => {
    const long = 'A-'.repeat(20);
    expect(keepTogether(long)).toBe(long);
  });

  it('a failed payment names its bill as "bill …k8S0" with the joiner, and its one-line summary has no invisible characters', () => {
    const ev: OutboxEvent = {
      v: 1,
      eventId: 'e',
      type: 'payment.failed',
      orgId: 'o',
      entityType: 'payment',
      entity: { id: 'p', vendorName: 'Acme', amount: 10, billId: '00n01QWERTYk8S0' },
      errors: [],
      receivedAt: 0,
    };
    const reply = notificationCard(ev, { locale: 'en-US', timeZone: 'UTC' });
    expect(JSON.stringify(reply.card)).toContain(`bill …${WJ}k8S0`);
    expect(reply.summary).toContain('bill …k8S0');
    expect(reply.summary).not.toContain(WJ);
  });

  it('a number copied from a card into a command reaches the command without the invisible joiners', () => {
    const typed = `bill ${keepTogether('PIO-63517')}`;
    expect(parseCommandLine(typed, names)).toMatchObject({ kind: 'command', name: 'bill', argText: 'PIO-63517' });
    expect(parseCommandLine(`invoice ${shortRef('00e01ABCD1234')}`, names)).toMatchObject({
      kind: 'command',
      name: 'invoice',
      argText: '…1234',
    });
  });
});
