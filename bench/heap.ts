// `npx tsx bench/heap.ts <file.heapsnapshot>`: what a V8 heap snapshot holds, by constructor (self size and count),
// for looking into the memory scenario's figure (BENCH_HEAP_DIR=<dir> npm run bench -- --only memory).
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: npx tsx bench/heap.ts <file.heapsnapshot>\n');
  process.exit(2);
}
const snap = JSON.parse(readFileSync(file, 'utf8')) as {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] }; node_count: number };
  nodes: number[];
  strings: string[];
};
const fields = snap.snapshot.meta.node_fields;
const types = snap.snapshot.meta.node_types[0];
const F = fields.length;
const iType = fields.indexOf('type');
const iName = fields.indexOf('name');
const iSize = fields.indexOf('self_size');
const by = new Map<string, { size: number; count: number }>();
let total = 0;
/** Field `f` of the node at `i`; a clear error where the snapshot is cut short. */
const field = (i: number, f: number): number => {
  const v = snap.nodes[i + f];
  if (v === undefined) throw new Error(`${file}: node at ${i} is cut short`);
  return v;
};
const text = (list: string[], index: number): string => {
  const s = list[index];
  if (s === undefined) throw new Error(`${file}: no string or type number ${index}`);
  return s;
};
for (let i = 0; i < snap.nodes.length; i += F) {
  const type = text(types, field(i, iType));
  const name = type === 'object' || type === 'closure' || type === 'native' ? text(snap.strings, field(i, iName)) : `(${type})`;
  const size = field(i, iSize);
  total += size;
  const e = by.get(name) ?? { size: 0, count: 0 };
  e.size += size;
  e.count++;
  by.set(name, e);
}
console.log(`total self size ${(total / 1048576).toFixed(1)} MB`);
for (const [name, e] of [...by.entries()].sort((a, b) => b[1].size - a[1].size).slice(0, 40)) {
  console.log(`${(e.size / 1048576).toFixed(1).padStart(8)} MB ${String(e.count).padStart(9)}  ${name.slice(0, 100)}`);
}
