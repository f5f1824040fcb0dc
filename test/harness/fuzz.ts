// Seeded random inputs for fuzz tests: a failure prints its seed, and FUZZ_SEED=<n> replays it exactly.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Prng } from '../../src/sandbox/prng.js';

/** The sandbox's seeded PRNG (mulberry32), remembering its seed so a failure can print it. */
export class Rng extends Prng {
  constructor(readonly seed: number) {
    super(seed);
  }
}

export function fuzzSeed(fallback: number): number {
  const s = process.env.FUZZ_SEED;
  return s && /^\d+$/.test(s) ? Number(s) : fallback;
}

const NASTY_STRINGS = [
  '',
  ' ',
  'help',
  'bills due',
  'invoice 1042',
  '<at>billbridge</at> help',
  '&lt;at&gt;billbridge&lt;/at&gt; help',
  '<script>alert(1)</script>',
  '${jndi:ldap://127.0.0.1/x}',
  "'; DROP TABLE bills; --",
  '\u0000\u0001\u0002\u001f',
  '\u202e\u200b\ufeff',
  '𝕭𝖎𝖑𝖑𝖘 🧾💸',
  '%00%0a%0d',
  '../../../../etc/passwd',
  '__proto__',
  'constructor',
  'prototype',
  'NaN',
  '-0',
  '1e309',
  'null',
  '[object Object]',
  'x'.repeat(5000),
];

const KEYS = [
  'type',
  'text',
  'value',
  'id',
  'name',
  'channelData',
  'from',
  'conversation',
  'entities',
  'action',
  'data',
  'verb',
  'tenant',
  'team',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '',
];

/** A random JSON value, up to `depth` levels deep. */
export function randomJson(rng: Rng, depth = 3): unknown {
  const kind = rng.int(0, depth > 0 ? 9 : 5);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 53 + 1, -(2 ** 31), 1e308, Number.MIN_VALUE, rng.int(-1e9, 1e9)]);
    case 3:
    case 4:
      return rng.pick(NASTY_STRINGS);
    case 5:
      return String.fromCharCode(...Array.from({ length: rng.int(0, 40) }, () => rng.int(0, 0xffff)));
    case 6:
    case 7:
      return Array.from({ length: rng.int(0, 5) }, () => randomJson(rng, depth - 1));
    default: {
      const obj: Record<string, unknown> = {};
      for (let i = rng.int(0, 5); i > 0; i--) obj[rng.pick(KEYS)] = randomJson(rng, depth - 1);
      return obj;
    }
  }
}

/** Replaces, deletes or adds one field somewhere in a copy of `base` (never a field listed in `keep`). */
export function mutate(rng: Rng, base: Record<string, unknown>, keep: readonly string[] = []): Record<string, unknown> {
  const copy = structuredClone(base);
  let target: Record<string, unknown> = copy;
  // Walk down a random path of objects.
  for (let d = rng.int(0, 3); d > 0; d--) {
    const keys = Object.keys(target).filter(
      (k) => target[k] && typeof target[k] === 'object' && !Array.isArray(target[k]) && !keep.includes(k),
    );
    if (keys.length === 0) break;
    target = target[rng.pick(keys)] as Record<string, unknown>;
  }
  const keys = Object.keys(target).filter((k) => !keep.includes(k));
  const op = rng.int(0, 2);
  if (op === 0 && keys.length > 0) Reflect.deleteProperty(target, rng.pick(keys));
  else if (op === 1 && keys.length > 0) target[rng.pick(keys)] = randomJson(rng);
  else target[rng.pick(KEYS.filter((k) => !keep.includes(k)))] = randomJson(rng);
  return copy;
}

/** A JSON text nested `depth` arrays deep: "[[[...]]]". */
export function deepArrays(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** A JSON text nested `depth` objects deep: {"a":{"a":...}}. */
export function deepObjects(depth: number, key = 'a'): string {
  return `{"${key}":`.repeat(depth) + '{}' + '}'.repeat(depth);
}

/** Forces a full garbage collection (V8's gc exposed at run time), so heap figures compare like with like. */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
}
