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
    return text.replace(this.pattern, '[REDACTED]');
  }
}

/** Field names whose values are always secret, wherever they appear (two levels deep). */
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
  'Authorization',
];

export interface LoggerOptions {
  level: string;
  secrets: SecretRegistry;
  /** Where lines go; stdout by default. Tests pass a capturing stream. */
  destination?: DestinationStream;
  base?: Record<string, unknown>;
}

export function createLogger(opts: LoggerOptions): Logger {
  const paths = SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`, `headers.${f.toLowerCase()}`]);
  return pino(
    {
      level: opts.level,
      base: { app: 'billbridge', ...opts.base },
      timestamp: stdTimeFunctions.isoTime,
      redact: { paths, censor: '[REDACTED]' },
      formatters: { level: (label) => ({ level: label }) },
      hooks: {
        streamWrite: (line: string) => opts.secrets.scrub(line),
      },
    },
    opts.destination ?? destination({ dest: 1, sync: false }),
  );
}
