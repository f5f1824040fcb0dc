// Scenario 5 — memory: the bot process's peak resident set size (VmHWM from /proc) after it has built the number
// indexes of an organisation with 10,000 invoices and 5,000 bills, stored 1,000 conversation references (installs
// into 1,000 teams), answered the large lists and then single records (every bill by BILL id and every invoice by
// number: the mirror answers them once it holds every record, so the answer cache keeps only what it does not hold,
// and stops at CACHE_MAX_ENTRIES). The bot runs as `npm start` runs it. The full run does it twice: once as on
// this machine, where V8 may grow its heap to a few times what is live before collecting, and once with the heap
// limit Node gives itself in a 512 MB container (it reads the cgroup's memory limit: 259 MB there, measured), where
// V8 grows its heap far less eagerly.
import type { BenchContext } from '../context.js';
import { BotClient, channel, commandActivity, installActivity, person, type Sent } from '../load.js';
import { warmIndexes, type BotStats, type Catalog } from '../org.js';
import { startEchoProcess, startFlags, type Child } from '../processes.js';
import { figure, type ScenarioResult } from '../report.js';
import { boundedAll, nth, Rng } from '../stats.js';

const MB = 1024 * 1024;

/** The child's peak and current RSS; the scenario's figure, so a clear error where /proc cannot be read. */
function memoryOf(child: Child): { peakRss: number; rss: number } {
  const m = child.memory();
  if (!m) throw new Error(`cannot read the memory of ${child.name} from /proc/${child.pid}/status`);
  return m;
}

/** The old-generation limit (MB) node 20 sets itself under a 512 MB cgroup memory limit (measured: 259 MB). */
const CONTAINER_512_HEAP_MB = 256;

interface Pass {
  label: string;
  env: Record<string, string>;
  peakRss: number;
  rss: number;
  stored: number;
  final: BotStats;
  stages: Stage[];
  bounds: { maxEntries: number };
  /** The most entries the cache held at any reading (the entry bound, once reached). */
  highestEntries: number;
  /** What the pass sent, for the echo bot's pass to send again. */
  stream: Stream;
  /** The echo bot given the same activities under the same node flags and NODE_OPTIONS: the framework's own share. */
  echo?: { peakRss: number; rss: number; seconds: number };
}

/** The activities a pass sent after the indexes were built, in order, with the concurrency each part was sent at. */
interface Stream {
  installs: number;
  lists: string[];
  records: string[];
}

interface Stage {
  stage: string;
  seconds: number;
  peakRss: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  cacheEntries: number;
}

export async function memory(ctx: BenchContext): Promise<ScenarioResult> {
  const conversations = 1_000;
  // Memory does not depend on BILL's latency: the sandbox answers at once so the cache fills quickly.
  const sandbox = await ctx.sandbox('memory sandbox', { latencyMs: 0 });
  try {
    const catalog = await sandbox.call<Catalog>('catalog');
    // The defaults unless looking into the figure: BENCH_BOT_NODE_OPTIONS (e.g. --max-old-space-size=160) and
    // BENCH_CACHE_MAX_ENTRIES for the bot's CACHE_MAX_ENTRIES.
    const env: Record<string, string> = {};
    if (process.env.BENCH_BOT_NODE_OPTIONS) env.NODE_OPTIONS = process.env.BENCH_BOT_NODE_OPTIONS;
    if (process.env.BENCH_CACHE_MAX_ENTRIES) env.CACHE_MAX_ENTRIES = process.env.BENCH_CACHE_MAX_ENTRIES;
    const passes = [
      await pass(
        ctx,
        sandbox,
        catalog,
        conversations,
        env.NODE_OPTIONS ? `with NODE_OPTIONS=${env.NODE_OPTIONS}` : 'as npm start runs here',
        env,
      ),
    ];
    if (!ctx.opts.quick && !process.env.BENCH_BOT_NODE_OPTIONS) {
      passes.push(
        await pass(ctx, sandbox, catalog, conversations, 'heap limit of a 512 MB container', {
          ...env,
          NODE_OPTIONS: `--max-old-space-size=${CONTAINER_512_HEAP_MB}`,
        }),
      );
    }
    // The baseline: the same activities at the echo bot, under the same flags, so that what the framework alone takes
    // (botbuilder, restify, node) stands beside what billbridge takes with its data.
    for (const p of passes) p.echo = await echoPass(ctx, p);
    const [main] = passes as [Pass, ...Pass[]];
    const s = main.final;
    const notes: string[] = [];
    for (const p of passes) {
      if (p.stored < conversations) notes.push(`${p.label}: only ${p.stored} of ${conversations} conversations were stored`);
      if (p.highestEntries < p.bounds.maxEntries)
        notes.push(
          `${p.label}: the cache did not reach its bound (at most ${p.highestEntries} of ${p.bounds.maxEntries} entries) after ${p.stream.records.length} single records and ${p.stream.lists.length} lists were asked`,
        );
    }
    notes.push(`cache bound: ${main.bounds.maxEntries} entries`);
    return {
      id: 'memory',
      title: '5. Memory',
      setup: {
        invoices: ctx.opts.invoices,
        bills: ctx.opts.bills,
        conversations,
        cacheMaxEntries: main.bounds.maxEntries,
        passes: passes.map((p) => ({ label: p.label, env: p.env })),
      },
      figures: [
        ...passes.map((p) => figure(`peak RSS (VmHWM), ${p.label}`, p.peakRss / MB, 'MB', 0)),
        // Memory is read against the echo bot given the same activities (issue #23): at most 1.5x its peak as the bot
        // runs by default, and at most 60 MB above it under a 512 MB container's heap limit.
        ...passes.flatMap((p, i) =>
          p.echo
            ? [
                figure(`echo bot's peak RSS, the same activities, ${p.label}`, p.echo.peakRss / MB, 'MB', 0),
                figure(
                  `peak RSS, ours / echo bot's, ${p.label}`,
                  p.peakRss / p.echo.peakRss,
                  'x',
                  2,
                  i === 0 ? { value: 1.5, direction: 'atMost' } : undefined,
                ),
                figure(
                  `own share of peak RSS (ours - echo bot's), ${p.label}`,
                  (p.peakRss - p.echo.peakRss) / MB,
                  'MB',
                  0,
                  i > 0 ? { value: 60, direction: 'atMost' } : undefined,
                ),
              ]
            : [],
        ),
        figure('RSS at the end', main.rss / MB, 'MB', 0),
        figure('invoices / bills indexed', s.invoiceIndex?.records ?? 0, `/ ${s.billIndex?.records ?? 0}`, 0),
        figure('conversations stored', main.stored, '', 0),
        figure('cache entries at their highest / at the end', main.highestEntries, `/ ${s.cache.entries}`, 0),
      ],
      // The commands each pass sent are counted, not listed (they would be most of results.json).
      details: {
        passes: passes.map(({ stream, ...p }) => ({
          ...p,
          stream: { installs: stream.installs, lists: stream.lists.length, records: stream.records.length },
        })),
      },
      notes,
      table: [
        ['pass', 'stage', 's', 'RSS MB', 'peak MB', 'heap used/total MB', 'cache entries'],
        ...passes.flatMap((p) => [
          ...p.stages.map((x, i) => [
            i === 0 ? p.label : '',
            x.stage,
            x.seconds.toFixed(0),
            (x.rss / MB).toFixed(0),
            (x.peakRss / MB).toFixed(0),
            `${(x.heapUsed / MB).toFixed(0)}/${(x.heapTotal / MB).toFixed(0)}`,
            String(x.cacheEntries),
          ]),
          ...(p.echo
            ? [
                [
                  '',
                  'echo bot, the same activities',
                  p.echo.seconds.toFixed(0),
                  (p.echo.rss / MB).toFixed(0),
                  (p.echo.peakRss / MB).toFixed(0),
                  '',
                  '',
                ],
              ]
            : []),
        ]),
      ],
    };
  } finally {
    await ctx.stop(sandbox);
  }
}

/** One bot from start to a full cache, its memory read at each stage. */
async function pass(
  ctx: BenchContext,
  sandbox: Awaited<ReturnType<BenchContext['sandbox']>>,
  catalog: Catalog,
  conversations: number,
  label: string,
  env: Record<string, string>,
): Promise<Pass> {
  ctx.log(`  pass: ${label}${env.NODE_OPTIONS ? ` (NODE_OPTIONS=${env.NODE_OPTIONS})` : ''}`);
  const bot = await ctx.bot(`memory bot`, sandbox.info, { env });
  const client = new BotClient(bot.info.url, 32);
  const serviceUrl = ctx.connector.url;
  const rng = new Rng(ctx.opts.seed + 5);
  const ask = asker(client, serviceUrl, 'mem');
  const stages: Stage[] = [];
  const t0 = Date.now();
  const mark = async (stage: string) => {
    const s = await bot.call<BotStats>('stats');
    // BENCH_LIVE_HEAP=1 with BENCH_BOT_EXEC_ARGV=--expose-gc: the live heap at each stage (what is held, not garbage).
    const live = process.env.BENCH_LIVE_HEAP ? await bot.call<number | null>('liveHeap') : null;
    if (live !== null) ctx.log(`  live heap after a full collection: ${(live / MB).toFixed(1)} MB`);
    if (process.env.BENCH_HEAP_SPACES) {
      const x = s as { heapSpaces?: Array<{ space: string; size: number; used: number }>; malloced?: { now: number; peak: number } };
      ctx.log(
        `  heap spaces (MB size/used): ${x.heapSpaces?.map((h) => `${h.space.replace('_space', '')} ${(h.size / MB).toFixed(0)}/${(h.used / MB).toFixed(0)}`).join(', ')}; V8 malloc ${((x.malloced?.now ?? 0) / MB).toFixed(0)} MB (peak ${((x.malloced?.peak ?? 0) / MB).toFixed(0)})`,
      );
    }
    if (process.env.BENCH_SMAPS) {
      const byKind = await bot.call<Record<string, number>>('mappings');
      ctx.log(
        `  resident by mapping (MB): ${Object.entries(byKind)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${v.toFixed(0)}`)
          .join(', ')}`,
      );
    }
    const m = bot.memory();
    stages.push({
      stage,
      seconds: (Date.now() - t0) / 1000,
      peakRss: m?.peakRss ?? Number.NaN,
      rss: m?.rss ?? Number.NaN,
      heapUsed: s.memory.heapUsed,
      heapTotal: s.memory.heapTotal,
      external: s.memory.external,
      cacheEntries: s.cache.entries,
    });
    ctx.log(
      `  ${((Date.now() - t0) / 1000).toFixed(1)} s ${stage}: RSS ${((m?.rss ?? 0) / MB).toFixed(0)} MB (peak ${((m?.peakRss ?? 0) / MB).toFixed(0)} MB), heap ${(s.memory.heapUsed / MB).toFixed(0)}/${(s.memory.heapTotal / MB).toFixed(0)} MB, external ${(s.memory.external / MB).toFixed(0)} MB, cache ${s.cache.entries} entries`,
    );
    return s;
  };
  try {
    const bounds = (await mark('started')).cacheBounds;
    await warmIndexes(bot, client, serviceUrl, catalog);
    await mark('number indexes built');

    await boundedAll(conversations, 16, (t) => client.post(installActivity(t, serviceUrl)));
    const stored = await bot.call<number>('conversations');
    await mark(`${stored} conversations stored`);

    // Large answers first, until the byte bound is reached: every "bills due N", vendors and customers in full.
    const big = [
      ...Array.from({ length: 91 }, (_, d) => `bills due ${d}`),
      ...rng.shuffle([...catalog.vendors]).map((v) => `vendor ${v}`),
      ...rng.shuffle([...catalog.customers]).map((c) => `customer ${c}`),
      ...Array.from({ length: 50 }, (_, n) => `payments ${n + 1}`),
    ];
    await boundedAll(big.length, 8, (i) => ask(nth(big, i)));
    const asked: string[] = [];
    let s = await mark('large lists asked');
    // Then single records until the entry bound is reached.
    const records = [
      ...rng.shuffle(catalog.bills.map((b) => `bill ${b.id}`)),
      ...rng.shuffle([...catalog.invoiceNumbers]).map((n) => `invoice ${n}`),
    ];
    let next = 0;
    // --quick asks for at most 1,000 records (its smaller organisation cannot fill the cache anyway).
    const maxRecords = ctx.opts.quick ? 1_000 : records.length;
    let highestEntries = s.cache.entries;
    while (s.cache.entries < bounds.maxEntries && next < maxRecords) {
      const batch = records.slice(next, Math.min(maxRecords, next + 500));
      next += batch.length;
      asked.push(...batch);
      await boundedAll(batch.length, 16, (i) => ask(nth(batch, i)));
      s = await bot.call<BotStats>('stats');
      highestEntries = Math.max(highestEntries, s.cache.entries);
    }
    // Entries whose time to live has run out (lists, names) may have gone by the last reading.
    s = await mark('single records asked');
    highestEntries = Math.max(highestEntries, s.cache.entries);
    // BENCH_HEAP_DIR: a heap snapshot of the bot at the end, to see what holds the memory.
    if (process.env.BENCH_HEAP_DIR)
      ctx.log(`  heap snapshot: ${await bot.call<string>('heapSnapshot', process.env.BENCH_HEAP_DIR, 300_000)}`);
    const m = memoryOf(bot);
    return {
      label,
      env,
      peakRss: m.peakRss,
      rss: m.rss,
      stored,
      final: s,
      stages,
      bounds,
      highestEntries,
      stream: { installs: conversations, lists: big, records: asked },
    };
  } finally {
    await client.close();
    await ctx.stop(bot);
  }
}

/**
 * The echo bot given what a billbridge pass sent after its indexes were built (the installs, the list commands and
 * the single-record commands, at the same concurrency), under billbridge's node flags and the pass's NODE_OPTIONS.
 * It answers each with "Echo: <text>", so its peak RSS is what botbuilder, restify and node take for that traffic.
 */
async function echoPass(ctx: BenchContext, p: Pass): Promise<{ peakRss: number; rss: number; seconds: number }> {
  const echo = ctx.track(
    await startEchoProcess('memory echo bot', {
      nodeFlags: startFlags(),
      env: p.env.NODE_OPTIONS ? { NODE_OPTIONS: p.env.NODE_OPTIONS } : {},
    }),
  );
  const client = new BotClient(echo.info.url, 32);
  const serviceUrl = ctx.connector.url;
  const t0 = Date.now();
  const send = asker(client, serviceUrl, 'mem-echo');
  let failed = 0;
  const ask = async (text: string) => {
    if ((await send(text)).status !== 200) failed++;
  };
  try {
    const { installs, lists, records } = p.stream;
    await boundedAll(installs, 16, async (t) => {
      if ((await client.post(installActivity(t, serviceUrl))).status !== 200) failed++;
    });
    await boundedAll(lists.length, 8, (i) => ask(nth(lists, i)));
    await boundedAll(records.length, 16, (i) => ask(nth(records, i)));
    if (failed > 0)
      throw new Error(`the echo bot did not answer ${failed} of ${installs + lists.length + records.length} activities with 200`);
    const m = memoryOf(echo);
    ctx.log(
      `  echo bot, ${p.label}, the same ${installs + lists.length + records.length} activities: peak RSS ${(m.peakRss / MB).toFixed(0)} MB (billbridge ${(p.peakRss / MB).toFixed(0)} MB)`,
    );
    return { peakRss: m.peakRss, rss: m.rss, seconds: (Date.now() - t0) / 1000 };
  } finally {
    await client.close();
    await ctx.stop(echo);
  }
}

/** Sends each command text from its own person into one of 2,000 channels, so per-person and per-channel limits stay out of the way. */
function asker(client: BotClient, serviceUrl: string, tag: string): (text: string) => Promise<Sent> {
  let seq = 0;
  return (text) => {
    const i = seq++;
    return client.post(commandActivity({ text, who: person(200_000 + i), where: channel(i, 2_000) }, `${tag}-${i}`, serviceUrl).activity);
  };
}
