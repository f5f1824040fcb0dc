// What a channel reads when BILL pushes an event: what happened, in words, with the key facts; valid Adaptive Cards
// under 40 KB, names escaped, no bank or tax numbers; and the digest card.
import { describe, expect, it } from 'vitest';
import { checkCard } from '../harness/cards.js';
import { digestCard, notificationCard } from '../../src/features/notifications/cards.js';
import { projectEntity } from '../../src/notify/project.js';
import type { OutboxEvent } from '../../src/notify/types.js';
import type { DigestContent } from '../../src/notify/digests.js';
import { eventTypeInfo } from '../../src/notify/kinds.js';
import { codeWords } from '../../src/cards/words.js';
import { liveMarkup, markdownTexts } from '../harness/markdown.js';

const fmt = { locale: 'en-US', timeZone: 'America/New_York' };
const RECEIVED = Date.parse('2026-03-02T15:42:00Z');

function ev(type: string, entity: Record<string, unknown>, over: Partial<OutboxEvent> = {}): OutboxEvent {
  const info = eventTypeInfo(type)!;
  return {
    v: 1,
    eventId: 'e1',
    type,
    orgId: '00801ORG',
    entityType: info.entity,
    entity: projectEntity(entity),
    errors: [],
    receivedAt: RECEIVED,
    ...over,
  };
}

function said(e: OutboxEvent): { headline: string; json: string; summary: string } {
  const reply = notificationCard(e, fmt);
  const check = checkCard(reply.card);
  expect(check.problems).toEqual([]);
  expect(check.bytes).toBeLessThan(40 * 1024);
  const first = reply.card.body[0] as unknown as { text: string };
  // The words as read: without the invisible word joiners that keep an invoice number or "…1abc" on one line.
  return { headline: first.text.replace(/\u2060/g, ''), json: JSON.stringify(reply.card), summary: reply.summary };
}

describe('payments', () => {
  it('a failed payment reads "Payment to Acme Supply failed — $4,200.00, bill INV-778"', () => {
    const e = ev(
      'payment.updated',
      {
        id: 'stp01x',
        status: 'DISBURSEMENT_FAILED_ACTION_NEEDED',
        amount: 4200,
        billIds: ['00n01abc'],
        vendor: { id: '00901v', name: 'Acme Supply' },
        processDate: '2026-03-02',
      },
      { enrichment: { billNumbers: { '00n01abc': 'INV-778' } } },
    );
    const s = said(e);
    expect(s.headline).toBe('Payment to Acme Supply failed — $4,200.00, bill INV-778');
    expect(s.summary).toBe('Payment to Acme Supply failed — $4,200.00, bill INV-778');
    // Teams' attention red is 3.24:1 on its dark theme: the words say it failed, no colour is needed to read it.
    expect(s.json).not.toMatch(/"color":"(Attention|Warning|Good)"/);
    expect(s.json).toContain('Disbursement failed action needed');
    expect(s.json).toContain('"verb":"notify.refresh"');
    expect(s.json).toContain('BILL event payment\\\\.updated · Mar 2, 2026, 10:42 AM');
  });

  it('a bill id named like a property every JavaScript object has is shown as an id, not looked up among them', () => {
    const e = ev(
      'payment.failed',
      { id: 'stp01x', amount: 5, billIds: ['constructor'], vendor: { id: 'v', name: 'Acme' } },
      {
        enrichment: { billNumbers: {} },
      },
    );
    expect(said(e).headline).toBe('Payment to Acme failed — $5.00, bill …ctor');
  });

  it('payment.failed, AutoPay failures and the other single statuses say what they mean', () => {
    const base = { id: 'stp01x', amount: 99.5, billIds: ['00n01abc'], vendor: { id: 'v', name: 'Acme' } };
    expect(said(ev('payment.failed', base)).headline).toBe('Payment to Acme failed — $99.50, bill …1abc');
    expect(said(ev('payment.updated', { ...base, status: 'SCHEDULED', processDate: '2026-03-05' })).headline).toBe(
      'Payment to Acme is scheduled for Mar 5, 2026 — $99.50, bill …1abc',
    );
    expect(said(ev('payment.updated', { ...base, status: 'CLEARED' })).headline).toContain('was delivered');
    expect(said(ev('payment.updated', { ...base, status: 'VOIDED' })).headline).toContain('was voided');
    expect(said(ev('payment.updated', { ...base, singleStatus: 'SENT', status: 'PAID' })).headline).toContain('was sent');
    expect(said(ev('payment.updated', { ...base, status: 'SOMETHING_NEW' })).headline).toContain('changed (something new)');
    const autopay = ev(
      'autopay.failed',
      { vendor: { id: 'v', name: 'Happy Music Supplies' } },
      { errors: [{ code: '3', message: 'Bank account is inactive.' }] },
    );
    expect(said(autopay).headline).toBe('AutoPay to Happy Music Supplies failed — Bank account is inactive.');
    expect(notificationCard(autopay, fmt).card.actions).toBeUndefined();
  });
});

describe('bills, invoices, vendors, spend', () => {
  const bill = {
    id: '00n01b',
    vendorName: 'Harbor Logistics',
    amount: 1250,
    dueAmount: 1250,
    dueDate: '2026-03-15',
    invoice: { invoiceNumber: 'HAR-1' },
    paymentStatus: 'UNPAID',
    approvalStatus: 'ASSIGNED',
  };

  it('bills', () => {
    expect(said(ev('bill.created', bill)).headline).toBe('New bill from Harbor Logistics — $1,250.00, invoice HAR-1, due Mar 15, 2026');
    expect(said(ev('bill.updated', { ...bill, paymentStatus: 'PAID', dueAmount: 0 })).headline).toBe(
      'Bill HAR-1 from Harbor Logistics is paid — $1,250.00',
    );
    expect(said(ev('bill.updated', { ...bill, paymentStatus: 'SCHEDULED', scheduledAmount: 1250 })).headline).toBe(
      'Payment scheduled for bill HAR-1 from Harbor Logistics — $1,250.00',
    );
    expect(said(ev('bill.updated', { ...bill, approvalStatus: 'DENIED' })).headline).toBe(
      'Bill HAR-1 from Harbor Logistics was denied — $1,250.00',
    );
    expect(said(ev('bill.archived', { ...bill, archived: true })).headline).toBe(
      'Bill HAR-1 from Harbor Logistics was archived — $1,250.00',
    );
    expect(said(ev('bill.updated', bill)).json).toContain('Awaiting approval');
    // A status named like a property every JavaScript object has is spelled out as it is, like any other.
    for (const approvalStatus of ['constructor', 'toString', 'SOME_STATUS']) {
      const { json } = said(ev('bill.updated', { ...bill, approvalStatus }));
      const fact = /"title":"Approval"(,"value":"([^"]*)")?/.exec(json);
      expect(fact?.[2], approvalStatus).toBe(codeWords(approvalStatus));
    }
  });

  it('invoices', () => {
    const inv = {
      id: '00e01i',
      invoiceNumber: '1042',
      customerId: '0cu01c',
      totalAmount: 1200,
      dueAmount: 1200,
      dueDate: '2026-04-01',
      status: 'OPEN',
    };
    const named = { enrichment: { customerName: 'Globex' } };
    expect(said(ev('invoice.created', inv, named)).headline).toBe('Invoice 1042 to Globex was created — $1,200.00, due Apr 1, 2026');
    expect(said(ev('invoice.updated', { ...inv, status: 'PARTIAL_PAYMENT', dueAmount: 1000 }, named)).headline).toBe(
      'Payment received on invoice 1042 from Globex — $200.00 of $1,200.00 paid, $1,000.00 still due',
    );
    expect(said(ev('invoice.updated', { ...inv, status: 'PAID', dueAmount: 0 }, named)).headline).toBe(
      'Invoice 1042 from Globex is paid in full — $1,200.00',
    );
    expect(said(ev('invoice.archived', { ...inv, archived: true }, named)).headline).toBe(
      'Invoice 1042 to Globex was archived (cancelled)',
    );
    expect(said(ev('invoice.updated', inv)).headline).toContain('to a customer');
  });

  it('vendors and Spend & Expense', () => {
    expect(said(ev('vendor.created', { id: '009', name: 'New Co', billCurrency: 'EUR' })).headline).toBe('New vendor: New Co');
    const tx = said(
      ev('spend.transaction.updated', {
        id: 't1',
        merchantName: 'Delta',
        amount: 412.1,
        userName: 'Priya Raman',
        transactionType: 'DECLINE',
        declineReason: 'Over budget',
      }),
    );
    expect(tx.headline).toBe('Card payment declined at Delta — $412.10 by Priya Raman');
    expect(tx.json).toContain('"command":"spend"');
    expect(said(ev('spend.reimbursement.created', { id: 'r1', amount: 36, userName: 'Tom', merchantName: 'Cab' })).headline).toBe(
      'Reimbursement request from Tom — $36.00 at Cab',
    );
  });
});

describe('hostile and sensitive data', () => {
  it('escapes names so they cannot format or link, and never shows bank, card or tax numbers', () => {
    const e = ev('payment.updated', {
      id: 'stp01x',
      status: 'FUNDING_FAILED_VOIDED',
      amount: 10,
      billIds: ['00n01abc'],
      vendor: {
        id: 'v',
        name: '**Pay [here](https://evil.example)**',
        paymentInformation: { bankAccount: { accountNumber: '000123456789', routingNumber: '021000021' } },
      },
      funding: { type: 'BANK_ACCOUNT', accountNumber: '987654321', last4: '4321' },
      additionalInfo: { taxId: '12-3456789' },
    });
    const s = said(e);
    expect(s.headline).toContain('\\*\\*Pay \\[here\\]\\(https\\://evil\\.example\\)\\*\\*');
    expect(s.summary).toContain('**Pay [here](https://evil.example)**');
    expect(s.json).not.toMatch(/000123456789|021000021|987654321|3456789|4321/);
  });
});

describe('the digest', () => {
  const bills = Array.from({ length: 9 }, (_, i) => ({
    id: `00n0${i}`,
    number: `B-${i}`,
    partyId: 'v',
    partyName: i === 0 ? 'Acme_Co' : `Vendor ${i}`,
    dueDate: '2026-03-05',
    dueAmount: 100 + i,
    currency: i === 8 ? 'EUR' : undefined,
  }));
  const content: DigestContent = {
    orgId: 'org',
    today: '2026-03-02',
    cadence: 'daily',
    dueSoon: bills,
    overdueBills: [],
    overdueInvoices: [{ id: '00e1', number: '1042', partyId: 'c', partyName: 'Globex', dueDate: '2026-02-01', dueAmount: 500 }],
    truncated: false,
    asOf: RECEIVED,
    fingerprint: 'x',
  };

  it('sums per currency, lists five rows a section, and points at the full commands', () => {
    const reply = digestCard(content, { ...fmt, note: 'Demo organisation — simulated data' });
    expect(checkCard(reply.card).problems).toEqual([]);
    expect(checkCard(reply.card).bytes).toBeLessThan(40 * 1024);
    const json = JSON.stringify(reply.card);
    expect(json).toContain('Bills due in the next 7 days: 9, $828.00 + €108.00');
    expect(json).toContain('…and 4 more: type **bills due**.');
    expect(json).toContain('Overdue bills: none');
    expect(json).toContain('Overdue invoices: 1, $500.00');
    expect(json).toContain('Acme_Co');
    expect(reply.summary).toBe('Daily digest: 9 bills due in the next 7 days, 0 overdue bills, 1 overdue invoice');
  });

  it('says when invoices are still being read', () => {
    const json = JSON.stringify(digestCard({ ...content, overdueInvoices: undefined, cadence: 'now' }, fmt).card);
    expect(json).toContain('Overdue invoices: not available yet');
  });
});

describe('BILL values a card cannot take as they are', () => {
  it('a BILL date that is no calendar day (2026-13-45) leaves the card drawable, showing no date', () => {
    const bill = {
      id: '00n01odd',
      vendorName: 'Acme',
      amount: 10,
      dueAmount: 10,
      dueDate: '2026-13-45',
      invoice: { invoiceNumber: 'B-1' },
    };
    const s = said(ev('bill.created', bill));
    expect(s.headline).toBe('New bill from Acme — $10.00, invoice B-1, due —');
    const pay = said(
      ev('payment.updated', { id: 'stp01x', amount: 5, status: 'SCHEDULED', processDate: '9999-99-99', vendor: { name: 'Acme' } }),
    );
    expect(pay.headline).toContain('Payment to Acme is scheduled for —');
  });

  it("a status BILL spells as a markdown link is shown as text, never as a link in the bot's voice", () => {
    const hostile = '[PAID](https://evil.example) *now*';
    for (const e of [
      ev('bill.updated', { id: '00n01', vendorName: 'Acme', paymentStatus: hostile, approvalStatus: hostile }),
      ev('payment.updated', { id: 'stp01', status: hostile, vendor: { name: 'Acme' } }),
      ev('invoice.updated', { id: '00e01', invoiceNumber: '1', status: hostile }),
      ev('spend.reimbursement.updated', { id: 'r1', status: hostile }),
    ]) {
      const reply = notificationCard(e, fmt);
      const texts = markdownTexts(reply.card).filter((t) => t.toLowerCase().includes('evil'));
      expect(texts.length, e.type).toBeGreaterThan(0);
      for (const t of texts) expect(liveMarkup(t), t).toEqual([]);
    }
  });
});

describe('BILL text of any length', () => {
  const long = (c: string) => c.repeat(60_000);

  it('a vendor or customer name or bill number of 60,000 characters read from BILL is cut short on a notification card, not sent as a "too large" card', () => {
    for (const e of [
      ev('invoice.updated', { id: '00e01', invoiceNumber: '1', totalAmount: 5 }, { enrichment: { customerName: long('C') } }),
      ev('bill.updated', { id: '00n01', amount: 5 }, { enrichment: { vendorName: long('V') } }),
      ev(
        'payment.updated',
        { id: 'stp01', amount: 5, billIds: ['a', 'b', 'c'], vendor: { id: 'v' } },
        { enrichment: { vendorName: long('V'), billNumbers: { a: long('1'), b: long('2'), c: long('3') } } },
      ),
    ]) {
      const s = said(e);
      expect(s.headline, e.type).toMatch(/(CCCC|VVVV)+…/);
    }
  });

  it('vendor and customer names and numbers of 60,000 characters are cut short on a digest card', () => {
    const row = (i: number) => ({
      id: `00n0${i}`,
      number: long(String(i)),
      partyId: 'v',
      partyName: long('N'),
      dueDate: '2026-03-05',
      dueAmount: 100,
    });
    const rows = Array.from({ length: 5 }, (_, i) => row(i));
    const reply = digestCard(
      {
        orgId: 'org',
        today: '2026-03-02',
        cadence: 'daily',
        dueSoon: rows,
        overdueBills: rows,
        overdueInvoices: rows,
        truncated: false,
        asOf: RECEIVED,
        fingerprint: 'x',
      },
      fmt,
    );
    expect(checkCard(reply.card).problems).toEqual([]);
    expect(checkCard(reply.card).bytes).toBeLessThan(40 * 1024);
    expect(JSON.stringify(reply.card)).toMatch(/N{100,}…/);
  });
});
