// Typed errors shared by every layer; cards/errorCards.ts turns each into exactly one user-facing card.

/** How a BILL error is handled; decided from the BDC code, never from the HTTP status alone. */
export type BillErrorCategory =
  | 'session' // BDC_1109: session invalid or expired -> re-login once
  | 'credentials' // BDC_1101/1102/1103: wrong user, password, dev key, or inactive key
  | 'hourlyLimit' // BDC_1144: 20,000/hour spent -> wait for the top of the hour
  | 'concurrencyLimit' // BDC_1322: more than 3 in flight for the org -> back off and retry
  | 'notFound' // BDC_1205 (or 404)
  | 'validation' // other 4xx: the request was wrong
  | 'rateLimited' // Spend & Expense 429
  | 'server' // 5xx
  | 'network' // no response at all (timeout, reset)
  | 'unknown';

/** An error whose `name` (in logs and audit lines) is its class's. */
export class NamedError extends Error {
  override readonly name: string = this.constructor.name;
}

/** One entry of BILL's error body: the text fields it may carry. */
export type BillErrorEntry = Partial<Record<'code' | 'severity' | 'category' | 'message' | 'timestamp', string>>;

export class BillApiError extends NamedError {
  readonly category: BillErrorCategory;
  readonly code: string | undefined;
  readonly status: number;
  readonly entries: BillErrorEntry[];
  /** When the upstream tells us to wait (BDC_1144 until the top of the hour, 429 Retry-After). */
  readonly retryAfterMs: number | undefined;
  /** Which BILL API answered: AP/AR ('bill', the default) or Spend & Expense ('spend', with its own per-minute budget). */
  readonly api: 'bill' | 'spend';

  constructor(
    args: Pick<BillApiError, 'category' | 'status'> &
      Partial<Pick<BillApiError, 'code' | 'entries' | 'retryAfterMs' | 'api'>> & { message?: string; cause?: unknown },
  ) {
    // The message is for logs: code and category, never request data or secrets.
    super(args.message ?? `BILL ${args.code ?? 'error'} (${args.category}, HTTP ${args.status})`, { cause: args.cause });
    this.category = args.category;
    this.code = args.code;
    this.status = args.status;
    this.entries = args.entries ?? [];
    this.retryAfterMs = args.retryAfterMs;
    this.api = args.api ?? 'bill';
  }
}

/** A user-supplied value that would change the meaning of a BILL filter. */
export class FilterValueError extends NamedError {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`Refused filter value for ${field}: ${reason}`);
  }
}

/** An upstream budget could not give a slot in time, or is frozen until a known moment. */
export class LimitExceeded extends NamedError {
  constructor(
    readonly budget: string,
    /** How long until trying again is worthwhile. */
    readonly retryInMs: number,
    readonly reason: 'busy' | 'hourly' | 'logins' | 'userRate' | 'throttled',
  ) {
    super(`Budget ${budget} exhausted (${reason}); retry in ${Math.ceil(retryInMs / 1000)} s`);
  }
}

/** The conversation's team is not bound to a BILL organisation. */
export class NotBound extends NamedError {
  constructor(readonly reason: 'unbound' | 'orgNotAllowed' = 'unbound') {
    super('This conversation is not bound to a BILL organisation');
  }
}

/** The activity came from a tenant that is not in ALLOWED_TENANT_IDS. */
export class TenantNotAllowed extends NamedError {
  override readonly message = 'Tenant not allowed';
}

/** The person may not do this (not an admin, not the assigned approver...). */
export class Forbidden extends NamedError {
  constructor(readonly userMessage: string) {
    super(userMessage);
  }
}

/** The person has not linked their own BILL identity (approvals), or BILL no longer accepts the token they linked. */
export class NotLinked extends NamedError {
  constructor(readonly reason: 'notLinked' | 'tokenRefused' = 'notLinked') {
    super(reason === 'tokenRefused' ? 'BILL refused the linked token' : 'Not linked to BILL');
  }
}

/** The command text was understood only partly; the card says what was understood and what to type. */
export class InputError extends NamedError {
  constructor(
    readonly userMessage: string,
    readonly hint: string,
    readonly understood?: string,
  ) {
    super(userMessage);
  }
}

/** A shared dependency (Redis) is down: answer "temporarily unavailable" and send nothing upstream. */
export class DependencyUnavailable extends NamedError {
  constructor(
    readonly dependency: string,
    cause?: unknown,
  ) {
    super(`${dependency} is unavailable`, { cause });
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** What kind of error it was, for a log line: the class name, or the type of what was thrown. */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
