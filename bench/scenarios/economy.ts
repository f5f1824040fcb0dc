// Scenario 3 — economy: a realistic busy hour, compressed (clock, cache TTLs and BILL's latency all run k times
// faster), with 40 channels and 300 people asking overlapping questions (Zipf-distributed over a finance command
// mix) while the team changes 40 records in BILL (bills paid, customer payments, new invoices, new vendors). Counts
// what BILL saw: commands answered per upstream call, logins, and the bot's cache hit ratio — with billbridge's BILL
// webhook subscription set up (the deployment the README describes) and, in the full run, polling only; then the
// naive baseline answers the same questions (login per command, no cache, no index) against its own sandbox.
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BenchContext } from '../context.js';
import { BotClient, commandActivity, now, person, place, type Command } from '../load.js';
import { NaiveClient } from '../naive.js';
import { billCalls, outcomeOf, tally, uniqueBillNumbers, warmIndexes, type BotStats, type Catalog, type SandboxStats } from '../org.js';
import { figure, type ScenarioResult } from '../report.js';
import { boundedAll, nth, Rng, zipfWeights } from '../stats.js';

const HOUR_MS = 3_600_000;

/** What a finance team asks in a busy hour, by share of commands (sums to 100). */
const HOUR_MIX: Array<[kind: string, weight: number]> = [
  ['bills due', 16],
  ['bills due 14', 4],
  ['bills due 30', 2],
  ['bills overdue', 8],
  ['invoices overdue', 8],
  ['invoice <number>', 20],
  ['bill <vendor invoice number>', 8],
  ['vendor <name>', 14],
  ['customer <name>', 8],
  ['payments', 6],
  ['status', 3],
  ['help', 3],
];

interface HourCommand extends Command {
  /** When in the hour it is asked, ms from the start. */
  at: number;
  kind: string;
}

/** The hour's questions: Poisson arrivals; who, where and which record by Zipf (a few are asked about a lot). */
function realisticHour(
  catalog: Catalog,
  opts: { commands: number; people: number; teams: number; channelsPerTeam: number; seed: number },
): HourCommand[] {
  const rng = new Rng(opts.seed);
  // The records a team is chasing this hour, most-asked first.
  const invoices = rng.shuffle([...catalog.invoiceNumbers]).slice(0, 300);
  const bills = rng.shuffle(uniqueBillNumbers(catalog).map((b) => b.number)).slice(0, 150);
  const vendors = rng.shuffle([...catalog.vendors]);
  const customers = rng.shuffle([...catalog.customers]);
  const zInvoices = zipfWeights(invoices.length, 1);
  const zBills = zipfWeights(bills.length, 1);
  const zVendors = zipfWeights(vendors.length, 1.1);
  const zCustomers = zipfWeights(customers.length, 1.1);
  const channels = opts.teams * opts.channelsPerTeam;
  const zChannels = zipfWeights(channels, 0.8);
  // Half the time a name is typed in full, otherwise its first word ("vendor Summit").
  const name = (full: string) => (rng.next() < 0.5 ? full : (full.split(' ')[0] ?? full));
  const out: HourCommand[] = [];
  let at = 0;
  for (let i = 0; i < opts.commands; i++) {
    at += rng.exponential(HOUR_MS / opts.commands);
    if (at >= HOUR_MS) at = HOUR_MS - 1;
    const [kind] = nth(HOUR_MIX, rng.weightedIndex(HOUR_MIX.map(([, w]) => w)), 'command kind');
    const text =
      kind === 'invoice <number>'
        ? `invoice ${invoices[rng.weightedIndex(zInvoices)]}`
        : kind === 'bill <vendor invoice number>'
          ? `bill ${bills[rng.weightedIndex(zBills)]}`
          : kind === 'vendor <name>'
            ? `vendor ${name(nth(vendors, rng.weightedIndex(zVendors), 'vendor'))}`
            : kind === 'customer <name>'
              ? `customer ${name(nth(customers, rng.weightedIndex(zCustomers), 'customer'))}`
              : kind === 'payments'
                ? rng.next() < 0.8
                  ? 'payments'
                  : 'payments 25'
                : kind;
    const ch = rng.weightedIndex(zChannels);
    out.push({
      at,
      kind,
      text,
      who: person(rng.int(0, opts.people - 1)),
      where: place(Math.floor(ch / opts.channelsPerTeam), ch % opts.channelsPerTeam),
    });
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Changes the team makes in BILL in the hour (bills paid, customer payments, new invoices, a few new vendors). */
const CHANGES_PER_HOUR = 40;

/** A free TCP port on this machine: the bot keeps one address across its restart, as a deployment does. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface HourRun {
  asked: number;
  outcomes: ReturnType<typeof tally>;
  sStats: SandboxStats;
  bStats: BotStats;
  calls: number;
  spent: Map<string, { asked: number; calls: number }>;
  unattributed: number;
  lateMs: number;
  changes: number;
  pushFed: string[];
}

/**
 * The hour against its own sandbox: a previous run built the replicas (and, with `webhooks`, set up billbridge's BILL
 * subscription, as `npm run webhooks -- setup <url>` does), then a restart, then the hour's questions and changes.
 */
async function runHour(
  ctx: BenchContext,
  o: {
    webhooks: boolean;
    spanMs: number;
    speed: number;
    latencyMs: number;
    commandsPerHour: number;
    people: number;
    teams: number;
    channelsPerTeam: number;
  },
): Promise<HourRun> {
  const clock = { epoch: Date.now(), speed: o.speed };
  const label = o.webhooks ? 'with webhooks' : 'polling only';
  const sandbox = await ctx.sandbox(`economy sandbox (${label})`, { clock, latencyMs: o.latencyMs });
  const catalog = await sandbox.call<Catalog>('catalog');
  const hour = realisticHour(catalog, {
    commands: o.commandsPerHour,
    people: o.people,
    teams: o.teams,
    channelsPerTeam: o.channelsPerTeam,
    seed: ctx.opts.seed,
  }).filter((c) => c.at < o.spanMs);
  const changeRng = new Rng(ctx.opts.seed + 1);
  // Exactly CHANGES_PER_HOUR an hour, each at a random moment of its own slot of the hour.
  const changeTimes = Array.from({ length: CHANGES_PER_HOUR }, (_, n) => ((n + changeRng.next()) * HOUR_MS) / CHANGES_PER_HOUR).filter(
    (at) => at < o.spanMs,
  );
  const serviceUrl = ctx.connector.url;
  const stateDir = ctx.stateDir('economy');
  const env = { PORT: String(await freePort()) };

  ctx.log(
    `  ${label}: previous run builds the replicas (kept in STATE_DIR)${o.webhooks ? ' and sets up the BILL webhook subscription' : ''}`,
  );
  const earlier = await ctx.bot(`economy bot (earlier run, ${label})`, sandbox.info, { stateDir, clock, env });
  const warmClient = new BotClient(earlier.info.url, 4);
  await warmIndexes(earlier, warmClient, serviceUrl, catalog, 180_000, true);
  await warmClient.close();
  if (o.webhooks) await earlier.call('webhooks', `${earlier.info.url}/api/bill/webhooks`);
  await ctx.stop(earlier);
  await sandbox.call('reset');

  const bot = await ctx.bot(`economy bot (${label})`, sandbox.info, { stateDir, clock, env });
  const client = new BotClient(bot.info.url, 256);
  ctx.log(
    `  ${label}: ${hour.length} commands from ${o.people} people in ${o.teams * o.channelsPerTeam} channels and ${changeTimes.length} changes in BILL, ${o.speed}x faster (${(o.spanMs / o.speed / 1000).toFixed(0)} s)`,
  );
  let outcomes: ReturnType<typeof tally>;
  let sStats: SandboxStats;
  let bStats: BotStats;
  let lateMs = 0;
  try {
    const start = now();
    // The team's changes in BILL, on their own schedule; BILL (the sandbox) sends the webhooks.
    const changing = (async () => {
      for (const [n, at] of changeTimes.entries()) {
        await sleep(start + at / o.speed - now());
        await sandbox.call('change', n);
      }
    })();
    const inflight = new Set<Promise<unknown>>();
    const results: Array<{ text: string; outcome: ReturnType<typeof outcomeOf> }> = [];
    for (const [i, cmd] of hour.entries()) {
      const due = start + cmd.at / o.speed;
      const wait = due - now();
      if (wait > 0) await sleep(wait);
      else lateMs = Math.max(lateMs, -wait);
      const p = (async () => {
        const { activity, conversationId } = commandActivity(cmd, `eco-${i}`, serviceUrl);
        await client.post(activity);
        results.push({ text: cmd.text, outcome: outcomeOf(ctx.connector.replies.get(conversationId)) });
      })();
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
      if (inflight.size >= 256) await Promise.race(inflight);
    }
    await Promise.all(inflight);
    await changing;
    outcomes = tally(results.map((r) => r.outcome));
    sStats = await sandbox.call<SandboxStats>('stats');
    bStats = await bot.call<BotStats>('stats');
  } finally {
    await client.close();
    await ctx.stop(bot);
    await ctx.stop(sandbox);
  }
  const calls = billCalls(sStats);
  // Which commands spent the calls: the audit trail records the BILL calls each command's turn made.
  const spent = auditedBillCalls(join(stateDir, 'audit.log'), new Set(hour.map((_, i) => `eco-${i}`)));
  const unattributed = calls - [...spent.values()].reduce((x, v) => x + v.calls, 0);
  ctx.log(
    `  ${label}: ${outcomes.answered} answered with ${calls} BILL calls (${sStats.logins} login), cache hit ratio ${(bStats.cache.hitRatio * 100).toFixed(1)}%, webhooks delivered ${sStats.webhooks.delivered}`,
  );
  return {
    asked: hour.length,
    outcomes,
    sStats,
    bStats,
    calls,
    spent,
    unattributed,
    lateMs,
    changes: changeTimes.length,
    pushFed: bStats.pushFed ?? [],
  };
}

export async function economy(ctx: BenchContext): Promise<ScenarioResult> {
  const quick = ctx.opts.quick;
  const speed = 60;
  const commandsPerHour = 1_500;
  // --quick runs the first 10 minutes of the same hour, with webhooks only.
  const spanMs = quick ? HOUR_MS / 6 : HOUR_MS;
  const people = 300;
  const teams = 8;
  const channelsPerTeam = 5;
  // BILL's latency is compressed with the clock, so a call takes the same share of a TTL as it would in real time.
  const latencyMs = Math.max(1, Math.round(ctx.opts.latencyMs / speed));
  const shape = { spanMs, speed, latencyMs, commandsPerHour, people, teams, channelsPerTeam };
  const pushed = await runHour(ctx, { ...shape, webhooks: true });
  const polled = quick ? undefined : await runHour(ctx, { ...shape, webhooks: false });
  const { asked, outcomes, sStats, bStats, calls, spent, unattributed, lateMs } = pushed;
  const answered = outcomes.answered;

  // The naive baseline, on its own sandbox (no added latency: only its calls are counted) with BILL's hourly and
  // login limits lifted so it can finish; what BILL would have refused is computed from its counts.
  const sampleEvery = quick ? 5 : 1;
  const naiveSandbox = await ctx.sandbox('naive sandbox', { latencyMs: 0, hourlyBudget: 10_000_000, loginsPerHour: 1_000_000 });
  const naiveCatalog = await naiveSandbox.call<Catalog>('catalog');
  const hour = realisticHour(naiveCatalog, { commands: commandsPerHour, people, teams, channelsPerTeam, seed: ctx.opts.seed }).filter(
    (c) => c.at < spanMs,
  );
  if (hour.length !== asked) throw new Error('the naive sandbox does not hold the same organisation');
  const naive = new NaiveClient(naiveSandbox.info.baseUrl, naiveSandbox.info.credentials, () => new Date().toISOString().slice(0, 10));
  const sample = hour.filter((_, i) => i % sampleEvery === 0);
  ctx.log(
    `  naive client: the same ${sample.length} questions${sampleEvery > 1 ? ` (every ${sampleEvery}th)` : ''}, 3 at a time (BILL's concurrency limit)`,
  );
  const naiveStarted = now();
  let naiveFailures = 0;
  await boundedAll(sample.length, 3, (i) =>
    naive.answer(nth(sample, i, 'question').text).catch(() => {
      naiveFailures++;
    }),
  );
  const naiveSeconds = (now() - naiveStarted) / 1000;
  await ctx.stop(naiveSandbox);
  const n = naive.counts;
  const naiveCalls = Math.round((n.calls * asked) / sample.length);
  const naiveLogins = Math.round((n.logins * asked) / sample.length);
  const naivePerCall = asked / naiveCalls;
  ctx.log(
    `  naive: ${naiveCalls} BILL calls, ${naiveLogins} logins${sampleEvery > 1 ? ' (sample, scaled)' : ''} in ${naiveSeconds.toFixed(0)} s at 0 ms latency`,
  );

  const notes: string[] = [];
  for (const run of [pushed, polled]) {
    if (!run) continue;
    if (run.lateMs > 500) notes.push(`the driver fell behind the hour's schedule by up to ${run.lateMs.toFixed(0)} ms (real time)`);
    const unanswered = run.asked - run.outcomes.answered;
    if (unanswered > 0) notes.push(`${unanswered} commands were not answered with data: ${JSON.stringify(run.outcomes)}`);
  }
  if (pushed.pushFed.length === 0)
    notes.push('the webhook run ended with no record kind push-fed: its subscription was not seen as delivering');
  if (naiveFailures > 0) notes.push(`${naiveFailures} naive commands failed`);
  notes.push(
    `the hour's ${pushed.changes} changes in BILL sent ${pushed.sStats.webhooks.delivered} webhooks (${pushed.sStats.webhooks.failed} failed); kinds kept current by them: ${pushed.pushFed.join(', ') || 'none'}`,
  );
  notes.push(
    `naive at BILL's real limits: ${Math.max(0, naiveLogins - 200)} of its ${naiveLogins} logins and ${Math.max(0, naiveCalls - 20_000)} of its ${naiveCalls} calls in the hour would have been refused (200 logins and 20,000 requests an hour)`,
  );

  return {
    id: 'economy',
    title: '3. Economy',
    setup: {
      commandsPerHour,
      commandsAsked: asked,
      minutes: spanMs / 60_000,
      people,
      channels: teams * channelsPerTeam,
      mix: Object.fromEntries(HOUR_MIX),
      changesInBill: pushed.changes,
      clockSpeed: speed,
      sandboxLatencyMsCompressed: latencyMs,
      invoices: ctx.opts.invoices,
      bills: ctx.opts.bills,
      naiveSampleEvery: sampleEvery,
    },
    figures: [
      figure('commands answered', answered, '', 0),
      figure('BILL calls (logins included)', calls, '', 0),
      figure('commands per BILL call (BILL webhooks set up)', asked / calls, '', 1, { value: 10, direction: 'atLeast' }),
      figure('BILL logins', sStats.logins, '', 0, { value: 1, direction: 'atMost' }),
      figure('cache hit ratio (hits + shared loads)', bStats.cache.hitRatio * 100, '%', 1),
      ...(polled
        ? [
            figure('polling only (no webhooks): BILL calls', polled.calls, '', 0),
            figure('polling only: commands per BILL call', polled.asked / polled.calls, '', 1),
          ]
        : []),
      figure('naive client: BILL calls', naiveCalls, '', 0),
      figure('naive client: logins', naiveLogins, '', 0),
      figure('naive client: commands per BILL call', naivePerCall, '', 3),
      figure('BILL calls saved vs naive', naiveCalls / calls, 'x', 1),
    ],
    details: {
      outcomes,
      billBackedCommands: hour.filter((c) => c.kind !== 'help' && c.kind !== 'status').length,
      sandbox: sStats,
      cache: bStats.cache,
      limiter: bStats.budgets.filter((b) => b.budget.startsWith('bill')),
      pushFed: pushed.pushFed,
      changes: pushed.changes,
      polled: polled
        ? {
            calls: polled.calls,
            outcomes: polled.outcomes,
            requestsByPath: polled.sStats.requestsByPath,
            cache: polled.bStats.cache,
            billCallsByCommand: Object.fromEntries(polled.spent),
            unattributed: polled.unattributed,
          }
        : undefined,
      naive: { ...n, sampleEvery, seconds: naiveSeconds, extrapolated: { calls: naiveCalls, logins: naiveLogins } },
      askedByKind: Object.fromEntries(HOUR_MIX.map(([k]) => [k, hour.filter((c) => c.kind === k).length])),
      billCallsByCommand: Object.fromEntries(spent),
      lateMs,
    },
    notes,
    table: [
      ['command', 'asked', 'BILL calls', 'per command', ...(polled ? ['polling only'] : [])],
      ...[...spent.entries()]
        .sort((a, b) => b[1].calls - a[1].calls)
        .map(([command, v]) => [
          command,
          String(v.asked),
          String(v.calls),
          (v.calls / v.asked).toFixed(2),
          ...(polled ? [String(polled.spent.get(command)?.calls ?? 0)] : []),
        ]),
      [
        '(not made by a command: refreshes, checks, webhook reads)',
        '',
        String(unattributed),
        '',
        ...(polled ? [String(polled.unattributed)] : []),
      ],
      [],
      ['BILL route', 'billbridge', ...(polled ? ['polling only'] : []), 'naive' + (sampleEvery > 1 ? ' (scaled)' : '')],
      ...[
        ...new Set([...Object.keys(sStats.requestsByPath), ...Object.keys(polled?.sStats.requestsByPath ?? {}), ...Object.keys(n.byRoute)]),
      ]
        .sort()
        .map((route) => [
          route,
          String(sStats.requestsByPath[route] ?? 0),
          ...(polled ? [String(polled.sStats.requestsByPath[route] ?? 0)] : []),
          String(Math.round(((n.byRoute[route] ?? 0) * asked) / sample.length)),
        ]),
    ],
  };
}

/** BILL calls (logins included) per command name, from the bot's audit trail, for this hour's activities only. */
function auditedBillCalls(file: string, ids: Set<string>): Map<string, { asked: number; calls: number }> {
  const out = new Map<string, { asked: number; calls: number }>();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    if (!line) continue;
    const rec = JSON.parse(line) as {
      kind?: string;
      command?: string;
      args?: string[];
      conversationId?: string;
      upstream?: Record<string, number>;
    };
    const id = rec.conversationId?.split(';messageid=')[1];
    if (rec.kind !== 'command' || !id || !ids.has(id)) continue;
    const name =
      rec.command === 'bills due' || rec.command === 'payments'
        ? [rec.command, ...(rec.args ?? [])].join(' ')
        : (rec.command ?? '(not a command)');
    const e = out.get(name) ?? { asked: 0, calls: 0 };
    e.asked++;
    e.calls += (rec.upstream?.bill ?? 0) + (rec.upstream?.['bill.login'] ?? 0);
    out.set(name, e);
  }
  return out;
}
