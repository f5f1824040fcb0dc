// `npx tsx bench/profile.ts <file.cpuprofile> [n]`: the functions with the most self time in a V8 CPU profile
// (the bench writes one per bot process when BENCH_PROFILE_DIR is set), grouped by function and file.
import { readFileSync } from 'node:fs';
import { frameArea, frameName, tally, topLines, type CallFrame } from './frames.js';

interface Node {
  id: number;
  callFrame: CallFrame;
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
const selfBy = new Map<string, number>();
// Time by package or source folder too, to see where the CPU goes at a glance.
const areaBy = new Map<string, number>();
for (const [id, us] of self) {
  const node = byId.get(id);
  if (!node) throw new Error(`${file}: sample of node ${id}, which the profile does not list`);
  const frame = node.callFrame;
  tally(selfBy, frameName(frame), us);
  tally(areaBy, frameArea(frame, `(${frame.functionName})`), us);
}
const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms`;
console.log(
  `total ${(total / 1000).toFixed(0)} ms sampled\n\nby area:\n${topLines(areaBy, 25, total, ms)}\n\nby function (self time):\n${topLines(selfBy, Number(nRaw ?? 40), total, ms)}`,
);
