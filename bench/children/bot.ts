// Bench child: billbridge as `npm start` builds it (buildApp + listen), in its own process so its CPU and memory are
// its own. The only difference from src/index.ts: the clock may run faster (the compressed hour), and the driver
// can read the app's own counters (cache, limiter, indexes, memory) over IPC.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { getHeapSpaceStatistics, getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { NS } from '../../src/infra/state/types.js';
import { PUSH_FED } from '../../src/notify/kinds.js';
import { webhookSetup } from '../../src/notify/setup.js';
import { clockFromEnv, ready, residentByMapping, residentSet, serve, stringArg } from './ipc.js';

// The environment the driver gave, never a developer's .env (it may hold real BILL credentials).
const config = loadConfig(process.env);
const app = await buildApp(config, { clock: clockFromEnv(process.env) });
const url = await app.listen();
const orgId = config.bill.credentials?.orgId ?? app.sandbox?.credentials.orgId ?? '';

// BENCH_ALLOC_DIR: what the bot allocated from start to stop, sampled every 16 KB, garbage included (V8's sampling
// heap profiler keeps the samples of collected objects when asked to), written as a .heapprofile when it stops.
// `npx tsx bench/allocs.ts <file>` sums it by package and function.
const allocations = process.env.BENCH_ALLOC_DIR ? await sampleAllocations(process.env.BENCH_ALLOC_DIR) : undefined;

async function sampleAllocations(dir: string): Promise<() => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 16_384,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  return async () => {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    session.disconnect();
    writeFileSync(`${dir}/billbridge-${process.pid}-${Date.now()}.heapprofile`, JSON.stringify(profile));
  };
}

// A CPU profile of a window the driver chooses (BENCH_PROFILE_DIR): what the bot did during one scenario's load.
let profiler: Session | undefined;

type CountingLimiter = typeof app.limiter & { budgetCounters?: () => unknown };

serve(
  {
    stats: () => {
      const limiter = app.limiter as CountingLimiter;
      const answers = app.mirror.answers.stats();
      const mirror = app.mirror.info(orgId);
      return {
        cache: { ...answers, hitRatio: answers.hits + answers.misses === 0 ? 0 : answers.hits / (answers.hits + answers.misses) },
        cacheBounds: { maxEntries: config.cache.maxEntries },
        budgets: limiter.budgetCounters(),
        billBudgets: app.limiter.snapshot().filter((b) => b.budget.startsWith('bill')),
        invoiceIndex: mirror.find((m) => m.kind === 'invoice'),
        billIndex: mirror.find((m) => m.kind === 'bill'),
        vendorIndex: mirror.find((m) => m.kind === 'vendor'),
        customerIndex: mirror.find((m) => m.kind === 'customer'),
        pushFed: PUSH_FED.filter((p) => app.notify.push.fed(orgId, p.entity)).map((p) => p.entity),
        loginsLastHour: app.bill.status().loginsLastHour,
        memory: process.memoryUsage(),
        heapSpaces: getHeapSpaceStatistics().map((h) => ({ space: h.space_name, size: h.space_size, used: h.space_used_size })),
        malloced: { now: getHeapStatistics().malloced_memory, peak: getHeapStatistics().peak_malloced_memory },
        ...residentSet(),
      };
    },
    profileStart: async () => {
      profiler = new Session();
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
      return null;
    },
    profileStop: async (arg) => {
      const file = stringArg(arg, 'profileStop');
      if (!profiler) return null;
      const { profile } = await profiler.post('Profiler.stop');
      profiler.disconnect();
      profiler = undefined;
      writeFileSync(file, JSON.stringify(profile));
      return file;
    },
    /** Writes a V8 heap snapshot (for looking into a memory figure); returns its path. */
    heapSnapshot: (dir) => writeHeapSnapshot(`${stringArg(dir, 'heapSnapshot')}/billbridge-${process.pid}-${Date.now()}.heapsnapshot`),
    /** Resident memory by kind of mapping, MB (BENCH_SMAPS=1). */
    mappings: () => residentByMapping(),
    /** Live heap after a full collection (the bot started with --expose-gc, e.g. BENCH_BOT_EXEC_ARGV=--expose-gc). */
    liveHeap: () => {
      const gc = (globalThis as { gc?: () => void }).gc;
      if (!gc) return null;
      gc();
      return process.memoryUsage().heapUsed;
    },
    /**
     * `npm run webhooks -- setup <url>` for the org: one subscription to every event billbridge posts, its key kept in
     * STATE_DIR. The sandbox stands in for BILL here, so (unlike BILL) it may deliver to http://127.0.0.1.
     */
    webhooks: async (arg) => {
      const url = stringArg(arg, 'webhooks');
      const setup = webhookSetup({
        bill: app.bill,
        keys: app.notify.keys,
        log: app.log,
        state: app.state,
        clock: app.clock,
        allowLocalHttp: true,
        onChange: (id) => app.notify.push.forget(id),
      });
      const result = await setup.setup(orgId, url);
      await app.notify.push.refresh(orgId);
      return { action: result.action, events: result.subscription.events.length };
    },
    /** Conversations the bot has stored references for (installs). */
    conversations: async () => (await app.state.entries(NS.conversations)).length,
  },
  async () => {
    await allocations?.();
    await app.close();
  },
);

ready({ url, pid: process.pid, orgId });
