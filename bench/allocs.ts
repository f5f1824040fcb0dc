// `npx tsx bench/allocs.ts <file.heapprofile> [n]`: what a billbridge process allocated (BENCH_ALLOC_DIR writes one
// per bot process, garbage included), summed by package or source folder, by allocating function and by caller chain
// (each function counted once per sample, whatever it called).
import { readFileSync } from 'node:fs';
import { frameArea, frameName, tally, topLines, type CallFrame } from './frames.js';

interface Node {
  id: number;
  callFrame: CallFrame;
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

const byArea = new Map<string, number>();
const bySelf = new Map<string, number>();
const byChain = new Map<string, number>();
let total = 0;
for (const s of profile.samples) {
  const node = byId.get(s.nodeId);
  if (!node) continue;
  total += s.size;
  tally(byArea, frameArea(node.callFrame, '(native)'), s.size);
  tally(bySelf, frameName(node.callFrame), s.size);
  const seen = new Set<string>();
  for (let n: Node | undefined = node; n && n !== profile.head; n = parent.get(n.id)) {
    const k = frameName(n.callFrame);
    if (!seen.has(k)) tally(byChain, k, s.size);
    seen.add(k);
  }
}

const MB = 1024 * 1024;
const n = Number(nRaw ?? 30);
const mb = (bytes: number) => `${(bytes / MB).toFixed(1).padStart(8)} MB`;
console.log(
  `${(total / MB).toFixed(1)} MB allocated (sampled)\n\nby area:\n${topLines(byArea, 25, total, mb)}\n\nby function (allocated there):\n${topLines(bySelf, n, total, mb)}\n\nby function (allocated there or below):\n${topLines(byChain, n, total, mb)}`,
);
