// Structured JSON logging (pino) that can never print a secret: field redaction plus value scrubbing.
import { pino, destination, stdTimeFunctions, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/**
 * The secret values this process knows (config secrets, live sessionIds, tokens).
 * Every log line is scrubbed of them before it is written, whatever field they hide in.
 */
export class SecretRegistry {
  private readonly values = new Set<string>();
  private pattern: RegExp | undefined;

  constructor(initial: Iterable<string> = []) {
    for (const v of initial) this.add(v);
  }

  add(value: string | undefined): void {
    if (!value || value.length < 4 || this.values.has(value)) return;
    this.values.add(value);
    this.pattern = undefined;
  }

  delete(value: string | undefined): void {
    if (value && this.values.delete(value)) this.pattern = undefined;
  }

  has(value: string): boolean {
    return this.values.has(value);
  }

  list(): string[] {
    return [...this.values];
  }

  /** Replaces every known secret (also in its JSON-escaped form) with [REDACTED]. */
  scrub(text: string): string {
    if (this.values.size === 0) return text;
    if (!this.pattern) {
      const forms = new Set<string>();
      for (const v of this.values) {
        forms.add(v);
        forms.add(JSON.stringify(v).slice(1, -1));
        forms.add(encodeURIComponent(v));
      }
      const escaped = [...forms].sort((a, b) => b.length - a.length).map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
      this.pattern = new RegExp(escaped.join('|'), 'g');
    }
    return text.replace(this.pattern, CENSOR);
  }
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
];

const SECRET_KEYS = new Set(SECRET_FIELDS.map((f) => f.toLowerCase()));

/** Levels searched for a secret field: the logged object's own fields and two levels below them. */
const REDACT_DEPTH = 3;

export const CENSOR = '[REDACTED]';

/**
 * `value` with every secret field (SECRET_FIELDS, any letter case, up to two levels below the top) censored.
 * Copy on write: an object without a secret field is returned as it is, and only the objects on the way to one are
 * copied, so the logged object itself is never changed. pino's own `redact` option did this by path (56 of them,
 * wildcards included): it parsed every path again and copied the object for every line, about a tenth of what the
 * bot allocated per command.
 */
export function redactSecretFields<T>(value: T, depth = 0): T {
  if (depth >= REDACT_DEPTH || value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const done = redactSecretFields(item, depth + 1);
      if (done !== item) (copy ??= value.slice())[i] = done;
    }
    return (copy ?? value) as T;
  }
  const record = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(record)) {
    const field = record[key];
    const done = SECRET_KEYS.has(key.toLowerCase()) ? (field === undefined ? field : CENSOR) : redactSecretFields(field, depth + 1);
    if (done !== field) (copy ??= shallowCopy(record))[key] = done;
  }
  return (copy ?? value) as T;
}

/** A copy of an object's own fields with its prototype; an error keeps its message and stack (not own-enumerable). */
function shallowCopy(o: Record<string, unknown>): Record<string, unknown> {
  const copy = Object.assign(Object.create(Object.getPrototypeOf(o) as object | null) as Record<string, unknown>, o);
  if (o instanceof Error) {
    copy.message = o.message;
    copy.stack = o.stack;
  }
  return copy;
}

export interface LoggerOptions {
  level: string;
  secrets: SecretRegistry;
  /** Where lines go; stdout by default. Tests pass a capturing stream. */
  destination?: DestinationStream;
  base?: Record<string, unknown>;
}

export function createLogger(opts: LoggerOptions): Logger {
  const root = pino(
    {
      level: opts.level,
      base: { app: 'billbridge', ...opts.base },
      timestamp: stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        // The base fields and each line's own fields; the whole line, message included, is scrubbed below.
        bindings: (bindings) => redactSecretFields(bindings),
        log: (fields) => redactSecretFields(fields),
      },
      hooks: {
        streamWrite: (line: string) => opts.secrets.scrub(line),
      },
    },
    opts.destination ?? destination({ dest: 1, sync: false }),
  );
  // pino hands a child's bound fields to no formatter (it resets `bindings` for children), so they are censored
  // here, once, when the child is made. Children inherit this, so a child's child is censored too.
  const child = root.child;
  root.child = function (this: Logger, bindings, options) {
    return child.call(this, redactSecretFields(bindings), options);
  } as Logger['child'];
  return root;
}
