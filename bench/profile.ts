// `npx tsx bench/profile.ts <file.cpuprofile> [n]`: the functions with the most self time in a V8 CPU profile
// (the bench writes one per bot process when BENCH_PROFILE_DIR is set), grouped by function and file.
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

const [file, nRaw] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: npx tsx bench/profile.ts <file.cpuprofile> [top-n]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const short = (url: string) => url.replace(/^file:\/\/.*?node_modules\//, '~/').replace(/^file:\/\/.*?\/(src|bench|test)\//, '$1/');
const group = (n: Node) => `${n.callFrame.functionName || '(anonymous)'}  ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
const selfBy = new Map<string, number>();
for (const [id, us] of self) {
  const key = group(byId.get(id)!);
  selfBy.set(key, (selfBy.get(key) ?? 0) + us);
}
// Time by package or source folder, to see where the CPU goes at a glance.
const areaBy = new Map<string, number>();
for (const [id, us] of self) {
  const url = byId.get(id)!.callFrame.url;
  const m = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url) ?? /\/(src\/[^/]+|bench|test)\//.exec(url);
  const area = m ? m[1]! : url.startsWith('node:') ? url : url === '' ? `(${byId.get(id)!.callFrame.functionName})` : 'other';
  areaBy.set(area, (areaBy.get(area) ?? 0) + us);
}
const top = (m: Map<string, number>, n: number) =>
  [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`)
    .join('\n');
console.log(`total ${(total / 1000).toFixed(0)} ms sampled\n\nby area:\n${top(areaBy, 25)}\n\nby function (self time):\n${top(selfBy, Number(nRaw ?? 40))}`);
