// Two bot processes behind one BILL sandbox and one Redis, as a company-wide deployment runs them: BILL's limits and
// one session hold for the fleet, a webhook delivered to both instances becomes one channel card, and a Redis crash
// in the middle of work costs no process, no notification and no duplicate.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { RedisConnection } from '../../src/infra/state/redisClient.js';
import { RedisStateStore } from '../../src/infra/state/redisStore.js';
import { NS } from '../../src/infra/state/types.js';
import { channelMessage, DEFAULT_USER } from '../harness/activities.js';
import { checkCard } from '../harness/cards.js';
import { ConnectorStandIn, type ConnectorCall } from '../harness/connector.js';
import { LogCapture } from '../harness/logs.js';
import { get, post } from '../harness/net.js';
import { TestRedis } from '../harness/redis.js';
import { billClient, startTestSandbox, type TestSandbox } from '../harness/sandbox.js';
import { KINDS } from '../../src/notify/kinds.js';
import { registerSecrets } from '../harness/secretScan.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const AP = '19:channel-ap@thread.tacv2';
/** Titles of the cards that say a command could not be answered (src/cards/errorCards.ts). */
const FAILURE_TITLES = [
  'BILL is busy',
  'BILL hourly limit reached',
  'BILL sign-in limit reached',
  'Something went wrong',
  'Temporarily unavailable',
  'One moment, please',
];
const UNAVAILABLE = 'Temporarily unavailable';
/** The fleet's METRICS_TOKEN: /metrics answers only a scraper that sends it. */
const METRICS_TOKEN = `mt-${randomBytes(24).toString('base64url')}`;

/** One billbridge instance: `node --import tsx src/index.ts`, its JSON log lines captured (and secret-scanned). */
class BotProcess {
  readonly logs: LogCapture;
  url = '';
  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    readonly stateDir: string,
  ) {
    this.logs = new LogCapture(`bot process ${name}`);
  }

  static async start(name: string, env: Record<string, string>): Promise<BotProcess> {
    const stateDir = mkdtempSync(join(tmpdir(), `billbridge-${name}-`));
    const proc = spawn(process.execPath, ['--disable-warning=DEP0111', '--import', 'tsx', 'src/index.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', STATE_DIR: stateDir, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const bot = new BotProcess(name, proc, stateDir);
    let buffered = '';
    let stderr = '';
    const listening = new Promise<string>((resolve, reject) => {
      proc.stdout.on('data', (d: Buffer) => {
        buffered += d.toString();
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl + 1);
          buffered = buffered.slice(nl + 1);
          bot.logs.write(line);
          try {
            const rec = JSON.parse(line) as { msg?: string; url?: string };
            if (rec.msg === 'billbridge listening' && rec.url) resolve(rec.url);
          } catch {
            // not JSON
          }
        }
      });
      proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      proc.once('exit', (code) => reject(new Error(`bot ${name} exited with ${code} before listening: ${stderr.slice(-2000)}`)));
    });
    bot.url = await listening;
    return bot;
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Resolves with the /readyz answer once it is `status` (the process answers while it connects). */
  async readyz(status: number, timeoutMs = 20_000): Promise<unknown> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const res = await get(`${this.url}/readyz`).catch(() => undefined);
      if (res?.status === status) return res.json;
      if (Date.now() > end) throw new Error(`${this.name}: /readyz never answered ${status} (last: ${res?.status} ${res?.text})`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Posts a channel message "@billbridge <text>" as Teams would; `answered` settles when the turn is over. */
  say(
    text: string,
    opts: Partial<Parameters<typeof channelMessage>[1]> & { serviceUrl: string },
  ): { conversationId: string; answered: Promise<number> } {
    const activity = channelMessage(text, opts);
    return { conversationId: activity.conversation.id, answered: post(`${this.url}/api/messages`, activity).then((r) => r.status) };
  }

  metric(name: string): Promise<number> {
    return get(`${this.url}/metrics`, { authorization: `Bearer ${METRICS_TOKEN}` }).then((r) => {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?)$`, 'm').exec(r.text);
      return m ? Number(m[1]) : 0;
    });
  }

  async stop(): Promise<void> {
    if (this.alive) {
      const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
      this.proc.kill('SIGTERM');
      const stopped = await Promise.race([exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 10_000))]);
      if (!stopped) this.proc.kill('SIGKILL');
    }
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}

/** What billbridge's webhook endpoint answers (status: accepted, duplicate...). */
interface RelayAnswer {
  status?: string;
}

/**
 * Stands between BILL and the fleet: each webhook BILL sends is delivered to instance A and, at the same time, its
 * duplicate to instance B (two load-balancer routes for one retried delivery). BILL hears A's answer.
 */
class WebhookRelay {
  readonly deliveries: Array<{
    eventId: string;
    eventType: string;
    answers: Array<{ to: string; status: number; body: RelayAnswer | undefined }>;
  }> = [];
  private server: Server | undefined;
  url = '';
  constructor(private readonly targets: () => BotProcess[]) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      this.relay(req).then(
        ([status, body]) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(body);
        },
        (err: unknown) => {
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: String(err) }));
        },
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api/bill/webhooks`;
    return this;
  }

  private async relay(req: IncomingMessage): Promise<[number, string]> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const meta = (JSON.parse(raw.toString('utf8')) as { metadata?: { eventId?: string; eventType?: string } }).metadata ?? {};
    const headers: Record<string, string> = { 'content-type': req.headers['content-type'] ?? 'application/json' };
    for (const [k, v] of Object.entries(req.headers)) if (k.startsWith('x-bill')) headers[k] = String(v);
    const answers = await Promise.all(
      this.targets().map(async (bot) => {
        const res = await request(`${bot.url}/api/bill/webhooks`, { method: 'POST', body: raw, headers });
        const text = await res.body.text();
        return { to: bot.name, status: res.statusCode, body: text ? (JSON.parse(text) as RelayAnswer) : undefined, text };
      }),
    );
    this.deliveries.push({
      eventId: meta.eventId ?? '',
      eventType: meta.eventType ?? '',
      answers: answers.map(({ to, status, body }) => ({ to, status, body })),
    });
    return [answers[0]!.status, answers[0]!.text];
  }

  of(eventType: string) {
    return this.deliveries.filter((d) => d.eventType === eventType);
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

let redis: TestRedis;
let sb: TestSandbox;
let connector: ConnectorStandIn;
let relay: WebhookRelay;
let a: BotProcess;
let b: BotProcess;
/** What each instance is started with (a rolling restart starts new ones the same way). */
let botEnv: Record<string, string>;
let store: RedisStateStore;
let storeConn: RedisConnection;

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The title (first TextBlock) of a reply's card. */
function titleOf(call: ConnectorCall): string {
  const card = ConnectorStandIn.card(call);
  return card.body?.find((x) => x.type === 'TextBlock')?.text ?? '';
}

/**
 * Sends commands at once, alternating between the instances, from 40 people in 100 channels (Teams allows a bot
 * 7 messages per second and 60 per 30 s in one channel, a typing indicator included), and returns each one's reply.
 */
async function burst(commands: string[], opts: { onReply?: (n: number) => void } = {}): Promise<ConnectorCall[]> {
  const sent = commands.map((text, i) =>
    (i % 2 ? b : a).say(text, {
      serviceUrl: connector.url,
      channel: `19:channel-c${i % 100}@thread.tacv2`,
      from: { id: `29:user-${i % 40}`, aadObjectId: `11111111-0000-4000-8000-${String(i % 40).padStart(12, '0')}`, name: `User ${i % 40}` },
    }),
  );
  const ids = new Set(sent.map((s) => s.conversationId));
  const replies = () => connector.messages().filter((c) => ids.has(c.conversationId!));
  let seen = 0;
  await connector.waitFor(
    () => {
      const n = replies().length;
      if (n !== seen) opts.onReply?.((seen = n));
      return n >= sent.length;
    },
    45_000,
    `${sent.length} replies`,
  );
  expect(await Promise.all(sent.map((s) => s.answered))).toEqual(Array(sent.length).fill(200));
  // Exactly one reply per command.
  const byConversation = new Map<string, ConnectorCall[]>();
  for (const r of replies()) byConversation.set(r.conversationId!, [...(byConversation.get(r.conversationId!) ?? []), r]);
  expect([...byConversation.values()].every((list) => list.length === 1)).toBe(true);
  return sent.map((s) => byConversation.get(s.conversationId)![0]!);
}

/** Commands a finance team types, over the sandbox's own records, each answered from BILL. */
function financeCommands(n: number): string[] {
  const invoices = sb.sandbox.org.invoices.all().filter((i) => !i.archived);
  const vendors = sb.sandbox.org.vendors.all().filter((v) => !v.archived);
  const kinds = [
    () => 'bills due',
    (i: number) => `invoice ${invoices[i % invoices.length]!.invoiceNumber}`,
    (i: number) => `vendor ${vendors[i % vendors.length]!.name.split(' ')[0]}`,
    () => 'bills overdue',
    () => 'invoices overdue',
  ];
  return Array.from({ length: n }, (_, i) => kinds[i % kinds.length]!(i));
}

/** Outbox entries still to deliver (shared by both instances). */
async function outboxEvents(): Promise<number> {
  return (await store.entries(NS.outbox)).filter(([k]) => k.startsWith('ev|')).length;
}

beforeAll(async () => {
  // Redis persists (AOF, fsync always) as production must: it holds bindings, subscriptions and the outbox.
  [redis, sb, connector] = await Promise.all([
    TestRedis.start({ persistent: true }),
    startTestSandbox({ webhooks: { retryDelaysMs: [300, 600, 1_200, 2_400, 4_800] } }),
    new ConnectorStandIn().start(),
  ]);
  relay = await new WebhookRelay(() => [a, b]).start();
  // BILL sends this organisation's events to the relay (a subscription made outside the bot: BILL_WEBHOOK_SECURITY_KEY).
  const admin = billClient(sb);
  const subscription = await admin.gateway.org(sb.credentials.orgId).subscriptions.create({
    name: 'billbridge fleet',
    notificationUrl: relay.url,
    events: KINDS.bills.types.map((type) => ({ type, version: '1' })),
  });
  await admin.close();
  await sb.control('POST', '/stats/reset');
  registerSecrets(async () => {
    const stats = await sb.stats();
    return [
      sb.credentials.password,
      sb.credentials.devKey,
      sb.credentials.spendApiToken,
      subscription.securityKey,
      ...stats.sessionsIssued,
    ];
  });
  const env = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    PORT: '0',
    REDIS_URL: redis.url,
    BILL_BASE_URL: sb.sandbox.baseUrl,
    BILL_SPEND_BASE_URL: sb.sandbox.spendBaseUrl,
    BILL_EVENTS_BASE_URL: sb.sandbox.eventsBaseUrl,
    BILL_DEV_KEY: sb.credentials.devKey,
    BILL_USERNAME: sb.credentials.username,
    BILL_PASSWORD: sb.credentials.password,
    BILL_ORG_ID: sb.credentials.orgId,
    BILL_SPEND_API_TOKEN: sb.credentials.spendApiToken,
    ADMIN_AAD_OBJECT_IDS: DEFAULT_USER.aadObjectId,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    BILL_WEBHOOK_SECURITY_KEY: subscription.securityKey!,
    // Every command reaches BILL (no cached answers), so the fleet's limits are what keeps BILL happy.
    CACHE_TTL_LIST_S: '0',
    CACHE_TTL_OBJECT_S: '0',
    USER_COMMANDS_PER_MINUTE: '1000',
    METRICS_TOKEN,
  };
  botEnv = env;
  [a, b] = await Promise.all([BotProcess.start('A', env), BotProcess.start('B', env)]);
  await Promise.all([a.readyz(200), b.readyz(200)]);
  const log = createLogger({ level: 'silent', secrets: new SecretRegistry() });
  storeConn = new RedisConnection({ url: redis.url, log, maxReconnectDelayMs: 50 });
  store = new RedisStateStore(storeConn, systemClock);
  await storeConn.waitReady(5_000);
}, 60_000);

afterAll(async () => {
  await Promise.all([a.stop(), b.stop()]);
  await storeConn.close();
  await Promise.all([relay.stop(), connector.stop(), sb.stop(), redis.close()]);
});

describe('two instances, one BILL budget', () => {
  it('300 concurrent BILL-backed commands split across both: at most 3 in flight at BILL, no BDC_1322, one login', async () => {
    // BILL answers in 15 ms, so calls overlap and only the shared limiter keeps them at 3.
    await sb.control('POST', '/latency', { ms: 15 });
    const started = Date.now();
    const replies = await burst(financeCommands(300));
    const ms = Date.now() - started;
    await sb.control('POST', '/latency', { ms: 0 });
    const titles = replies.map(titleOf);
    expect(titles.filter((t) => FAILURE_TITLES.includes(t))).toEqual([]);
    for (const r of replies.slice(0, 10)) expect(checkCard(ConnectorStandIn.card(r)).problems).toEqual([]);
    const stats = await sb.stats();
    expect(stats.maxConcurrentByOrg[sb.credentials.orgId]).toBe(3);
    expect(stats.limitErrors.concurrency).toBe(0);
    expect(stats.errorsByCode.BDC_1322 ?? 0).toBe(0);
    expect(stats.logins).toBe(1);
    // Both instances really did call BILL (each builds and refreshes its own replicas; most answers come from them).
    const granted = await Promise.all([a, b].map((bot) => bot.metric('billbridge_budget_granted_total\\{budget="bill.concurrency"\\}')));
    expect(granted.every((n) => n > 0)).toBe(true);
    console.log(
      `[cluster] 300 commands over 2 instances in ${ms} ms; BILL requests ${stats.requests}, max in flight ${stats.maxConcurrentByOrg[sb.credentials.orgId]}, logins ${stats.logins}, grants A/B ${granted.join('/')}`,
    );
  });

  it('after BILL expires the session, the fleet signs in again exactly once', async () => {
    const expired = await sb.control('POST', '/sessions/expire');
    expect(expired.json?.expired).toBe(1);
    const replies = await burst(financeCommands(60));
    expect(replies.map(titleOf).filter((t) => FAILURE_TITLES.includes(t))).toEqual([]);
    const stats = await sb.stats();
    expect(stats.errorsByCode.BDC_1109).toBeGreaterThanOrEqual(1);
    expect(stats.logins).toBe(2);
    expect(stats.limitErrors.concurrency).toBe(0);
  });
});

describe('notifications across the fleet', () => {
  it('a webhook delivered to instance A and its duplicate to instance B become one channel card', async () => {
    const sub = b.say('subscribe bills', { serviceUrl: connector.url, channel: AP });
    expect(await sub.answered).toBe(200);
    const [subReply] = await connector.waitForMessages(1, sub.conversationId);
    expect(JSON.stringify(ConnectorStandIn.card(subReply!))).toContain('Subscribed');

    const bill = sb.sandbox.org.bills.all().find((x) => x.paymentStatus === 'UNPAID' && !x.archived && x.invoice?.invoiceNumber)!;
    await sb.control('POST', `/bills/${bill.id}/pay`, {});
    await sb.control('POST', '/webhooks/flush');
    await until(
      'the bill event to be delivered and worked off',
      async () => relay.of('bill.updated').length === 1 && (await outboxEvents()) === 0,
    );

    const [delivery] = relay.of('bill.updated');
    expect(delivery!.answers.map((x) => x.status)).toEqual([200, 200]);
    expect(delivery!.answers.map((x) => x.body?.status).sort()).toEqual(['accepted', 'duplicate']);
    const cards = connector.messages(AP);
    expect(cards).toHaveLength(1);
    expect(JSON.stringify(ConnectorStandIn.card(cards[0]!))).toContain(
      `Bill ${bill.invoice!.invoiceNumber} from ${bill.vendorName} is paid`,
    );
  });
});

describe('a rolling restart', () => {
  it('loses no queued notification: a card Teams refused once is delivered exactly once after both instances were replaced', async () => {
    const before = connector.messages(AP).length;
    const logins = (await sb.stats()).logins;
    // Teams answers the first send with 503: the notification waits in the shared outbox for its retry.
    connector.failSends(1, { status: 503, body: { error: { code: 'ServiceUnavailable', message: 'try later' } } }, AP);
    const bill = sb.sandbox.org.bills.all().find((x) => x.paymentStatus === 'UNPAID' && !x.archived && x.invoice?.invoiceNumber)!;
    await sb.control('POST', `/bills/${bill.id}/pay`, {});
    await sb.control('POST', '/webhooks/flush');
    await connector.waitFor((calls) => calls.some((c) => c.conversationId === AP && c.status === 503), 10_000, 'the refused send');
    expect(await outboxEvents()).toBe(1);

    // Replace A, then B, as a rolling deployment does (SIGTERM: in-flight turns drain first).
    await a.stop();
    a = await BotProcess.start('A2', botEnv);
    await a.readyz(200);
    await b.stop();
    b = await BotProcess.start('B2', botEnv);
    await b.readyz(200);

    await until('the retried notification', async () => connector.messages(AP).length > before && (await outboxEvents()) === 0, 20_000);
    const cards = connector.messages(AP).slice(before);
    expect(cards).toHaveLength(1);
    expect(JSON.stringify(ConnectorStandIn.card(cards[0]!))).toContain(
      `Bill ${bill.invoice!.invoiceNumber} from ${bill.vendorName} is paid`,
    );
    // The new instances took the fleet's session from Redis: no login.
    const [reply] = await burst(['bills due']);
    expect(titleOf(reply!)).toBe('Bills due in the next 7 days');
    expect((await sb.stats()).logins).toBe(logins);
  });
});

describe('Redis dies in the middle of work and comes back', () => {
  it('no process crashes, commands say "temporarily unavailable" and reach nothing in BILL, and every notification arrives once', async () => {
    const logins = (await sb.stats()).logins;
    // Thirty bills by BILL id nobody asked for before, at 100 ms a BILL call each, 3 at a time (each is its own
    // GET): Redis dies once BILL has seen the tenth, so the rest of the burst meets it gone.
    await sb.control('POST', '/latency', { ms: 100 });
    const ids = sb.sandbox.org.bills
      .all()
      .map((b) => b.id)
      .slice(-30);
    expect(ids).toHaveLength(30);
    const searchesSeen = () => sb.sandbox.requests().filter((r) => r.route === 'GET /v3/bills/{id}').length;
    const seenBefore = searchesSeen();
    const killed = until('BILL to see the tenth lookup', () => searchesSeen() >= seenBefore + 10).then(() => redis.stop());
    const replies = await burst(ids.map((id) => `bill ${id}`));
    await killed;
    await sb.control('POST', '/latency', { ms: 0 });
    const titles = replies.map(titleOf);
    // Each command got one answer: BILL's data, or the card saying billbridge cannot reach its shared store.
    expect(titles.filter((t) => t === UNAVAILABLE).length).toBeGreaterThan(0);
    expect(titles.filter((t) => FAILURE_TITLES.includes(t) && t !== UNAVAILABLE)).toEqual([]);

    // While it is down: nothing reaches BILL.
    const requests = (await sb.stats()).requests;
    const during = await burst(financeCommands(6));
    expect(during.map(titleOf)).toEqual(Array(6).fill(UNAVAILABLE));
    expect((await sb.stats()).requests).toBe(requests);

    // A bill paid meanwhile: BILL's delivery is refused (503) by both instances, and BILL retries.
    const bill = sb.sandbox.org.bills.all().find((x) => x.paymentStatus === 'UNPAID' && !x.archived && x.invoice?.invoiceNumber)!;
    const earlier = relay.of('bill.updated').length;
    const cardsBefore = connector.messages(AP).length;
    await sb.control('POST', `/bills/${bill.id}/pay`, {});
    const attempts = () => relay.of('bill.updated').slice(earlier);
    await until('BILL to be told to retry', () => attempts().some((d) => d.answers.every((x) => x.status === 503)));
    expect(a.alive && b.alive).toBe(true);

    await redis.restart();
    await until('both instances to answer from BILL again', async () =>
      (await burst(['bills due', 'bills due'])).every((r) => titleOf(r) !== UNAVAILABLE),
    );
    await sb.control('POST', '/webhooks/flush');
    // The test reads the outbox through its own Redis client, which reconnects on its own schedule: a refused read
    // means "not yet".
    await until(
      'the retried event to be delivered and worked off',
      async () => attempts().some((d) => d.answers.some((x) => x.status === 200)) && (await outboxEvents().catch(() => Number.NaN)) === 0,
    );
    // One attempt was accepted (by either instance); no attempt after it was accepted again.
    const accepted = attempts().flatMap((d) => d.answers.filter((x) => x.body?.status === 'accepted'));
    expect(accepted).toHaveLength(1);

    // The earlier cards were not sent again; the new one arrived once.
    const cards = connector.messages(AP).slice(cardsBefore);
    expect(cards).toHaveLength(1);
    expect(JSON.stringify(ConnectorStandIn.card(cards[0]!))).toContain(
      `Bill ${bill.invoice!.invoiceNumber} from ${bill.vendorName} is paid`,
    );
    expect(a.alive && b.alive).toBe(true);
    await Promise.all([a.readyz(200), b.readyz(200)]);
    for (const bot of [a, b]) {
      const msgs = bot.logs.records().map((r) => r.msg);
      expect(msgs).toContain(
        'Redis connection lost: BILL commands answer "temporarily unavailable" and nothing is sent to BILL until it is back',
      );
      expect(msgs).toContain('Redis connection restored');
    }
    // Still the fleet's one session: Redis kept it through the crash.
    expect((await sb.stats()).logins).toBe(logins);
  });
});
