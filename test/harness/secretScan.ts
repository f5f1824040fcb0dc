// Secret scan over a test file's captured logs: every LogCapture and every secret source registers here, and
// test/setup/secret-scan.ts fails the file when any secret value shows up in any captured line.

export interface Leak {
  /** The secret, shortened to its first characters so the report itself does not leak it. */
  secret: string;
  form: 'raw' | 'json-escaped' | 'url-encoded' | 'base64';
  /** Index of the line in its capture. */
  line: number;
  /** Where the capture came from (e.g. "bot log"). */
  source: string;
}

interface Capture {
  lines: string[];
}

type SecretSource = () => Iterable<string | undefined> | Promise<Iterable<string | undefined>>;

interface ScanRegistry {
  captures: Map<Capture, string>;
  sources: Set<SecretSource>;
  /** Secret values collected so far (sources may forget values once a session ends). */
  collected: Set<string>;
}

const KEY = Symbol.for('billbridge.secretScan');

/** One registry per test file (cleared after its scan: files may share a worker); global so every import path shares it. */
function registry(): ScanRegistry {
  const g = globalThis as unknown as Record<symbol, ScanRegistry | undefined>;
  g[KEY] ??= { captures: new Map(), sources: new Set(), collected: new Set() };
  return g[KEY];
}

/** Values shorter than this are too likely to appear by chance ("test", "1234"). */
const MIN_SECRET_LENGTH = 8;

export function registerLogCapture(capture: Capture, source = 'log'): void {
  registry().captures.set(capture, source);
}

/** A function returning secret values (config secrets, sessionIds the sandbox issued, minted tokens). */
export function registerSecrets(source: SecretSource): void {
  registry().sources.add(source);
}

/** Asks every source for its current values and remembers them. */
export async function collectSecrets(): Promise<void> {
  const reg = registry();
  for (const source of reg.sources) {
    try {
      for (const v of await source()) if (typeof v === 'string' && v.length >= MIN_SECRET_LENGTH) reg.collected.add(v);
    } catch {
      // A source whose owner already shut down keeps what was collected before.
    }
  }
}

function forms(secret: string): Array<[Leak['form'], string]> {
  const out: Array<[Leak['form'], string]> = [['raw', secret]];
  const json = JSON.stringify(secret).slice(1, -1);
  if (json !== secret) out.push(['json-escaped', json]);
  const url = encodeURIComponent(secret);
  if (url !== secret) out.push(['url-encoded', url]);
  out.push(['base64', Buffer.from(secret).toString('base64').replace(/=+$/, '')]);
  return out;
}

/** Every (secret, form, line) where a secret value appears in a line. Pure. */
export function findLeaks(lines: readonly string[], secrets: Iterable<string>, source = 'log'): Leak[] {
  const leaks: Leak[] = [];
  for (const secret of secrets) {
    if (secret.length < MIN_SECRET_LENGTH) continue;
    for (const [form, needle] of forms(secret)) {
      lines.forEach((line, i) => {
        if (line.includes(needle)) leaks.push({ secret: `${secret.slice(0, 3)}…(${secret.length} chars)`, form, line: i, source });
      });
    }
  }
  return leaks;
}

/** Scans every registered capture for every collected secret. */
export async function scanRegistered(): Promise<Leak[]> {
  await collectSecrets();
  const reg = registry();
  return [...reg.captures].flatMap(([capture, source]) => findLeaks(capture.lines, reg.collected, source));
}

/** Forgets the file's captures, sources and secrets once it is scanned: the next file in the worker starts empty. */
export function clearRegistered(): void {
  (globalThis as unknown as Record<symbol, ScanRegistry | undefined>)[KEY] = undefined;
}

export function describeLeaks(leaks: Leak[]): string {
  return `secret values found in captured logs:\n${leaks
    .slice(0, 20)
    .map((l) => `  - ${l.secret} (${l.form}) in ${l.source}, line ${l.line}`)
    .join('\n')}${leaks.length > 20 ? `\n  … and ${leaks.length - 20} more` : ''}`;
}
