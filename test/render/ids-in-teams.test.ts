// Identifiers in running text ("bill …k8S0", "invoice PIO-63517", "Bill …4tQ2") laid out in Teams at 320 and 450 px
// with names of every length in front of them, so that the line break falls on the identifier at least once.
import { describe, expect, it } from 'vitest';
import { approvalsCard } from '../../src/features/approvals/cards.js';
import { digestCard, notificationCard } from '../../src/features/notifications/cards.js';
import type { OutboxEvent } from '../../src/notify/types.js';
import { sharedCardRenderer, type RenderCase } from '../harness/render.js';

const CASES: RenderCase[] = [320, 450].map((width) => ({ theme: 'light' as const, width }));
const fmt = { locale: 'en-US', timeZone: 'UTC' };
const NOW = Date.parse('2026-03-10T15:30:00.000Z');
/** Vendor names from 3 to 60 characters: one of them puts the end of a line on the identifier after it. */
const NAMES = Array.from({ length: 58 }, (_, i) => 'Northwind Traders Wholesale Supply Company of Greater Ohio'.slice(0, i + 3).trimEnd());

function event(
  type: string,
  entityType: OutboxEvent['entityType'],
  entity: Record<string, unknown>,
  extra: Partial<OutboxEvent> = {},
): OutboxEvent {
  return {
    v: 1,
    eventId: `e-${type}`,
    type,
    orgId: '00801AAAAAAAAAAAAAAA',
    entityType,
    entity,
    errors: [],
    receivedAt: NOW,
    ...extra,
  };
}

const renderer = sharedCardRenderer();

async function problemsOver(cards: unknown[]): Promise<string[]> {
  const all: string[] = [];
  for (const card of cards) all.push(...(await renderer.problems(card, CASES)));
  return [...new Set(all)];
}

describe('a shortened id or an invoice number is never split across lines in Teams', () => {
  it('payment failed: "bill …k8S0" stays whole after a vendor name of any length', async () => {
    const cards = NAMES.map(
      (name) =>
        notificationCard(
          event(
            'payment.failed',
            'payment',
            { id: 'stp01XYZ', vendorName: name, amount: 4200, billId: '00n01QWERTYk8S0', singleStatus: 'FAILED' },
            { errors: [{ message: 'Bank rejected' }] },
          ),
          fmt,
        ).card,
    );
    expect(await problemsOver(cards)).toEqual([]);
  }, 120_000);

  it('new bill: "invoice PIO-63517" stays whole after a vendor name of any length', async () => {
    const cards = NAMES.map(
      (name) =>
        notificationCard(
          event('bill.created', 'bill', {
            id: '00n01A',
            vendorName: name,
            amount: 1250,
            dueDate: '2026-03-20',
            invoice: { invoiceNumber: 'PIO-63517' },
          }),
          fmt,
        ).card,
    );
    expect(await problemsOver(cards)).toEqual([]);
  }, 120_000);

  it('approvals: "Bill …4tQ2" and "Invoice INV-2026-0042" stay whole next to the due date', async () => {
    const cards = NAMES.map(
      (name, i) =>
        approvalsCard({
          state: {
            id: 'c',
            tenantId: 't',
            conversationId: 'x',
            kind: 'personal',
            orgId: 'o',
            approver: { aadObjectId: 'a', teamsUserId: 'u', name },
            bills: [
              {
                billId: '00n01ZZZZZZZ4tQ2',
                vendorName: name,
                amount: 99.5,
                dueDate: '2026-03-12',
                invoiceNumber: i % 2 ? undefined : `INV-2026-${name.length}`,
              },
              {
                billId: '00n01ZZZZZZZ9pL7',
                vendorName: name,
                amount: 1500,
                dueDate: '2026-04-30',
                invoiceNumber: `${'PO'.repeat(i)}-2026-0042`.slice(-((i % 16) + 5)),
              },
            ],
            more: 0,
            createdAt: NOW,
            updatedAt: NOW,
          },
          actionable: false,
          fmt,
          today: '2026-03-10',
          sign: () => 's',
        }).card,
    );
    expect(await problemsOver(cards)).toEqual([]);
  }, 120_000);

  it("digest: bill numbers with hyphens stay whole on the row's second line", async () => {
    const cards = NAMES.filter((_, i) => i % 2 === 0).map(
      (name, i) =>
        digestCard(
          {
            orgId: 'o',
            today: '2026-03-10',
            cadence: 'daily',
            dueSoon: [
              {
                id: '00n01ZZZZZZZ4tQ2',
                number: `${'PO'.repeat(i)}-2026-0042`.slice(-((i % 16) + 5)),
                partyId: 'v',
                partyName: name,
                dueDate: '2026-03-12',
                dueAmount: 12_345.67,
              },
            ],
            overdueBills: [{ id: '00n01ZZZZZZZ4tQ3', number: '', partyId: 'v', partyName: name, dueDate: '2026-03-01', dueAmount: 99 }],
            overdueInvoices: [],
            truncated: false,
            asOf: NOW,
            fingerprint: 'f',
          },
          fmt,
        ).card,
    );
    expect(await problemsOver(cards)).toEqual([]);
  }, 120_000);
});
