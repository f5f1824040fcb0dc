// The command line of billbridge's scripts (sandbox, bench): strict options, --help prints the help, and a bad option
// is refused with its reason and the help, exit code 2.
import { errorMessage } from '../src/errors.js';
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface CommandLine {
  values: Record<string, string | boolean | undefined>;
  /** Words that are not options (only when the program takes them). */
  positionals: string[];
  /** Prints the message and the help to stderr and exits 2. */
  fail: (message: string) => never;
  /** A whole-number option: `fallback` when absent; refused when not digits or above `max`. */
  whole: (name: string, fallback: number, max: number) => number;
}

export function commandLine(
  program: string,
  help: string,
  options: NonNullable<ParseArgsConfig['options']>,
  { allowPositionals = false } = {},
): CommandLine {
  const fail = (message: string): never => {
    process.stderr.write(`${program}: ${message}\n\n${help}\n`);
    process.exit(2);
  };
  let values: CommandLine['values'] = {};
  let positionals: string[] = [];
  try {
    ({ values, positionals } = parseArgs({
      options: { ...options, help: { type: 'boolean', short: 'h', default: false } },
      strict: true,
      allowPositionals,
    }));
  } catch (err) {
    fail(errorMessage(err));
  }
  if (values.help) {
    console.log(help);
    process.exit(0);
  }
  const whole = (name: string, fallback: number, max: number): number => {
    const raw = values[name];
    if (raw === undefined) return fallback;
    if (typeof raw !== 'string' || !/^\d+$/.test(raw.trim())) return fail(`--${name} must be a whole number, got "${String(raw)}"`);
    const n = Number(raw);
    if (n > max) fail(`--${name} must be at most ${max}, got ${n}`);
    return n;
  };
  return { values, positionals, fail, whole };
}
