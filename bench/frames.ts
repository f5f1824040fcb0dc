// Names for the call frames of V8's profiles (CPU and allocation), shared by bench/profile.ts and bench/allocs.ts.

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/**
 * A script's path as the profile gives it (an absolute path or a file:// URL), short: "~/<package>/…" for a
 * dependency, "src/…" for billbridge (the bench runs it compiled to build/bench/src), "bench/…" for the bench.
 */
function shortUrl(url: string): string {
  return url.replace(/^(file:\/\/)?.*?node_modules\//, '~/').replace(/^(file:\/\/)?.*?\/(build\/bench\/)?(src|bench)\//, '$3/');
}

/** "function  file:line". */
export function frameName(f: CallFrame): string {
  return `${f.functionName || '(anonymous)'}  ${shortUrl(f.url)}:${f.lineNumber + 1}`;
}

/** The package, billbridge source folder or Node module a frame belongs to; `native` for frames without a script. */
export function frameArea(f: CallFrame, native: string): string {
  const m = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(f.url) ?? /\/(src\/[^/]+)\//.exec(f.url) ?? /\/(bench)\//.exec(f.url);
  return m?.[1] ?? (f.url.startsWith('node:') ? f.url : f.url === '' ? native : 'other');
}

/** Adds `amount` to `key`'s sum. */
export function tally(sums: Map<string, number>, key: string, amount: number): void {
  sums.set(key, (sums.get(key) ?? 0) + amount);
}

/** The `n` largest sums, a line each: share of `total`, the sum as `amount` writes it, the key. */
export function topLines(sums: Map<string, number>, n: number, total: number, amount: (v: number) => string): string {
  return [...sums.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${amount(v)}  ${k}`)
    .join('\n');
}
