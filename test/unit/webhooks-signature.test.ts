// BILL's webhook signature and payload, as documented: base64 HMAC-SHA256 of the raw body with the subscription's
// securityKey; `{metadata, <entity>}`, possibly JSON-escaped as a string. Nothing is trusted before the check.
import { createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseNotification, peekSubscriptionId, signatureDigest, signatureMatches } from '../../src/bill/webhooks.js';
import { eventTypeInfo, KINDS, parseKinds } from '../../src/notify/kinds.js';
import { paymentBillIds, projectEntity } from '../../src/notify/project.js';
import { signBody } from '../../src/sandbox/webhooks.js';

const KEY = randomBytes(32).toString('base64');
const metadata = {
  eventId: '625947c4-8e6b-48f0-ae72-ea9c9375ec27',
  subscriptionId: 'f6d06930-e3e2-4509-be37-4dbda29efc6i',
  organizationId: '00802DEVKGROHKDIY4zyx',
  eventType: 'bill.updated',
  version: '1',
};

describe('the signature', () => {
  const raw = Buffer.from(JSON.stringify({ metadata, bill: { id: '00n01abc', amount: 12.5 } }));

  it('is the base64 HMAC-SHA256 of the raw bytes, as BILL (and the sandbox) compute it', () => {
    expect(signBody(raw, KEY)).toBe(createHmac('sha256', KEY).update(raw).digest('base64'));
    const digest = signatureDigest(signBody(raw, KEY))!;
    expect(signatureMatches(raw, digest, KEY)).toBe(true);
  });

  it('does not match another key, another body, or one changed byte', () => {
    const digest = signatureDigest(signBody(raw, KEY))!;
    expect(signatureMatches(raw, digest, randomBytes(32).toString('base64'))).toBe(false);
    expect(signatureMatches(Buffer.concat([raw, Buffer.from(' ')]), digest, KEY)).toBe(false);
    const flipped = Buffer.from(raw);
    flipped[10] = flipped[10]! ^ 1;
    expect(signatureMatches(flipped, digest, KEY)).toBe(false);
    expect(signatureMatches(raw, digest, '')).toBe(false);
  });

  it('refuses headers that cannot be a signature before any key is tried', () => {
    const good = signBody(raw, KEY);
    expect(signatureDigest(undefined)).toBeUndefined();
    expect(signatureDigest([good, good])).toBeUndefined();
    expect(signatureDigest('')).toBeUndefined();
    expect(signatureDigest(good.slice(0, 20))).toBeUndefined();
    expect(signatureDigest(`${good}AAAA`)).toBeUndefined();
    expect(signatureDigest(createHmac('sha1', KEY).update(raw).digest('base64'))).toBeUndefined();
    expect(signatureDigest(createHmac('sha256', KEY).update(raw).digest('hex'))).toBeUndefined();
    // base64url spelling and surrounding spaces are the same bytes.
    expect(signatureDigest(` ${good.replace(/\+/g, '-').replace(/\//g, '_')} `)).toEqual(signatureDigest(good));
  });
});

describe('the payload', () => {
  it('reads metadata and the record of a JSON body', () => {
    const r = parseNotification(Buffer.from(JSON.stringify({ metadata, bill: { id: '00n01abc', vendorName: 'Acme' } })));
    expect(r).toEqual({
      ok: true,
      notification: { metadata, entityKey: 'bill', entity: { id: '00n01abc', vendorName: 'Acme' }, errors: [] },
    });
  });

  it('reads a payload that arrives JSON-escaped as a string, and one with a byte-order mark', () => {
    const inner = JSON.stringify({ metadata, invoice: { id: '00e01x', invoiceNumber: '1042' } });
    const wrapped = parseNotification(Buffer.from(JSON.stringify(inner)));
    expect(wrapped.ok && wrapped.notification.entity).toEqual({ id: '00e01x', invoiceNumber: '1042' });
    const bom = parseNotification(Buffer.from(`\ufeff${inner}`));
    expect(bom.ok && bom.notification.entityKey).toBe('invoice');
  });

  it("keeps the errors of an autopay.failed event (BILL's documented sample)", () => {
    const r = parseNotification(
      Buffer.from(
        JSON.stringify({
          metadata: { ...metadata, eventType: 'autopay.failed' },
          autopay: {
            vendor: { name: 'Happy Music Supplies', id: '00902BILKFECNEV2oji1' },
            createdBy: '00602NNWYXSZQYLTa41g',
            fundingAccount: { id: 'bac02TGHZUVNZYAK9phj', type: 'BANK_ACCOUNT' },
          },
          errors: [{ code: '3', message: 'Bank account is inactive.', timestamp: '2024-12-15T22:35:06.000+00:00' }],
        }),
      ),
    );
    expect(r.ok && r.notification.entityKey).toBe('autopay');
    expect(r.ok && r.notification.errors).toEqual([{ code: '3', message: 'Bank account is inactive.' }]);
  });

  it('drops prototype-polluting keys while parsing', () => {
    const r = parseNotification(
      Buffer.from(
        `{"metadata":${JSON.stringify(metadata)},"__proto__":{"polluted":1},"bill":{"id":"00n1","constructor":{"prototype":{"polluted":1}}}}`,
      ),
    );
    expect(r.ok && r.notification.entity).toEqual({ id: '00n1' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['not JSON', 'body is not JSON'],
    ['"not json inside"', 'string body does not hold JSON'],
    ['[1,2]', 'body is not a JSON object'],
    ['{"bill":{}}', 'metadata is missing'],
    [JSON.stringify({ metadata: { ...metadata, eventId: '' } }), 'metadata.eventId is missing or malformed'],
    [JSON.stringify({ metadata: { ...metadata, organizationId: 'x'.repeat(201) } }), 'metadata.organizationId is missing or malformed'],
    [JSON.stringify({ metadata: { ...metadata, eventType: 'bill.updated\n' } }), undefined],
    [JSON.stringify({ metadata: { ...metadata, subscriptionId: 'a b' } }), 'metadata.subscriptionId is missing or malformed'],
  ])('explains what is wrong with %s', (body, problem) => {
    const r = parseNotification(Buffer.from(body));
    if (problem === undefined) expect(r.ok).toBe(true);
    else expect(r).toEqual({ ok: false, problem });
  });

  it('refuses absurdly deep nesting without blowing the stack', () => {
    expect(parseNotification(Buffer.from('['.repeat(200_000) + ']'.repeat(200_000))).ok).toBe(false);
    expect(parseNotification(Buffer.from('{"a":'.repeat(100_000) + '{}' + '}'.repeat(100_000))).ok).toBe(false);
  });

  it('peeks at the subscription id only to pick the key', () => {
    expect(peekSubscriptionId(Buffer.from(JSON.stringify({ metadata: { subscriptionId: 'sub-1' } })))).toBe('sub-1');
    expect(peekSubscriptionId(Buffer.from('garbage'))).toBeUndefined();
  });
});

describe('kinds and records', () => {
  it("maps BILL's event types to what channels subscribe to", () => {
    expect(eventTypeInfo('payment.failed')).toEqual({ kind: 'payments', entity: 'payment' });
    expect(eventTypeInfo('autopay.failed')?.kind).toBe('payments');
    expect(eventTypeInfo('invoice.archived')).toEqual({ kind: 'invoices', entity: 'invoice' });
    expect(eventTypeInfo('bank-account.updated')).toBeUndefined();
    expect(eventTypeInfo('bill.updated', '2')).toBeUndefined();
    expect(eventTypeInfo('__proto__')).toBeUndefined();
    expect(KINDS.vendors.types).toEqual(['vendor.created', 'vendor.updated', 'vendor.archived', 'vendor.restored']);
  });

  it('reads the kinds people type', () => {
    expect(parseKinds(['Bills'])).toEqual(['bills']);
    expect(parseKinds(['payment,', 'invoices'])).toEqual(['invoices', 'payments']);
    expect(parseKinds(['all'])).toEqual(['bills', 'invoices', 'payments', 'vendors', 'spend']);
    expect(parseKinds(['expenses'])).toEqual(['spend']);
    expect(parseKinds(['lunch'])).toBeUndefined();
  });

  it('keeps what cards use and never bank, card or tax numbers', () => {
    const kept = projectEntity({
      id: 'stp01x',
      amount: 4200,
      status: 'FUNDING_FAILED_ACTION_NEEDED',
      billIds: ['00n01a', '00n01b'],
      vendor: { id: '00901v', name: 'Acme Supply', paymentInformation: { bankAccount: { accountNumber: '000123456789' } } },
      funding: { id: 'bac01', type: 'BANK_ACCOUNT', name: 'Operating', accountNumber: '987654321' },
      additionalInfo: { taxId: '12-3456789' },
      description: 'x'.repeat(1000),
    });
    expect(kept).toEqual({
      id: 'stp01x',
      amount: 4200,
      status: 'FUNDING_FAILED_ACTION_NEEDED',
      billIds: ['00n01a', '00n01b'],
      vendor: { id: '00901v', name: 'Acme Supply' },
      description: `${'x'.repeat(299)}…`,
    });
    expect(JSON.stringify(kept)).not.toMatch(/987654321|000123456789|3456789/);
    expect(paymentBillIds({ billPayments: [{ billId: '00n01c' }], billId: '00n01c' })).toEqual(['00n01c']);
    expect(paymentBillIds(kept)).toEqual(['00n01a', '00n01b']);
  });
});
