// `npx tsx bench/allocs.ts <file.heapprofile> [n]`: what a billbridge process allocated (BENCH_ALLOC_DIR writes one
// per bot process, garbage included), summed by package or source folder, by allocating function and by caller chain
// (each function counted once per sample, whatever it called).
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: Node[];
}

const [file, nRaw] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: npx tsx bench/allocs.ts <file.heapprofile> [top-n]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: Node; samples: Array<{ size: number; nodeId: number }> };
const byId = new Map<number, Node>();
const parent = new Map<number, Node | undefined>();
const walk = (n: Node, up: Node | undefined): void => {
  byId.set(n.id, n);
  parent.set(n.id, up);
  for (const c of n.children) walk(c, n);
};
walk(profile.head, undefined);

// Paths as the profile gives them (absolute, or file:// URLs); the bench runs billbridge compiled to build/bench/src.
const short = (url: string) => url.replace(/^(file:\/\/)?.*?node_modules\//, '~/').replace(/^(file:\/\/)?.*?\/(build\/bench\/)?(src|bench)\//, '$3/');
const fn = (n: Node) => `${n.callFrame.functionName || '(anonymous)'}  ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
const area = (n: Node) => {
  const url = n.callFrame.url;
  const m = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url) ?? /\/(src\/[^/]+)\//.exec(url) ?? /\/(bench)\//.exec(url);
  return m ? m[1]! : url.startsWith('node:') ? url : url === '' ? '(native)' : 'other';
};
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);

const byArea = new Map<string, number>();
const bySelf = new Map<string, number>();
const byChain = new Map<string, number>();
let total = 0;
for (const s of profile.samples) {
  const node = byId.get(s.nodeId);
  if (!node) continue;
  total += s.size;
  add(byArea, area(node), s.size);
  add(bySelf, fn(node), s.size);
  const seen = new Set<string>();
  for (let n: Node | undefined = node; n && n !== profile.head; n = parent.get(n.id)) {
    const k = fn(n);
    if (!seen.has(k)) add(byChain, k, s.size);
    seen.add(k);
  }
}

const MB = 1024 * 1024;
const n = Number(nRaw ?? 30);
const top = (m: Map<string, number>, k: number) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([name, bytes]) => `${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${(bytes / MB).toFixed(1).padStart(8)} MB  ${name}`)
    .join('\n');
console.log(`${(total / MB).toFixed(1)} MB allocated (sampled)\n\nby area:\n${top(byArea, 25)}\n\nby function (allocated there):\n${top(bySelf, n)}\n\nby function (allocated there or below):\n${top(byChain, n)}`);
