// Scenario 4 — invoice lookup at scale: `invoice <number>` on an organisation with 10,000 invoices. BILL cannot
// filter invoices by number, so the first lookup builds the org's number index (every invoice once, 100 a page);
// after that a lookup costs the GET of the invoice. Measures BILL calls and latency cold, warm, after a restart
// (index read from disk) and for a number that does not exist.
import type { BenchContext } from '../context.js';
import { BotClient, channel, commandActivity, now, person } from '../load.js';
import { outcomeOf, type BotStats, type Catalog, type SandboxStats } from '../org.js';
import type { Child, SandboxInfo } from '../processes.js';
import { figure, type ScenarioResult } from '../report.js';
import { nth, Rng, summarize } from '../stats.js';

interface Lookup {
  number: string;
  ms: number;
  calls: number;
  outcome: string;
  summary: string | undefined;
  byRoute: Record<string, number>;
}

export async function invoiceLookup(ctx: BenchContext, sandbox: Child<SandboxInfo>): Promise<ScenarioResult> {
  const warmCount = ctx.opts.quick ? 10 : 100;
  const catalog = await sandbox.call<Catalog>('catalog');
  await sandbox.call('latency', ctx.opts.latencyMs);
  const rng = new Rng(ctx.opts.seed + 4);
  const numbers = rng.shuffle([...catalog.invoiceNumbers]);
  const numberAt = (i: number) => nth(numbers, i, 'invoice number');
  const serviceUrl = ctx.connector.url;
  const stateDir = ctx.stateDir('invoice');
  let seq = 0;

  /** One lookup, alone, with the BILL calls the sandbox saw while it ran. */
  const lookup = async (client: BotClient, number: string): Promise<Lookup> => {
    const before = await sandbox.call<SandboxStats>('stats');
    const i = seq++;
    const { activity, conversationId } = commandActivity(
      { text: `invoice ${number}`, who: person(i), where: channel(i, 20) },
      `inv-${Date.now()}-${i}`,
      serviceUrl,
    );
    const sent = await client.post(activity);
    const after = await sandbox.call<SandboxStats>('stats');
    const reply = ctx.connector.replies.get(conversationId);
    const byRoute: Record<string, number> = {};
    for (const [route, n] of Object.entries(after.requestsByPath)) {
      const d = n - (before.requestsByPath[route] ?? 0);
      if (d > 0) byRoute[route] = d;
    }
    return {
      number,
      ms: sent.end - sent.start,
      calls: after.requests - before.requests,
      outcome: outcomeOf(reply),
      summary: reply?.summary,
      byRoute,
    };
  };

  await sandbox.call('reset');
  let bot = await ctx.bot('invoice bot', sandbox.info, { stateDir });
  let client = new BotClient(bot.info.url, 4);
  try {
    // Cold: nothing indexed. The first lookup waits up to COMMAND_WAIT_MS for the build, then says it is indexing.
    ctx.log(`  cold: invoice ${numbers[0]} on a bot that has never seen this org`);
    const buildStart = now();
    const cold = await lookup(client, numberAt(0));
    let stats: BotStats;
    for (;;) {
      stats = await bot.call<BotStats>('stats');
      if (stats.invoiceIndex?.complete) break;
      if (now() - buildStart > 300_000) throw new Error('the invoice index was not built within 5 minutes');
      await new Promise((r) => setTimeout(r, 100));
    }
    const buildMs = now() - buildStart;
    // The build goes on to read the customer names in the background: wait until BILL sees no more calls.
    let buildStats = await sandbox.call<SandboxStats>('stats');
    for (;;) {
      await new Promise((r) => setTimeout(r, 400));
      const again = await sandbox.call<SandboxStats>('stats');
      if (again.requests === buildStats.requests) break;
      buildStats = again;
    }
    const buildCalls = buildStats.requests;
    ctx.log(
      `  index of ${stats.invoiceIndex.records} invoices built in ${(buildMs / 1000).toFixed(1)} s with ${buildCalls} BILL calls; first answer: ${cold.outcome} after ${(cold.ms / 1000).toFixed(1)} s`,
    );
    const coldAgain = await lookup(client, numberAt(0));

    // Warm: numbers nobody asked for yet (so no cached answer), one at a time.
    const warm: Lookup[] = [];
    for (const n of numbers.slice(1, 1 + warmCount)) warm.push(await lookup(client, n));
    const missing = await lookup(client, '99999999');

    // Restart: the index comes back from STATE_DIR; the first lookup signs in and reads the customer names.
    await client.close();
    await ctx.stop(bot);
    bot = await ctx.bot('invoice bot (restarted)', sandbox.info, { stateDir });
    client = new BotClient(bot.info.url, 4);
    const restarted = await lookup(client, numberAt(1 + warmCount));
    const restartedWarm = await lookup(client, numberAt(2 + warmCount));

    const warmLatency = summarize(warm.map((w) => w.ms));
    const warmCalls = warm.reduce((s, w) => s + w.calls, 0) / warm.length;
    const maxWarmCalls = Math.max(...warm.map((w) => w.calls));
    const unanswered = warm.filter((w) => w.outcome !== 'answered');
    const notes: string[] = [];
    if (unanswered.length > 0) notes.push(`${unanswered.length} warm lookups were not answered: ${nth(unanswered, 0).summary}`);
    notes.push(`cold first answer was "${(cold.summary ?? '').slice(0, 90)}"`);
    ctx.log(
      `  warm: ${warmCount} lookups, ${warmCalls.toFixed(2)} BILL calls each (max ${maxWarmCalls}), p50 ${warmLatency.p50.toFixed(0)} ms, p99 ${warmLatency.p99.toFixed(0)} ms`,
    );
    return {
      id: 'invoice',
      title: '4. Invoice lookup',
      setup: { invoices: catalog.invoiceNumbers.length, sandboxLatencyMs: ctx.opts.latencyMs, warmLookups: warmCount },
      figures: [
        figure('cold: index build time', buildMs / 1000, 's', 1),
        figure('cold: BILL calls for the build (1 login + pages + names)', buildCalls, '', 0),
        figure('cold: first answer after', cold.ms / 1000, 's', 1),
        figure('cold: same lookup once built, BILL calls', coldAgain.calls, '', 0),
        figure('warm: BILL calls per lookup (mean)', warmCalls, '', 2, { value: 1, direction: 'atMost' }),
        figure('warm: BILL calls per lookup (max)', maxWarmCalls, '', 0, { value: 1, direction: 'atMost' }),
        figure('warm: latency p50', warmLatency.p50, 'ms', 0),
        figure('warm: latency p99', warmLatency.p99, 'ms', 0),
        figure('number not in BILL: BILL calls', missing.calls, '', 0),
        figure('after a restart (index from disk): BILL calls', restarted.calls, '', 0),
        figure('after a restart, next lookup: BILL calls', restartedWarm.calls, '', 0),
      ],
      details: {
        cold,
        coldAgain,
        buildMs,
        buildCalls,
        buildByRoute: buildStats.requestsByPath,
        indexRecords: stats.invoiceIndex.records,
        warm: { latency: warmLatency, meanCalls: warmCalls, maxCalls: maxWarmCalls, byRoute: warm.map((w) => w.byRoute) },
        missing,
        restarted,
        restartedWarm,
      },
      notes,
    };
  } finally {
    await client.close();
    await ctx.stop(bot);
  }
}
