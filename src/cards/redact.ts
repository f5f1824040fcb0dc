// Keeps bank and tax numbers off cards and shortens identifiers that must appear ("…1234"); pure, no I/O.

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

function isSensitiveField(name: string): boolean {
  return SENSITIVE_FIELDS.has(name.toLowerCase());
}

/** "…1234": the end of an identifier that must appear (a BILL id, a card's last digits). Short ids are masked whole. */
export function shortId(id: string, keep = 4): string {
  const s = id.trim();
  if (s === '') return '';
  if (s.length <= keep) return '…';
  return `…${s.slice(-keep)}`;
}

/** A deep copy of upstream data with every sensitive field removed, for card builders that take whole objects. */
export function withoutSensitive<T>(data: T): T {
  const walk = (v: unknown, depth: number): unknown => {
    if (depth > 50 || v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      if (!isSensitiveField(k)) out[k] = walk(x, depth + 1);
    }
    return out;
  };
  return walk(data, 0) as T;
}

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
      if (isSensitiveField(k)) collect(x, depth + 1);
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
