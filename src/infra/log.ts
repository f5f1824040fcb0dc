// Structured JSON logging (pino) that can never print a secret: field redaction plus value scrubbing.
import { pino, destination, stdTimeFunctions, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/** At most this many secret values are known at once (config secrets, webhook keys, live sessions, tokens: tens in practice). */
export const MAX_SECRETS = 1_000;
/** Longer values are refused: a Graph token (a JWT) is about 2,000 characters; nothing we hold is near this. */
export const MAX_SECRET_LENGTH = 8_192;
/** Shorter values would censor ordinary words. */
const MIN_SECRET_LENGTH = 4;

/**
 * The secret values this process holds (config secrets, live sessionIds, tokens it obtained); every log line is
 * scrubbed of them. Never text a person typed: their words would censor the same words everywhere. Bounded
 * (MAX_SECRETS values of at most MAX_SECRET_LENGTH characters); scrubbing is plain string search, which cannot fail.
 */
export class SecretRegistry {
  /** Each value and when it stops being scrubbed (ms since epoch); undefined: for the life of the process (configuration). */
  private readonly values = new Map<string, number | undefined>();
  /** Every form of every value, longest first (a value containing another is censored whole). */
  private forms: string[] | undefined;
  private readonly now: () => number;

  constructor(initial: Iterable<string | undefined> = [], opts: { now?: () => number } = {}) {
    this.now = opts.now ?? Date.now;
    for (const v of initial) this.add(v);
  }

  /**
   * Scrubs `value` from every later line: for the life of the process, or with `ttlMs` until that long after it was
   * last added. False when refused: too short, too long, or the registry is full of values that are not about to end.
   */
  add(value: string | undefined, ttlMs?: number): boolean {
    if (value === undefined || value.length < MIN_SECRET_LENGTH || value.length > MAX_SECRET_LENGTH) return false;
    const expiresAt = ttlMs === undefined ? undefined : this.now() + Math.max(0, ttlMs);
    if (this.values.has(value)) {
      // A value configured for good stays for good; one obtained again lives on from now.
      const known = this.values.get(value);
      if (known !== undefined) this.values.set(value, expiresAt === undefined ? undefined : Math.max(known, expiresAt));
      return true;
    }
    this.expire();
    if (this.values.size >= MAX_SECRETS) {
      // Full: the run-time value closest to its end of life makes room; configuration is never evicted.
      let victim: [string, number] | undefined;
      for (const [v, at] of this.values) if (at !== undefined && at < (victim?.[1] ?? Infinity)) victim = [v, at];
      if (!victim) return false;
      this.values.delete(victim[0]);
    }
    this.values.set(value, expiresAt);
    this.forms = undefined;
    return true;
  }

  delete(value: string | undefined): void {
    if (value && this.values.delete(value)) this.forms = undefined;
  }

  list(): string[] {
    this.expire();
    return [...this.values.keys()];
  }

  /** Censors every known secret (as is, JSON-escaped, URL-encoded) and any URL's user name and password. Never throws. */
  scrub(text: string): string {
    this.expire();
    let out = withoutUrlCredentials(text);
    if (this.values.size === 0) return out;
    this.forms ??= [...new Set([...this.values.keys()].flatMap(formsOf))].sort((a, b) => b.length - a.length);
    for (const form of this.forms) if (out.includes(form)) out = out.split(form).join(CENSOR);
    return out;
  }

  /** Forgets the run-time values whose end of life has passed. */
  private expire(): void {
    const now = this.now();
    for (const [value, at] of this.values) if (at !== undefined && at <= now) this.delete(value);
  }
}

/** The forms a value takes in a JSON line: as is, JSON-escaped, URL-encoded (a value with a lone surrogate has none). */
function formsOf(value: string): string[] {
  const forms = [value, JSON.stringify(value).slice(1, -1)];
  try {
    forms.push(encodeURIComponent(value));
  } catch {
    // It cannot appear in a URL-encoded form either.
  }
  return forms;
}

/** Field names whose values are always secret, wherever they appear (two levels deep), in any letter case. */
const SECRET_FIELDS = [
  'password',
  'devKey',
  'sessionId',
  'apiToken',
  'appPassword',
  'MicrosoftAppPassword',
  'securityKey',
  'secret',
  'token',
  'accessToken',
  'access_token',
  'client_secret',
  'authorization',
  // The connect form's inputs (CONNECT_INPUTS): a person's BILL token is censored by its field, never by its value.
  'billTokenName',
  'billTokenValue',
];

const SECRET_KEYS = new Set(SECRET_FIELDS.map((f) => f.toLowerCase()));

/** Levels searched for a secret field: the logged object's own fields and two levels below them. */
const REDACT_DEPTH = 3;

export const CENSOR = '[REDACTED]';

/** A URL's user name and password (scheme://user:password@host): secret wherever they were typed or read. */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi;

/** The text with every URL's user name and password replaced by [REDACTED]. */
export function withoutUrlCredentials(text: string): string {
  return text.includes('://') ? text.replace(URL_CREDENTIALS, `$1${CENSOR}@`) : text;
}

/** `value` with every secret field censored, copied on write: an object without one is returned as it is. */
export function redactSecretFields<T>(value: T, depth = 0): T {
  if (depth >= REDACT_DEPTH || value === null || typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const [key, field] of Object.entries(record)) {
    const done = SECRET_KEYS.has(key.toLowerCase()) && field !== undefined ? CENSOR : redactSecretFields(field, depth + 1);
    if (done !== field) (copy ??= Object.assign(Array.isArray(value) ? [] : {}, record))[key] = done;
  }
  return (copy ?? value) as T;
}

/** A line that may carry a secret field: only those are parsed and censored (most lines carry none). */
const SECRET_FIELD_IN_LINE = new RegExp(`"(?:${SECRET_FIELDS.join('|')})":`, 'i');

/** A written JSON line with its secret fields censored (own, base and child-bound fields alike, through `streamWrite`). */
function censorLine(line: string): string {
  if (!SECRET_FIELD_IN_LINE.test(line)) return line;
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return line;
  }
  const censored = redactSecretFields(record);
  return censored === record ? line : `${JSON.stringify(censored)}\n`;
}

/** `destination`: where lines go; stdout by default (tests pass a capturing stream). */
export function createLogger(opts: { level: string; secrets: SecretRegistry; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: opts.level,
      base: { app: 'billbridge' },
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      // The whole line, message and child bindings included: secret fields by name, then known secret values.
      hooks: { streamWrite: (line: string) => opts.secrets.scrub(censorLine(line)) },
    },
    opts.destination ?? destination({ dest: 1, sync: false }),
  );
}
