// The bot process dies after BILL got its 200 and before Teams got the card: the card still goes out, once, when the
// bot comes back (the outbox is on disk); BILL delivering the same event again sends nothing. Both processes talk to
// one BILL sandbox run by the test, which holds the invoices the events are about (cards show BILL's record).
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorStandIn } from '../harness/connector.js';
import { channelMessage } from '../harness/activities.js';
import { post } from '../harness/net.js';
import { startTestSandbox, type TestSandbox } from '../harness/sandbox.js';
import { killSpawned, spawnBotProcess, type BotProcess } from '../harness/process.js';
import { registerSecrets } from '../harness/secretScan.js';
import { systemClock } from '../../src/infra/clock.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { NS } from '../../src/infra/state/types.js';

const KEY = randomBytes(32).toString('base64');
const CHANNEL = '19:channel-restart@thread.tacv2';
registerSecrets(() => [KEY]);

let cwd: string;
let stateDir: string;
let connector: ConnectorStandIn;
let sandbox: TestSandbox;

beforeAll(async () => {
  // An empty working directory: no developer .env is read.
  cwd = mkdtempSync(join(tmpdir(), 'billbridge-restart-'));
  stateDir = join(cwd, 'state');
  connector = await new ConnectorStandIn().start();
  sandbox = await startTestSandbox();
});
afterAll(async () => {
  killSpawned();
  await connector.stop();
  await sandbox.stop();
  rmSync(cwd, { recursive: true, force: true });
});

/** The real bot on the shared state directory, against the test's BILL sandbox; resolves once it is ready. */
function startBotProcess(): Promise<BotProcess> {
  return spawnBotProcess(cwd, stateDir, {
    BILL_WEBHOOK_SECURITY_KEY: KEY,
    BILL_BASE_URL: sandbox.baseUrl,
    BILL_DEV_KEY: sandbox.credentials.devKey,
    BILL_USERNAME: sandbox.credentials.username,
    BILL_PASSWORD: sandbox.credentials.password,
    BILL_ORG_ID: sandbox.credentials.orgId,
  }).started;
}

/** An invoice.created event about a new invoice BILL (the sandbox) has. */
function signedEvent(orgId: string, invoiceNumber: string, eventId = randomUUID()): { body: string; signature: string } {
  const invoice = {
    ...sandbox.sandbox.org.invoices.all()[0]!,
    id: `00e01${randomUUID().replace(/-/g, '').slice(0, 15)}`,
    invoiceNumber,
    totalAmount: 980,
    dueAmount: 980,
    dueDate: '2031-01-31',
    status: 'OPEN' as const,
    archived: false,
  };
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
    expect(accepted.json?.status).toBe('accepted');
    await connector.waitFor(
      (calls) => calls.some((c) => c.conversationId === CHANNEL && c.status === 503),
      15_000,
      'the first (failed) send',
    );
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
    expect(again.json?.status).toBe('duplicate');
    // A later event proves the worker ran after the duplicate.
    const marker = signedEvent(second.orgId, 'INV-7002');
    expect((await post(`${second.url}/api/bill/webhooks`, marker.body, { 'x-bill-sha-signature': marker.signature })).json?.status).toBe(
      'accepted',
    );
    const cards = await connector.waitForMessages(2, CHANNEL, 20_000);
    expect(JSON.stringify(ConnectorStandIn.card(cards[1]!))).toContain('INV-7002');
    expect(cards.filter((c) => JSON.stringify(c.body).includes('INV-7001'))).toHaveLength(1);

    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 90_000);
});
