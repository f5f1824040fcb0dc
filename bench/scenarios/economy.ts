// Scenario 3 — economy: a realistic busy hour, compressed (clock, cache TTLs and BILL's latency all run k times
// faster), with 40 channels and 300 people asking overlapping questions (Zipf-distributed over a finance command
// mix). Counts what BILL saw: commands answered per upstream call, logins, and the bot's cache hit ratio; then the
// naive baseline answers the same questions (login per command, no cache, no index) against its own sandbox.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from '../context.js';
import { BotClient, commandActivity, now, person, place, type Command } from '../load.js';
import { NaiveClient } from '../naive.js';
import { billCalls, outcomeOf, tally, uniqueBillNumbers, warmIndexes, type BotStats, type Catalog, type SandboxStats } from '../org.js';
import { figure, type ScenarioResult } from '../report.js';
import { boundedAll, Rng, zipfWeights } from '../stats.js';

const HOUR_MS = 3_600_000;

/** What a finance team asks in a busy hour, by share of commands (sums to 100). */
export const HOUR_MIX: Array<[kind: string, weight: number]> = [
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

export interface HourCommand extends Command {
  /** When in the hour it is asked, ms from the start. */
  at: number;
  kind: string;
}

/** The hour's questions: Poisson arrivals; who, where and which record by Zipf (a few are asked about a lot). */
export function realisticHour(catalog: Catalog, opts: { commands: number; people: number; teams: number; channelsPerTeam: number; seed: number }): HourCommand[] {
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
  const name = (full: string) => (rng.next() < 0.5 ? full : full.split(' ')[0]!);
  const out: HourCommand[] = [];
  let at = 0;
  for (let i = 0; i < opts.commands; i++) {
    at += rng.exponential(HOUR_MS / opts.commands);
    if (at >= HOUR_MS) at = HOUR_MS - 1;
    const kind = HOUR_MIX[rng.weightedIndex(HOUR_MIX.map(([, w]) => w))]![0];
    const text =
      kind === 'invoice <number>' ? `invoice ${invoices[rng.weightedIndex(zInvoices)]}`
      : kind === 'bill <vendor invoice number>' ? `bill ${bills[rng.weightedIndex(zBills)]}`
      : kind === 'vendor <name>' ? `vendor ${name(vendors[rng.weightedIndex(zVendors)]!)}`
      : kind === 'customer <name>' ? `customer ${name(customers[rng.weightedIndex(zCustomers)]!)}`
      : kind === 'payments' ? (rng.next() < 0.8 ? 'payments' : 'payments 25')
      : kind;
    const ch = rng.weightedIndex(zChannels);
    out.push({ at, kind, text, who: person(rng.int(0, opts.people - 1)), where: place(Math.floor(ch / opts.channelsPerTeam), ch % opts.channelsPerTeam) });
  }
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export async function economy(ctx: BenchContext): Promise<ScenarioResult> {
  const quick = ctx.opts.quick;
  const speed = 60;
  const commandsPerHour = 1_500;
  // --quick runs the first 10 minutes of the same hour.
  const spanMs = quick ? HOUR_MS / 6 : HOUR_MS;
  const people = 300;
  const teams = 8;
  const channelsPerTeam = 5;
  // BILL's latency is compressed with the clock, so a call takes the same share of a TTL as it would in real time.
  const latencyMs = Math.max(1, Math.round(ctx.opts.latencyMs / speed));
  const clock = { epoch: Date.now(), speed };
  const sandbox = await ctx.sandbox('economy sandbox', { clock, latencyMs });
  const catalog = (await sandbox.call('catalog')) as Catalog;
  const hour = realisticHour(catalog, { commands: commandsPerHour, people, teams, channelsPerTeam, seed: ctx.opts.seed }).filter((c) => c.at < spanMs);
  const asked = hour.length;
  const serviceUrl = ctx.connector.url;
  const stateDir = ctx.stateDir('economy');

  // The deployment before this hour: the number indexes were built once and kept on disk. Then a restart: the hour
  // starts with an empty cache and no BILL session.
  ctx.log('  previous run: building the number indexes (kept in STATE_DIR)');
  const earlier = await ctx.bot('economy bot (earlier run)', sandbox.info, { stateDir, clock });
  const warmClient = new BotClient(earlier.info.url, 4);
  await warmIndexes(earlier, warmClient, serviceUrl, catalog);
  await warmClient.close();
  await ctx.stop(earlier);
  await sandbox.call('reset');

  const bot = await ctx.bot('economy bot', sandbox.info, { stateDir, clock });
  const client = new BotClient(bot.info.url, 256);
  ctx.log(`  the ${quick ? 'first 10 minutes of the hour' : 'hour'}: ${asked} commands from ${people} people in ${teams * channelsPerTeam} channels, ${speed}x faster (${(spanMs / speed / 1000).toFixed(0)} s)`);
  let outcomes: ReturnType<typeof tally>;
  let sStats: SandboxStats;
  let bStats: BotStats;
  let lateMs = 0;
  try {
    const start = now();
    const inflight = new Set<Promise<unknown>>();
    const results: Array<{ text: string; outcome: ReturnType<typeof outcomeOf> }> = [];
    for (const [i, cmd] of hour.entries()) {
      const due = start + cmd.at / speed;
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
    outcomes = tally(results.map((r) => r.outcome));
    sStats = (await sandbox.call('stats')) as SandboxStats;
    bStats = (await bot.call('stats')) as BotStats;
  } finally {
    await client.close();
    await ctx.stop(bot);
    await ctx.stop(sandbox);
  }
  const calls = billCalls(sStats);
  // Which commands spent the calls: the audit trail records the BILL calls each command's turn made.
  const spent = auditedBillCalls(join(stateDir, 'audit.log'), new Set(hour.map((_, i) => `eco-${i}`)));
  const unattributed = calls - [...spent.values()].reduce((x, v) => x + v.calls, 0);
  const answered = outcomes.answered;
  const billBacked = hour.filter((c) => c.kind !== 'help' && c.kind !== 'status').length;
  ctx.log(`  billbridge: ${answered} answered with ${calls} BILL calls (${sStats.logins} login), cache hit ratio ${(bStats.cache.hitRatio * 100).toFixed(1)}%`);

  // The naive baseline, on its own sandbox (no added latency: only its calls are counted) with BILL's hourly and
  // login limits lifted so it can finish; what BILL would have refused is computed from its counts.
  const sampleEvery = quick ? 5 : 1;
  const naiveSandbox = await ctx.sandbox('naive sandbox', { latencyMs: 0, hourlyBudget: 10_000_000, loginsPerHour: 1_000_000 });
  const naiveCatalog = (await naiveSandbox.call('catalog')) as Catalog;
  if (naiveCatalog.invoiceNumbers.length !== catalog.invoiceNumbers.length || naiveCatalog.vendors.join() !== catalog.vendors.join()) {
    throw new Error('the naive sandbox does not hold the same organisation');
  }
  const naive = new NaiveClient(naiveSandbox.info.baseUrl, naiveSandbox.info.credentials, () => new Date().toISOString().slice(0, 10));
  const sample = hour.filter((_, i) => i % sampleEvery === 0);
  ctx.log(`  naive client: the same ${sample.length} questions${sampleEvery > 1 ? ` (every ${sampleEvery}th)` : ''}, 3 at a time (BILL's concurrency limit)`);
  const naiveStarted = now();
  let naiveFailures = 0;
  await boundedAll(sample.length, 3, (i) => naive.answer(sample[i]!.text).catch(() => void naiveFailures++));
  const naiveSeconds = (now() - naiveStarted) / 1000;
  await ctx.stop(naiveSandbox);
  const n = naive.counts;
  const naiveCalls = Math.round((n.calls * asked) / sample.length);
  const naiveLogins = Math.round((n.logins * asked) / sample.length);
  const naivePerCall = asked / naiveCalls;
  ctx.log(`  naive: ${naiveCalls} BILL calls, ${naiveLogins} logins${sampleEvery > 1 ? ' (sample, scaled)' : ''} in ${naiveSeconds.toFixed(0)} s at 0 ms latency`);

  const notes: string[] = [];
  if (lateMs > 500) notes.push(`the driver fell behind the hour's schedule by up to ${lateMs.toFixed(0)} ms (real time)`);
  const unanswered = asked - answered;
  if (unanswered > 0) notes.push(`${unanswered} commands were not answered with data: ${JSON.stringify(outcomes)}`);
  if (naiveFailures > 0) notes.push(`${naiveFailures} naive commands failed`);
  notes.push(
    `naive at BILL's real limits: ${Math.max(0, naiveLogins - 200)} of its ${naiveLogins} logins and ${Math.max(0, naiveCalls - 20_000)} of its ${naiveCalls} calls in the hour would have been refused (200 logins and 20,000 requests an hour)`,
  );

  return {
    id: 'economy',
    title: '3. Economy',
    setup: { commandsPerHour, commandsAsked: asked, minutes: spanMs / 60_000, people, channels: teams * channelsPerTeam, mix: Object.fromEntries(HOUR_MIX), clockSpeed: speed, sandboxLatencyMsCompressed: latencyMs, invoices: ctx.opts.invoices, bills: ctx.opts.bills, naiveSampleEvery: sampleEvery },
    figures: [
      figure('commands answered', answered, '', 0),
      figure('BILL calls (logins included)', calls, '', 0),
      figure('commands per BILL call', asked / calls, '', 1, { value: 10, direction: 'atLeast' }),
      figure('BILL logins', sStats.logins, '', 0, { value: 1, direction: 'atMost' }),
      figure('cache hit ratio (hits + shared loads)', bStats.cache.hitRatio * 100, '%', 1),
      figure('naive client: BILL calls', naiveCalls, '', 0),
      figure('naive client: logins', naiveLogins, '', 0),
      figure('naive client: commands per BILL call', naivePerCall, '', 3),
      figure('BILL calls saved vs naive', naiveCalls / calls, 'x', 1),
    ],
    details: {
      outcomes,
      billBackedCommands: billBacked,
      commandsPerCallBillBacked: billBacked / calls,
      sandbox: sStats,
      cache: bStats.cache,
      limiter: bStats.budgets.filter((b) => b.budget.startsWith('bill')),
      naive: { ...n, sampleEvery, seconds: naiveSeconds, extrapolated: { calls: naiveCalls, logins: naiveLogins } },
      askedByKind: Object.fromEntries(HOUR_MIX.map(([k]) => [k, hour.filter((c) => c.kind === k).length])),
      billCallsByCommand: Object.fromEntries(spent),
    },
    notes,
    table: [
      ['command', 'asked', 'BILL calls', 'per command'],
      ...[...spent.entries()].sort((a, b) => b[1].calls - a[1].calls).map(([command, v]) => [command, String(v.asked), String(v.calls), (v.calls / v.asked).toFixed(2)]),
      ...(unattributed > 0 ? [['(not made by a command: refreshes between turns)', '', String(unattributed), '']] : []),
      [],
      ['BILL route', 'billbridge', 'naive' + (sampleEvery > 1 ? ' (scaled)' : '')],
      ...[...new Set([...Object.keys(sStats.requestsByPath), ...Object.keys(n.byRoute)])]
        .sort()
        .map((route) => [route, String(sStats.requestsByPath[route] ?? 0), String(Math.round(((n.byRoute[route] ?? 0) * asked) / sample.length))]),
    ],
  };
}

/** BILL calls (logins included) per command name, from the bot's audit trail, for this hour's activities only. */
function auditedBillCalls(file: string, ids: Set<string>): Map<string, { asked: number; calls: number }> {
  const out = new Map<string, { asked: number; calls: number }>();
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    if (!line) continue;
    const rec = JSON.parse(line) as { kind?: string; command?: string; args?: string[]; conversationId?: string; upstream?: Record<string, number> };
    const id = rec.conversationId?.split(';messageid=')[1];
    if (rec.kind !== 'command' || !id || !ids.has(id)) continue;
    const name = rec.command === 'bills due' || rec.command === 'payments' ? [rec.command, ...(rec.args ?? [])].join(' ') : (rec.command ?? '(not a command)');
    const e = out.get(name) ?? { asked: 0, calls: 0 };
    e.asked++;
    e.calls += (rec.upstream?.bill ?? 0) + (rec.upstream?.['bill.login'] ?? 0);
    out.set(name, e);
  }
  return out;
}
