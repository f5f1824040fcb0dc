// Scenario 6 — message-extension search: `composeExtension/query` invokes (search from the compose box) for invoice
// numbers on the organisation with 10,000 invoices, warm (the mirror built), one at a time and 32 at once. Measures the
// invoke's latency (the answer is the HTTP response: Teams waits for it) and the BILL calls per query.
import { Pool } from 'undici';
import type { BenchContext } from '../context.js';
import { channelMessage, TENANT } from '../../test/harness/activities.js';
import { now, person, place, BotClient } from '../load.js';
import { warmIndexes, type Catalog, type SandboxStats } from '../org.js';
import type { Child, SandboxInfo } from '../processes.js';
import { figure, type ScenarioResult } from '../report.js';
import { Rng, summarize } from '../stats.js';

interface Query {
  ms: number;
  status: number;
  results: number;
}

/** What Teams posts when someone types `text` into billbridge's invoice search in a team channel's compose box. */
function queryActivity(text: string, i: number, serviceUrl: string): Record<string, unknown> {
  const where = place(i % 20, 0);
  const base = channelMessage('', { serviceUrl, team: where.team, channel: where.channel, tenant: TENANT, from: person(i), id: `q-${i}` });
  return {
    ...base,
    type: 'invoke',
    name: 'composeExtension/query',
    text: undefined,
    entities: undefined,
    value: { commandId: 'invoices', parameters: [{ name: 'query', value: text }], queryOptions: { skip: 0, count: 25 } },
  };
}

/** The number of results in a composeExtension answer; -1 when the body is not one. */
function resultCount(body: unknown): number {
  const ext = (body as { composeExtension?: { attachments?: unknown } } | undefined)?.composeExtension;
  return Array.isArray(ext?.attachments) ? ext.attachments.length : -1;
}

export async function search(ctx: BenchContext, sandbox: Child<SandboxInfo>): Promise<ScenarioResult> {
  const perLevel = ctx.opts.quick ? 50 : 400;
  const catalog = await sandbox.call<Catalog>('catalog');
  await sandbox.call('latency', ctx.opts.latencyMs);
  await sandbox.call('reset');
  const rng = new Rng(ctx.opts.seed + 6);
  const numbers = rng.shuffle([...catalog.invoiceNumbers]);
  const serviceUrl = ctx.connector.url;
  const bot = await ctx.bot('search bot', sandbox.info, {});
  const warmer = new BotClient(bot.info.url, 4);
  const pool = new Pool(bot.info.url, { connections: 32, pipelining: 1 });
  let seq = 0;
  const ask = async (text: string): Promise<Query> => {
    const body = JSON.stringify(queryActivity(text, seq++, serviceUrl));
    const start = now();
    const res = await pool.request({ path: '/api/messages', method: 'POST', body, headers: { 'content-type': 'application/json' } });
    const answer: unknown = await res.body.json().catch(() => undefined);
    return { ms: now() - start, status: res.statusCode, results: resultCount(answer) };
  };
  const level = async (concurrency: number): Promise<{ queries: Query[]; calls: number }> => {
    const before = await sandbox.call<SandboxStats>('stats');
    const queries: Query[] = [];
    let next = 0;
    const worker = async () => {
      while (next < perLevel) {
        const n = numbers[next++ % numbers.length] ?? '';
        queries.push(await ask(n));
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    const after = await sandbox.call<SandboxStats>('stats');
    return { queries, calls: after.requests - before.requests };
  };
  try {
    ctx.log('  warming: building the invoice mirror');
    await warmIndexes(bot, warmer, serviceUrl, catalog);
    await ask(numbers[0] ?? ''); // the first query of the bot's life (sign-in and the like) is not a warm query
    const c1 = await level(1);
    const c32 = await level(32);
    const notes: string[] = [];
    const figures = [];
    for (const [c, r] of [
      [1, c1],
      [32, c32],
    ] as const) {
      const lat = summarize(r.queries.map((q) => q.ms));
      const failed = r.queries.filter((q) => q.status !== 200 || q.results < 1).length;
      if (failed > 0) notes.push(`${failed} of ${r.queries.length} queries at c=${c} had no result or no 200`);
      ctx.log(`  c=${c}: ${r.queries.length} queries, p50 ${lat.p50.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms, ${r.calls} BILL calls`);
      figures.push(
        figure(`c=${c}: latency p50`, lat.p50, 'ms', 1, c === 1 ? { value: 20, direction: 'atMost' } : undefined),
        figure(`c=${c}: latency p99`, lat.p99, 'ms', 1),
        figure(`c=${c}: BILL calls per query`, r.calls / r.queries.length, '', 2, { value: 0, direction: 'atMost' }),
      );
    }
    return {
      id: 'search',
      title: '6. Message-extension search',
      setup: { invoices: catalog.invoiceNumbers.length, queriesPerLevel: perLevel, sandboxLatencyMs: ctx.opts.latencyMs },
      figures,
      details: { c1: summarize(c1.queries.map((q) => q.ms)), c32: summarize(c32.queries.map((q) => q.ms)) },
      notes,
    };
  } finally {
    await warmer.close();
    await pool.close();
    await ctx.stop(bot);
  }
}
