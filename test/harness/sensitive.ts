// BILL-shaped data full of bank account and tax id numbers, and the check that none of it reaches a card.
import { expect } from 'vitest';

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

/**
 * Field names (compared case-insensitively, anywhere in an object) whose values never go on a card: bank
 * accounts (BILL vendors carry paymentInformation.bankAccount), routing numbers, tax ids (additionalInfo.taxId),
 * the account number a vendor or customer keeps for the organisation, card numbers.
 */
const SENSITIVE_FIELDS: ReadonlySet<string> = new Set(
  [
    'accountNumber',
    'bankAccount',
    'bankAccountNumber',
    'routingNumber',
    'nameOnAccount',
    'iban',
    'swift',
    'bic',
    'taxId',
    'tin',
    'ssn',
    'ein',
    'cardNumber',
    'last4',
  ].map((f) => f.toLowerCase()),
);

/** Every value (strings and numbers, at any depth) held under a sensitive field of `data`. */
export function sensitiveValues(data: unknown): string[] {
  const found = new Set<string>();
  const collect = (v: unknown, depth: number): void => {
    if (depth > 50 || v === null || v === undefined) return;
    if (typeof v === 'string' || typeof v === 'number') {
      const s = String(v).trim();
      if (s.length >= 4) found.add(s);
      return;
    }
    if (typeof v === 'object') for (const x of Object.values(v)) collect(x, depth + 1);
  };
  const walk = (v: unknown, depth: number): void => {
    if (depth > 50 || v === null || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (SENSITIVE_FIELDS.has(k.toLowerCase())) collect(x, depth + 1);
      else walk(x, depth + 1);
    }
  };
  walk(data, 0);
  return [...found];
}

/**
 * The sensitive values of `data` that show up in `card` (its JSON), also when only their digits do
 * ("12-3456789" shown as "123456789", or the other way round). Empty means the card is clean.
 */
export function leakedValues(card: unknown, data: unknown): string[] {
  // JSON.stringify answers undefined for undefined (and functions), which its declared type leaves out.
  const text = (JSON.stringify(card) as string | undefined) ?? '';
  // Digit runs with separators between digits taken out ("12-345 6789" -> "123456789").
  const runs = text.replace(/(\d)[\s\-./]+(?=\d)/g, '$1').match(/\d+/g) ?? [];
  return sensitiveValues(data).filter((value) => {
    if (text.includes(value)) return true;
    const d = value.replace(/\D/g, '');
    // Five digits or more are specific enough to be the number itself, however it is formatted.
    return d.length >= 5 && runs.some((r) => r.includes(d));
  });
}
