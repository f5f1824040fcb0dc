// BILL-shaped data full of bank account and tax id numbers, and the check that none of it reaches a card.
import { expect } from 'vitest';
import { leakedValues } from '../../src/cards/redact.js';

/** Distinctive numbers: a test that finds one in a card found a leak, not a coincidence. */
export const SENSITIVE = {
  bankAccountNumber: '000123456789',
  routingNumber: '021000021',
  taxId: '98-7654321',
  vendorAccountNumber: 'ACCT-55501234',
  customerAccountNumber: 'CUST-77709876',
  ssn: '123-45-6789',
} as const;

/** A vendor as BILL v3 returns it, with every sensitive field filled in. */
export function poisonedVendor(overrides: Record<string, unknown> = {}) {
  return {
    id: '00901ABCDEFGH1234567',
    archived: false,
    name: 'Acme Office Supply',
    accountNumber: SENSITIVE.vendorAccountNumber,
    accountType: 'BUSINESS',
    email: 'ap@acme.example',
    address: { line1: '1 Main St', city: 'Springfield', stateOrProvince: 'IL', zipOrPostalCode: '62701', country: 'US' },
    paymentInformation: {
      payeeName: 'Acme Office Supply',
      payByType: 'ACH',
      bankAccount: {
        nameOnAccount: 'Acme Office Supply LLC',
        accountNumber: SENSITIVE.bankAccountNumber,
        routingNumber: SENSITIVE.routingNumber,
        type: 'CHECKING',
      },
    },
    additionalInfo: { taxId: SENSITIVE.taxId, taxIdType: 'EIN', track1099: true, leadTimeInDays: 2 },
    billCurrency: 'USD',
    balance: { amount: 1250.5 },
    createdTime: '2024-01-02T03:04:05.000+0000',
    updatedTime: '2024-01-02T03:04:05.000+0000',
    ...overrides,
  };
}

/** A customer as BILL v3 returns it, with an account number and a tax id. */
export function poisonedCustomer(overrides: Record<string, unknown> = {}) {
  return {
    id: '0cu01ABCDEFGH7654321',
    archived: false,
    name: 'Globex Corp',
    accountNumber: SENSITIVE.customerAccountNumber,
    email: 'billing@globex.example',
    additionalInfo: { taxId: SENSITIVE.ssn },
    invoiceCurrency: 'USD',
    createdTime: '2024-01-02T03:04:05.000+0000',
    updatedTime: '2024-01-02T03:04:05.000+0000',
    ...overrides,
  };
}

/** Fails with the leaked values when a card shows any sensitive value held in `data`. */
export function expectNoSensitive(card: unknown, ...data: unknown[]): void {
  const leaks = data.flatMap((d) => leakedValues(card, d));
  expect(leaks, 'bank account or tax id numbers on a card').toEqual([]);
}
