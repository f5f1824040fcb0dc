// The bot process dies after BILL got its 200 and before Teams got the card: the card still goes out, once, when the
// bot comes back (the outbox is on disk); BILL delivering the same event again sends nothing. Both processes talk to
// one BILL sandbox run by the test, which holds the invoices the events are about (cards show BILL's record).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorStandIn } from '../harness/connector.js';
import { channelMessage } from '../harness/activities.js';
import { post } from '../harness/net.js';
import { startTestSandbox, type TestSandbox } from '../harness/sandbox.js';
import { registerSecrets } from '../harness/secretScan.js';
import { systemClock } from '../../src/clock.js';
import { SqliteStateStore } from '../../src/state/sqliteStore.js';
import { NS } from '../../src/state/types.js';

const repo = resolve(import.meta.dirname, '../..');
const KEY = randomBytes(32).toString('base64');
const CHANNEL = '19:channel-restart@thread.tacv2';
registerSecrets(() => [KEY]);

interface Running {
  child: ChildProcess;
  url: string;
  orgId: string;
  lines: string[];
  exited: Promise<number | null>;
}

let cwd: string;
let stateDir: string;
let connector: ConnectorStandIn;
let sandbox: TestSandbox;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // An empty working directory: no developer .env is read.
  cwd = mkdtempSync(join(tmpdir(), 'billbridge-restart-'));
  stateDir = join(cwd, 'state');
  connector = await new ConnectorStandIn().start();
  sandbox = await startTestSandbox();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await connector?.stop();
  await sandbox?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

/** Starts `node --import tsx src/index.ts` against the shared state directory and resolves once it listens. */
function startBotProcess(): Promise<Running> {
  // node itself (not the tsx wrapper, which would leave its node child running after a SIGKILL) with tsx's loader.
  const loader = pathToFileURL(join(repo, 'node_modules/tsx/dist/loader.mjs')).href;
  const child = spawn(process.execPath, ['--disable-warning=DEP0111', '--import', loader, join(repo, 'src/index.ts')], {
    cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? cwd,
      PORT: '0',
      HOST: '127.0.0.1',
      STATE_DIR: stateDir,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      BILL_WEBHOOK_SECURITY_KEY: KEY,
      BILL_BASE_URL: sandbox.baseUrl,
      BILL_DEV_KEY: sandbox.credentials.devKey,
      BILL_USERNAME: sandbox.credentials.username,
      BILL_PASSWORD: sandbox.credentials.password,
      BILL_ORG_ID: sandbox.credentials.orgId,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const lines: string[] = [];
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return new Promise<Running>((done, fail) => {
    const orgId = sandbox.credentials.orgId;
    let buffered = '';
    const timer = setTimeout(() => fail(new Error(`bot did not start within 25 s: ${lines.join('')}`)), 25_000);
    child.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString('utf8');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        lines.push(line);
        try {
          const rec = JSON.parse(line) as { msg?: string; url?: string; orgId?: string };
          if (rec.msg === 'billbridge listening' && rec.url) {
            clearTimeout(timer);
            done({ child, url: rec.url, orgId, lines, exited });
          }
        } catch {
          // not a log line
        }
      }
    });
    child.stderr!.on('data', (d: Buffer) => lines.push(d.toString('utf8')));
    child.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`bot exited with ${code} before listening: ${lines.join('\n')}`));
    });
  });
}

/** An invoice.created event about a new invoice BILL (the sandbox) has. */
function signedEvent(orgId: string, invoiceNumber: string, eventId = randomUUID()): { body: string; signature: string } {
  const invoice = { ...sandbox.sandbox.org.invoices.all()[0]!, id: `00e01${randomUUID().replace(/-/g, '').slice(0, 15)}`, invoiceNumber, totalAmount: 980, dueAmount: 980, dueDate: '2031-01-31', status: 'OPEN' as const, archived: false };
  sandbox.sandbox.org.invoices.put(invoice);
  const body = JSON.stringify({
    metadata: { eventId, subscriptionId: 'sub-outside-the-bot', organizationId: orgId, eventType: 'invoice.created', version: '1' },
    invoice,
  });
  return { body, signature: createHmac('sha256', KEY).update(body).digest('base64') };
}

describe('a crash between accepting an event and sending it', () => {
  it('sends the card after restart, exactly once, and a redelivery by BILL sends nothing', async () => {
    const first = await startBotProcess();
    const subscribe = channelMessage('subscribe invoices', { serviceUrl: connector.url, channel: CHANNEL });
    expect((await post(`${first.url}/api/messages`, subscribe)).status).toBe(200);
    await connector.waitForMessages(1, subscribe.conversation.id);

    // Teams fails the first send; the bot would retry it a moment later, but it is killed first.
    connector.failSends(1, { status: 503, body: { error: { code: 'ServiceUnavailable', message: 'try later' } } }, CHANNEL);
    const event = signedEvent(first.orgId, 'INV-7001');
    const accepted = await post(`${first.url}/api/bill/webhooks`, event.body, { 'x-bill-sha-signature': event.signature });
    expect(accepted.status).toBe(200);
    expect(accepted.json.status).toBe('accepted');
    await connector.waitFor((calls) => calls.some((c) => c.conversationId === CHANNEL && c.status === 503), 15_000, 'the first (failed) send');
    first.child.kill('SIGKILL');
    await first.exited;
    expect(() => process.kill(first.child.pid!, 0)).toThrow();
    expect(connector.messages(CHANNEL)).toHaveLength(0);
    // What the dead process left: the event, routed and not sent, under its lease.
    // (Opening STATE_DIR also proves the dead process's lock went with it.)
    const onDisk = new SqliteStateStore(stateDir, systemClock);
    const outbox = await onDisk.entries<{ targets?: Record<string, { state: string }> }>(NS.outbox);
    await onDisk.close();
    const left = outbox.filter(([k]) => k.startsWith('ev|'));
    expect(left).toHaveLength(1);
    expect(Object.values(left[0]![1].targets ?? {}).map((t) => t.state)).toEqual(['pending']);

    const second = await startBotProcess();
    expect(second.orgId).toBe(first.orgId);
    const [card] = await connector.waitForMessages(1, CHANNEL, 20_000);
    expect(JSON.stringify(ConnectorStandIn.card(card!))).toContain('Invoice INV-7001');

    // BILL delivers the same event again: acknowledged, not sent.
    const again = await post(`${second.url}/api/bill/webhooks`, event.body, { 'x-bill-sha-signature': event.signature });
    expect(again.json.status).toBe('duplicate');
    // A later event proves the worker ran after the duplicate.
    const marker = signedEvent(second.orgId, 'INV-7002');
    expect((await post(`${second.url}/api/bill/webhooks`, marker.body, { 'x-bill-sha-signature': marker.signature })).json.status).toBe('accepted');
    const cards = await connector.waitForMessages(2, CHANNEL, 20_000);
    expect(JSON.stringify(ConnectorStandIn.card(cards[1]!))).toContain('INV-7002');
    expect(cards.filter((c) => JSON.stringify(c.body).includes('INV-7001'))).toHaveLength(1);

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 90_000);
});
