// `npm run bench`: starts the BILL sandbox, billbridge and a connector stand-in as separate processes, drives
// /api/messages over HTTP through six scenarios, prints a table with each figure beside its target, and writes
// bench/results.json. `npm run bench -- --quick` runs the same scenarios smaller (under a minute).
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { commandLine } from '../tools/args.js';
import { buildChildren } from './build.js';
import { BenchConnector } from './connector.js';
import { BenchContext, type BenchOptions } from './context.js';
import { ROOT } from './processes.js';
import { renderGrid, renderTable, type ScenarioResult } from './report.js';
import { overhead } from './scenarios/overhead.js';
import { saturation } from './scenarios/saturation.js';
import { economy } from './scenarios/economy.js';
import { invoiceLookup } from './scenarios/invoiceLookup.js';
import { memory } from './scenarios/memory.js';
import { search } from './scenarios/search.js';

const SCENARIOS = ['overhead', 'saturation', 'economy', 'invoice', 'memory', 'search'] as const;
type ScenarioId = (typeof SCENARIOS)[number];

const HELP = `billbridge bench — throughput, upstream economy and limit compliance, measured on this machine.

Usage: npm run bench -- [--quick] [--only overhead,saturation,economy,invoice,memory,search] [--out bench/results.json]
                        [--latency 120] [--invoices 10000] [--bills 5000] [--log-level info] [--seed 42]

  --quick      the same scenarios, smaller (under a minute; 2,000 invoices and 1,000 bills unless given)
  --only       run some scenarios (comma-separated)
  --out        where to write the JSON results (default bench/results.json)
  --latency    ms the BILL sandbox adds to every call (default 120)
  --invoices   invoices in the sandbox organisation (default 10000)
  --bills      bills in the sandbox organisation (default 5000)
  --log-level  the bot's LOG_LEVEL (default info, as in production)
  --seed       seed of the generated load (default 42)

Environment for looking into a figure: BENCH_PROFILE_DIR (CPU profiles of the bot: the saturation burst, or the
whole process with BENCH_PROFILE_ALL=1), BENCH_HEAP_DIR (heap snapshot at the end of the memory scenario),
BENCH_LOG_DIR (every child's log lines), BENCH_BOT_EXEC_ARGV (node flags for every bot process, e.g. --expose-gc),
BENCH_BOT_NODE_OPTIONS, BENCH_CACHE_MAX_ENTRIES (the memory scenario's bot), BENCH_LIVE_HEAP=1
(with --expose-gc: the memory scenario logs the live heap at each stage), BENCH_HEAP_SPACES=1 (V8's heap spaces and
its own malloc at each memory stage), BENCH_SMAPS=1 (the bot's resident memory by kind of mapping at each stage),
BENCH_ALLOC_DIR (what each billbridge process allocated, garbage included, sampled; written when it stops),
BENCH_GC_TRACE=1 (every bot, the echo bot too, runs with V8's --trace-gc-nvp: its collections, what it allocated
and promoted, its pauses and its heap after full collections are summed and printed when it stops).
Read a profile with: npx tsx bench/profile.ts <file>, a heap snapshot with: npx tsx bench/heap.ts <file>,
an allocation profile with: npx tsx bench/allocs.ts <file>.`;

const { values, fail, whole } = commandLine('billbridge bench', HELP, {
  quick: { type: 'boolean', default: false },
  only: { type: 'string' },
  out: { type: 'string' },
  latency: { type: 'string' },
  invoices: { type: 'string' },
  bills: { type: 'string' },
  'log-level': { type: 'string' },
  seed: { type: 'string' },
});

const only = ((values.only as string | undefined) ?? SCENARIOS.join(','))
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
for (const s of only) if (!SCENARIOS.includes(s as ScenarioId)) fail(`unknown scenario "${s}"`);
const logLevel = (values['log-level'] as string | undefined) ?? 'info';
if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel))
  fail(`--log-level "${logLevel}" is not a pino level`);

const quick = values.quick === true;
const opts: BenchOptions = {
  quick,
  logLevel,
  latencyMs: whole('latency', 120, 10_000),
  // --quick: a smaller organisation too, so the number indexes build in seconds.
  invoices: whole('invoices', quick ? 2_000 : 10_000, 1_000_000),
  bills: whole('bills', quick ? 1_000 : 5_000, 1_000_000),
  seed: whole('seed', 42, 2 ** 31),
};
const out = (values.out as string | undefined) ?? join(ROOT, 'bench', 'results.json');

const say = (line: string) => process.stdout.write(`${line}\n`);
const started = Date.now();
const machine = {
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? 'unknown',
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  loadAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
};
say(
  `billbridge bench${opts.quick ? ' (quick)' : ''} — ${machine.cpus} CPU (${machine.cpuModel}), Node ${machine.node}, load average ${machine.loadAtStart.join(' ')}`,
);
say(
  `BILL sandbox: ${opts.latencyMs} ms a call, ${opts.invoices.toLocaleString('en-US')} invoices, ${opts.bills.toLocaleString('en-US')} bills; bot LOG_LEVEL=${opts.logLevel}\n`,
);

say('compiling the bot, the echo bot and the sandbox to JavaScript (build/bench/)');
if (!process.env.BENCH_NO_BUILD) await buildChildren();
const connector = await new BenchConnector().start();
const results: ScenarioResult[] = [];
const failures: Array<{ scenario: string; error: string }> = [];
const ctx = new BenchContext(opts, connector, say);
let interrupted = false;
const onSignal = () => {
  if (interrupted) process.exit(130);
  interrupted = true;
  say('\ninterrupted: stopping the bench processes');
  void ctx.cleanup().finally(() => process.exit(130));
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

try {
  const wants = (id: ScenarioId) => only.includes(id);
  // One sandbox at the scale knob for the scenarios that share it; economy and memory start their own.
  const shared = wants('overhead') || wants('saturation') || wants('invoice') || wants('search') ? await ctx.sandbox('sandbox') : undefined;
  const sharedSandbox = () => {
    if (!shared) throw new Error('the shared sandbox was not started for this scenario');
    return shared;
  };
  const steps: Array<[ScenarioId, string, () => Promise<ScenarioResult>]> = [
    ['overhead', '1. Overhead: help at rising concurrency, beside an echo bot', () => overhead(ctx, sharedSandbox())],
    ['saturation', `2. Saturation: ${opts.quick ? 150 : '1,000'} BILL-backed commands in a burst`, () => saturation(ctx, sharedSandbox())],
    ['economy', '3. Economy: a realistic hour, compressed, beside a naive client', () => economy(ctx)],
    [
      'invoice',
      `4. Invoice lookup on ${opts.invoices.toLocaleString('en-US')} invoices: cold and warm`,
      () => invoiceLookup(ctx, sharedSandbox()),
    ],
    [
      'memory',
      `5. Memory: peak RSS with the number indexes, 1,000 conversations, the large lists and every record asked`,
      () => memory(ctx),
    ],
    [
      'search',
      `6. Message-extension search on ${opts.invoices.toLocaleString('en-US')} invoices: warm, at concurrency 1 and 32`,
      () => search(ctx, sharedSandbox()),
    ],
  ];
  for (const [id, title, run] of steps) {
    if (!wants(id)) continue;
    say(title);
    const t0 = Date.now();
    try {
      const r = await run();
      results.push(r);
      for (const n of r.notes) say(`  note: ${n}`);
      say(`  (${((Date.now() - t0) / 1000).toFixed(1)} s)\n`);
    } catch (err) {
      const error = err instanceof Error ? (err.stack ?? err.message) : String(err);
      failures.push({ scenario: id, error });
      say(`  FAILED: ${error}\n`);
    }
    connector.clear();
  }
} finally {
  await ctx.cleanup();
  await connector.stop();
}

say(renderTable(results));
for (const r of results) {
  if (!r.table) continue;
  say(`\n${r.title}`);
  say(renderGrid(r.table));
}
const loadAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
const seconds = (Date.now() - started) / 1000;
say(
  `\n${results.flatMap((r) => r.figures).filter((f) => f.verdict === 'MISS').length} target(s) missed; ${seconds.toFixed(0)} s; load average at the end ${loadAtEnd.join(' ')}`,
);
writeFileSync(
  out,
  JSON.stringify(
    {
      at: new Date(started).toISOString(),
      command: `npm run bench${process.argv.length > 2 ? ' -- ' + process.argv.slice(2).join(' ') : ''}`,
      options: opts,
      machine: { ...machine, loadAtEnd },
      seconds,
      results,
      failures,
    },
    null,
    2,
  ) + '\n',
);
say(`results written to ${out}`);
process.exit(failures.length > 0 ? 1 : 0);
