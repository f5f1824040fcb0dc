// What a digest gathers: the overdue invoices it lists are the ones a finance team would chase.
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Answers } from '../../src/mirror/answers.js';
import { digestComposer } from '../../src/notify/digests.js';
import type { BillGateway } from '../../src/bill/gateway.js';
import type { Bill, Invoice } from '../../src/bill/types.js';
import type { Mirror } from '../../src/mirror/mirror.js';

const NOW = Date.parse('2026-03-10T12:00:00.000Z');
const clock = { now: () => NOW };

const invoice = (id: string, dueDate: string): Invoice => ({
  id,
  archived: false,
  invoiceNumber: id,
  invoiceDate: '2026-01-01',
  dueDate,
  customerId: 'c1',
  totalAmount: 500,
  dueAmount: 500,
  status: 'OPEN',
  createdTime: '',
  updatedTime: '2026-01-01T00:00:00.000Z',
});

describe('digest content', () => {
  it('an invoice whose BILL due date is no calendar day (2025-13-45) is not listed as overdue', async () => {
    const invoices = [invoice('00e1', '2026-02-01'), invoice('00e2', '2025-13-45'), invoice('00e3', '2026-04-01')];
    const noBills = { list: () => ({ all: async () => ({ items: [], truncated: false }) }) };
    const compose = digestComposer({
      bill: { org: () => ({ bills: noBills }) } as unknown as BillGateway,
      mirror: {
        answers: new Answers(clock, 100),
        names: async () => new Map([['c1', { id: 'c1', name: 'Contoso', archived: false, currency: 'USD' }]]),
        rows: async () => ({ rows: invoices, refreshedAt: NOW }),
      } as unknown as Pick<Mirror, 'answers' | 'names' | 'rows'>,
      listTtlS: 60,
      timeZone: 'UTC',
      log: pino({ level: 'silent' }),
    });
    const content = await compose('00801ORG', NOW, 'now');
    expect(content.overdueInvoices?.map((r) => r.id)).toEqual(['00e1']);
  });

  it('an unpaid bill with $0 due (fully credited) is listed neither as due this week nor as overdue', async () => {
    const bill = (id: string, dueDate: string, dueAmount: number) =>
      ({ id, archived: false, vendorId: 'v1', vendorName: 'Acme', amount: 90, dueAmount, dueDate, paymentStatus: 'UNPAID' }) as Bill;
    const bills = {
      list: () => ({ all: async () => ({ items: [bill('00n1', '2026-03-11', 90), bill('00n2', '2026-03-12', 0)], truncated: false }) }),
    };
    const compose = digestComposer({
      bill: { org: () => ({ bills }) } as unknown as BillGateway,
      mirror: {
        answers: new Answers(clock, 100),
        names: async () => new Map([['v1', { id: 'v1', name: 'Acme', archived: false, currency: 'USD' }]]),
        rows: async () => ({ rows: [], refreshedAt: NOW }),
      },
      listTtlS: 60,
      timeZone: 'UTC',
      log: pino({ level: 'silent' }),
    });
    const content = await compose('00801ORG', NOW, 'now');
    expect(content.dueSoon.map((r) => r.id)).toEqual(['00n1']);
    expect(content.overdueBills.map((r) => r.id)).toEqual(['00n1']);
  });
});
