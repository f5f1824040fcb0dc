// Scenario 2 — saturation: 1,000 BILL-backed commands at once from 250 people in 200 channels, each asking for a
// different record (so the cache and shared loads cannot make them free), against a BILL that allows 3 calls in
// flight at 120 ms each. Once warm the org's mirror answers lookups without BILL, so a third of the burst is Refresh
// clicks on bill cards (each reads its bill from BILL), which keeps the limiter, not the mirror, under test. Measures how fast the bot drains the burst, that every command is answered or told "busy"
// within Teams' 15 s, that BILL never sees a 4th call in flight, and how full the 3 slots were kept.
import type { BenchContext } from '../context.js';
import { BotClient, channel, commandActivity, now, person, type Command } from '../load.js';
import { billCalls, outcomeOf, tally, uniqueBillNumbers, warmIndexes, type BotStats, type Catalog, type SandboxStats } from '../org.js';
import type { Child, SandboxInfo } from '../processes.js';
import { figure, type ScenarioResult } from '../report.js';
import { meanOpenPerBucket, nth, Rng, summarize, utilisation, type Interval } from '../stats.js';

/** BILL's concurrent-request limit per org, which the bot's LIMIT_BILL_CONCURRENCY default matches. */
const BILL_CONCURRENCY = 3;
const TEAMS_DEADLINE_MS = 15_000;

/** The burst's mix: each kind asks about distinct records. Weights sum to 100. */
const MIX: Array<[kind: string, weight: number]> = [
  ['Refresh on bill <id>', 35],
  ['invoice <number>', 25],
  ['bill <vendor invoice number>', 10],
  ['vendor <name>', 10],
  ['customer <name>', 10],
  ['payments <n>', 5],
  ['bills due <days>', 5],
];

function burstCommands(catalog: Catalog, count: number, rng: Rng): Array<{ kind: string; text: string; refresh?: boolean }> {
  const billIds = rng.shuffle(catalog.bills.map((b) => b.id));
  const invoices = rng.shuffle([...catalog.invoiceNumbers]);
  const billNumbers = rng.shuffle(uniqueBillNumbers(catalog).map((b) => b.number));
  const vendors = rng.shuffle([...catalog.vendors]);
  const customers = rng.shuffle([...catalog.customers]);
  const payments = rng.shuffle(Array.from({ length: 50 }, (_, i) => i + 1));
  const days = rng.shuffle(Array.from({ length: 91 }, (_, i) => i));
  const used: Record<string, number> = {};
  const take = <T>(kind: string, xs: T[]): T => {
    const n = (used[kind] ?? -1) + 1;
    used[kind] = n;
    return nth(xs, n % xs.length, kind);
  };
  const out: Array<{ kind: string; text: string; refresh?: boolean }> = [];
  for (let i = 0; i < count; i++) {
    const [kind] = nth(MIX, rng.weightedIndex(MIX.map(([, w]) => w)), 'command kind');
    const text =
      kind === 'Refresh on bill <id>'
        ? `bill ${take(kind, billIds)}`
        : kind === 'invoice <number>'
          ? `invoice ${take(kind, invoices)}`
          : kind === 'bill <vendor invoice number>'
            ? `bill ${take(kind, billNumbers)}`
            : kind === 'vendor <name>'
              ? `vendor ${take(kind, vendors)}`
              : kind === 'customer <name>'
                ? `customer ${take(kind, customers)}`
                : kind === 'payments <n>'
                  ? `payments ${take(kind, payments)}`
                  : `bills due ${take(kind, days)}`;
    out.push({ kind, text, refresh: kind === 'Refresh on bill <id>' });
  }
  return out;
}

export async function saturation(ctx: BenchContext, sandbox: Child<SandboxInfo>): Promise<ScenarioResult> {
  const count = ctx.opts.quick ? 150 : 1_000;
  const people = Math.ceil(count / 4);
  const channels = Math.ceil(count / 5);
  const latencyMs = ctx.opts.latencyMs;
  const catalog = await sandbox.call<Catalog>('catalog');
  await sandbox.call('latency', latencyMs);
  const bot = await ctx.bot('saturation bot', sandbox.info);
  const client = new BotClient(bot.info.url, count);
  const serviceUrl = ctx.connector.url;
  try {
    // A busy org in steady state: the number indexes exist (built once per org, kept on disk) and BILL is signed in.
    ctx.log("  building the bot's invoice and bill number indexes first");
    await warmIndexes(bot, client, serviceUrl, catalog);
    await sandbox.call('reset');
    const before = await bot.call<BotStats>('stats');

    const rng = new Rng(ctx.opts.seed);
    const planned = burstCommands(catalog, count, rng);
    // 4 commands per person (the per-person limit is 30 a minute), 5 per channel (Teams lets a bot send 7 a second
    // and 8 in 2 s to a channel: a typing indicator and an answer each), one thread per command.
    const commands: Array<Command & { kind: string }> = planned.map((p, i) => ({
      ...p,
      who: person(i % people),
      where: channel(i, channels),
    }));
    await client.connect(count);
    ctx.log(`  sending ${count} commands at once from ${people} people in ${channels} channels`);
    if (process.env.BENCH_PROFILE_DIR) await bot.call('profileStart');
    const t0 = now();
    const driverCpu0 = process.cpuUsage();
    const botCpu0 = bot.cpuMs();
    const results = await Promise.all(
      commands.map(async (cmd, i) => {
        const { activity, conversationId } = commandActivity(cmd, `sat-${i}`, serviceUrl);
        const sent = await client.post(activity);
        const reply = ctx.connector.replies.get(conversationId);
        return {
          kind: cmd.kind,
          text: cmd.text,
          status: sent.status,
          sentAt: sent.start - t0,
          ms: sent.end - sent.start,
          replyMs: reply ? reply.at - sent.start : undefined,
          outcome: outcomeOf(reply),
          summary: reply?.summary,
        };
      }),
    );
    const t1 = now();
    if (process.env.BENCH_PROFILE_DIR)
      ctx.log(
        `  profile of the burst: ${(await bot.call<string | null>('profileStop', `${process.env.BENCH_PROFILE_DIR}/saturation-burst-${Date.now()}.cpuprofile`)) ?? 'null (the profiler was not running)'}`,
      );
    const driverCpu = process.cpuUsage(driverCpu0);
    const cpu = {
      driverMs: (driverCpu.user + driverCpu.system) / 1000,
      botMs: bot.cpuMs() - botCpu0,
      lastSentAtMs: Math.max(...results.map((r) => r.sentAt)),
    };
    ctx.log(
      `  CPU during the burst: bot ${(cpu.botMs / 1000).toFixed(1)} s, driver and connector ${(cpu.driverMs / 1000).toFixed(1)} s; the last command left the driver ${cpu.lastSentAtMs.toFixed(0)} ms after the first`,
    );
    const sStats = await sandbox.call<SandboxStats>('stats');
    // Calls the burst made: begun after its first command was sent (a replica build left from the warm-up is not).
    const slots = (await sandbox.call<Array<Interval & { orgId: string }>>('slots')).filter(
      (s) => s.orgId === catalog.orgId && s.start >= t0 && s.start <= t1,
    );
    const after = await bot.call<BotStats>('stats');

    const latency = summarize(results.map((r) => r.ms));
    const outcomes = tally(results.map((r) => r.outcome));
    const inTime = results.filter((r) => r.ms <= TEAMS_DEADLINE_MS && (r.outcome === 'answered' || r.outcome === 'busy')).length;
    const answeredInTime = results.filter((r) => r.ms <= TEAMS_DEADLINE_MS && r.outcome === 'answered').length;
    const util = utilisation({ calls: slots, concurrency: BILL_CONCURRENCY, latencyMs });
    const firstSlots = [...slots]
      .sort((a, b) => a.start - b.start)
      .slice(0, 40)
      .map((x) => [Math.round(x.start - t0), Math.round(x.end - x.start)]);
    const limitErrors = sStats.limitErrors.concurrency + sStats.limitErrors.hourly + sStats.limitErrors.logins + sStats.limitErrors.spend;
    const maxConcurrent = sStats.maxConcurrentByOrg[catalog.orgId] ?? 0;
    const byKind: Record<string, { n: number; answered: number; busy: number; p50: number; p99: number }> = {};
    for (const [kind] of MIX) {
      const rs = results.filter((r) => r.kind === kind);
      if (rs.length === 0) continue;
      const s = summarize(rs.map((r) => r.ms));
      byKind[kind] = {
        n: rs.length,
        answered: rs.filter((r) => r.outcome === 'answered').length,
        busy: rs.filter((r) => r.outcome === 'busy').length,
        p50: s.p50,
        p99: s.p99,
      };
    }
    // Per second of the burst: mean calls in flight at BILL, and commands still waiting for their answer.
    const timeline = meanOpenPerBucket(slots, t0, t1, 1_000).map((inFlight, s) => ({
      second: s,
      inFlightAtBill: Math.round(inFlight * 100) / 100,
      commandsPending: results.filter((r, i) => r.ms > s * 1_000 && i >= 0).length,
    }));
    // The steady phase: from the first second BILL's slots were (nearly) full to the last; before it the bot was still
    // reading the burst, after it only a few sequential pages were left.
    const full = timeline.filter((t) => t.inFlightAtBill >= 2.5).map((t) => t.second);
    const steady = full.length ? timeline.slice(nth(full, 0), nth(full, full.length - 1) + 1) : [];
    const steadyOccupancy = steady.length ? steady.reduce((x, t) => x + t.inFlightAtBill, 0) / steady.length / BILL_CONCURRENCY : 0;
    const cacheDelta = { hits: after.cache.hits - before.cache.hits, misses: after.cache.misses - before.cache.misses };
    ctx.log(
      `  done in ${((t1 - t0) / 1000).toFixed(1)} s: ${outcomes.answered} answered, ${outcomes.busy} told "BILL is busy", ${outcomes.failed + outcomes.noReply + outcomes.userRate + outcomes.indexing} other`,
    );
    ctx.log(
      `  BILL saw ${util.calls} calls in ${(util.windowMs / 1000).toFixed(1)} s (${util.throughput.toFixed(1)}/s of ${util.ceiling.toFixed(1)}/s), at most ${maxConcurrent} in flight, ${limitErrors} limit errors`,
    );

    const notes: string[] = [];
    const others = results.filter((r) => r.outcome !== 'answered' && r.outcome !== 'busy');
    if (others.length > 0)
      notes.push(
        `${others.length} replies were neither an answer nor "busy": ${[...new Set(others.map((o) => `${o.outcome}: ${o.summary ?? ''}`.slice(0, 100)))].slice(0, 3).join(' | ')}`,
      );
    const late = results.filter((r) => r.ms > TEAMS_DEADLINE_MS);
    if (late.length > 0)
      notes.push(
        `${late.length} commands took longer than 15 s (slowest ${(latency.max / 1000).toFixed(1)} s; kinds: ${[...new Set(late.map((l) => l.kind))].join(', ')})`,
      );
    notes.push(
      `utilisation = BILL calls completed / window / (3 / ${latencyMs} ms), window = the burst's first call's slot taken -> its last call's slot released at the sandbox (calls begun before the burst, left from the warm-up, are not counted); = slot occupancy ${(util.occupancy * 100).toFixed(1)}% x ${latencyMs} ms / mean call ${util.meanCallMs.toFixed(1)} ms; ${util.idleMs.toFixed(0)} ms of the window had nothing in flight`,
    );

    return {
      id: 'saturation',
      title: '2. Saturation',
      setup: {
        commands: count,
        people,
        channels,
        mix: Object.fromEntries(MIX),
        sandboxLatencyMs: latencyMs,
        invoices: ctx.opts.invoices,
        bills: ctx.opts.bills,
        commandWaitMs: 8_000,
        billConcurrency: BILL_CONCURRENCY,
      },
      figures: [
        figure('completion time (first sent -> last answer)', (t1 - t0) / 1000, 's', 1),
        figure('latency p50', latency.p50 / 1000, 's', 2),
        figure('latency p95', latency.p95 / 1000, 's', 2),
        figure('latency p99', latency.p99 / 1000, 's', 2),
        figure('answered with data within 15 s', (100 * answeredInTime) / count, '%', 1),
        figure('"BILL is busy" cards', outcomes.busy, '', 0),
        figure('answered or told "busy" within 15 s', (100 * inTime) / count, '%', 1, { value: 99, direction: 'atLeast' }),
        figure('max in flight at BILL (per org, sandbox-observed)', maxConcurrent, '', 0, { value: BILL_CONCURRENCY, direction: 'atMost' }),
        figure('limit errors from BILL', limitErrors, '', 0, { value: 0, direction: 'atMost' }),
        figure("utilisation of BILL's 3 slots", util.utilisation * 100, '%', 1, { value: 90, direction: 'atLeast' }),
        figure(`slots busy in the steady phase (${steady.length} of ${timeline.length} s)`, steadyOccupancy * 100, '%', 1),
      ],
      details: {
        firstSlots,
        latencyMs: latency,
        outcomes,
        byKind,
        utilisation: util,
        timeline,
        steadyOccupancy,
        cpu,
        billCallsDuringBurst: billCalls(sStats),
        sandbox: sStats,
        cache: cacheDelta,
        limiter: after.budgets.filter((b) => b.budget.startsWith('bill')),
        botLogs: bot.logs,
      },
      notes,
      table: [
        ['command kind', 'sent', 'answered', 'busy', 'p50 s', 'p99 s'],
        ...Object.entries(byKind).map(([k, v]) => [
          k,
          String(v.n),
          String(v.answered),
          String(v.busy),
          (v.p50 / 1000).toFixed(2),
          (v.p99 / 1000).toFixed(2),
        ]),
      ],
    };
  } finally {
    await client.close();
    await ctx.stop(bot);
  }
}
