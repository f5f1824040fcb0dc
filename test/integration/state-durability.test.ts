// What was acknowledged survives kill -9: a process with the real store and webhook route is killed again and again
// on one STATE_DIR while BILL webhooks and writes are in flight, and every one answered 200 is there after the restart.
// Also, over real bot processes: one process per STATE_DIR, and the lock goes with a holder killed -9.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, post } from '../harness/net.js';
import { killSpawned, repo, spawnBotProcess, spawnTsx, type BotProcess } from '../harness/process.js';
import { registerSecrets } from '../harness/secretScan.js';
import { systemClock } from '../../src/infra/clock.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { NS } from '../../src/infra/state/types.js';
import { eventKey, outboxKey } from '../../src/notify/receiver.js';

const KEY = randomBytes(32).toString('base64');
registerSecrets(() => [KEY]);

let cwd: string;

beforeAll(() => {
  // An empty working directory: no developer .env is read.
  cwd = mkdtempSync(join(tmpdir(), 'billbridge-durability-'));
});
afterAll(async () => {
  killSpawned();
  rmSync(cwd, { recursive: true, force: true });
});

/** The real bot on `stateDir` (its embedded sandbox), taking BILL webhooks signed with KEY. */
const spawnBot = (stateDir: string) => spawnBotProcess(cwd, stateDir, { BILL_WEBHOOK_SECURITY_KEY: KEY });

async function kill9(bot: BotProcess): Promise<void> {
  bot.child.kill('SIGKILL');
  await bot.exited;
}

function signedEvent(orgId: string, eventId: string): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    metadata: { eventId, subscriptionId: 'sub-outside-the-bot', organizationId: orgId, eventType: 'vendor.created', version: '1' },
    vendor: { id: `00901${eventId.replace(/-/g, '').slice(0, 15)}`, name: `Vendor ${eventId.slice(0, 8)}` },
  });
  return { body, headers: { 'x-bill-sha-signature': createHmac('sha256', KEY).update(body).digest('base64') } };
}

/** A small seeded generator, so a failing run can be replayed (the seed is in the failure message). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The process killed in the loop: the real store, webhook receiver and webhook route, plus POST /write (a plain store
 * write answered once it resolves). Lighter than the whole bot, so a restart takes a fraction of the time; the whole
 * bot is killed and restarted in the test below and in notify-restart.test.ts.
 */
const CHILD = `
import { createRequire } from 'node:module';
const src = (f) => new URL(f, process.env.SRC_URL).href;
const { SqliteStateStore } = await import(src('infra/state/sqliteStore.ts'));
const { WebhookReceiver } = await import(src('notify/receiver.ts'));
const { WebhookKeys } = await import(src('notify/keys.ts'));
const { webhookRoute, readRawBody } = await import(src('http/webhooks.ts'));
const { createLogger, SecretRegistry } = await import(src('infra/log.ts'));
const { systemClock: clock } = await import(src('infra/clock.ts'));
const restify = createRequire(process.env.PACKAGE_JSON)('restify');
const state = new SqliteStateStore(process.env.STATE_DIR, clock);
const secrets = new SecretRegistry([process.env.KEY]);
const log = createLogger({ level: 'silent', secrets });
const keys = new WebhookKeys({ state, clock, log, secrets, secretsKey: undefined });
const receiver = new WebhookReceiver({ state, clock, log, keys, envKeys: { '00801DURABLE': process.env.KEY }, servesOrg: () => true, stale: () => {}, kick: () => {} });
const server = restify.createServer();
webhookRoute(receiver, log, clock)(server);
server.post('/write', async (req, res) => {
  const { key, value } = JSON.parse((await readRawBody(req, 65536)).toString('utf8'));
  try {
    await state.set('durability', key, value);
    res.send(200, { ok: true });
  } catch (err) {
    res.send(503, { error: String(err) });
  }
});
server.get('/readyz', async (_req, res) => res.send(state.isReady() ? 200 : 503, {}));
server.listen(0, '127.0.0.1', () => process.stdout.write('READY http://127.0.0.1:' + server.address().port + '\\n'));
`;

/** Runs CHILD on `stateDir` and resolves once it listens and /readyz says ready. */
function spawnChild(stateDir: string): Promise<BotProcess> {
  const file = join(cwd, 'child.mjs');
  writeFileSync(file, CHILD);
  const child = spawnTsx(file, cwd, {
    STATE_DIR: stateDir,
    KEY,
    SRC_URL: pathToFileURL(join(repo, 'src/')).href,
    PACKAGE_JSON: join(repo, 'package.json'),
  });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const output: string[] = [];
  return new Promise<BotProcess>((done, fail) => {
    child.stdout!.on('data', (d: Buffer) => {
      output.push(d.toString('utf8'));
      const m = /READY (\S+)/.exec(output.join(''));
      if (m)
        void get(`${m[1]!}/readyz`).then(
          (r) =>
            r.status === 200
              ? done({ child, url: m[1]!, orgId: '00801DURABLE', output, exited })
              : fail(new Error(`not ready: ${r.status}`)),
          fail,
        );
    });
    child.stderr!.on('data', (d: Buffer) => output.push(d.toString('utf8')));
    child.on('exit', (code) => fail(new Error(`child exited with ${code} before it was ready: ${output.join('')}`)));
  });
}

describe('kill -9 during writes', () => {
  it("every BILL webhook and store write answered 200 before a kill -9 is there after the restart, and BILL's redelivery of it is a duplicate", async () => {
    const seed = Number(process.env.DURABILITY_SEED ?? Date.now() % 1_000_000);
    const random = rng(seed);
    const stateDir = join(cwd, 'killed');
    const orgId = '00801DURABLE';
    /** Event ids BILL got a 200 for; event ids sent whose answer never came (BILL sends them again). */
    const acknowledged = new Set<string>();
    let unanswered: string[] = [];
    /** Store writes answered 200, with the value written. */
    const written = new Map<string, number>();
    const KILLS = 6;

    for (let round = 0; round <= KILLS; round++) {
      const child = await spawnChild(stateDir);
      // Everything acknowledged so far is recognised: BILL's redelivery is answered as a duplicate.
      for (const id of acknowledged) {
        const { body, headers } = signedEvent(orgId, id);
        const again = await post(`${child.url}/api/bill/webhooks`, body, headers);
        expect([id, again.status, again.json?.status], `seed ${seed}`).toEqual([id, 200, 'duplicate']);
      }
      if (round === KILLS) {
        await kill9(child);
        break;
      }
      // Deliveries in flight, eight at a time; after a random number of answers the process is killed mid-stream.
      const killAfter = 5 + Math.floor(random() * 60);
      const retries = unanswered;
      unanswered = [];
      let answered = 0;
      let killed: Promise<void> | undefined;
      const sendOne = async (n: number): Promise<void> => {
        if (n % 4 === 3) {
          const key = `w-${round}-${n}`;
          const res = await post(`${child.url}/write`, { key, value: n }).catch(() => undefined);
          if (res?.status === 200) written.set(key, n);
        } else {
          const id = retries.shift() ?? randomUUID();
          const { body, headers } = signedEvent(orgId, id);
          const res = await post(`${child.url}/api/bill/webhooks`, body, headers).catch(() => undefined);
          if (res?.status === 200) {
            expect(['accepted', 'duplicate'], `seed ${seed}`).toContain(res.json?.status);
            acknowledged.add(id);
          } else unanswered.push(id);
        }
        if (++answered === killAfter) killed = kill9(child);
      };
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (!killed) await sendOne(next++);
        }),
      );
      await killed;
    }
    expect(acknowledged.size, `seed ${seed}`).toBeGreaterThan(20);
    expect(written.size, `seed ${seed}`).toBeGreaterThan(5);

    // What the last killed process left on disk holds every acknowledged delivery and write.
    const store = new SqliteStateStore(stateDir, systemClock);
    try {
      const seen = new Set((await store.entries(NS.webhookEvents)).map(([key]) => key));
      const queued = new Set((await store.entries(NS.outbox)).map(([key]) => key));
      expect(
        [...acknowledged].filter((id) => !seen.has(eventKey(orgId, id)) && !queued.has(outboxKey(orgId, id))),
        `seed ${seed}`,
      ).toEqual([]);
      const stored = new Map(await store.entries<number>('durability'));
      expect(
        [...written].filter(([key, value]) => stored.get(key) !== value),
        `seed ${seed}`,
      ).toEqual([]);
    } finally {
      await store.close();
    }
  }, 60_000);
});

describe('one process per STATE_DIR', () => {
  it('a second bot on the same STATE_DIR exits with a message naming the first; after the first is killed -9 a new one starts', async () => {
    const stateDir = join(cwd, 'shared');
    const first = await spawnBot(stateDir).started;
    const second = spawnBot(stateDir);
    expect(await second.exited).toBe(1);
    expect(second.output.join('\n')).toContain(
      `billbridge: STATE_DIR ${stateDir} is in use by another billbridge process (pid ${first.child.pid}); stop that one first`,
    );
    // The refused process changed nothing: the first still answers.
    expect((await get(`${first.url}/readyz`)).status).toBe(200);

    await kill9(first);
    const third = await spawnBot(stateDir).started;
    expect((await get(`${third.url}/readyz`)).status).toBe(200);
    await kill9(third);
  }, 60_000);
});
