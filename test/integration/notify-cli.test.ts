// `npm run webhooks` as an operator runs it against BILL (the sandbox stands in): setup creates BILL's subscription
// with an idempotency key and stores its key where the bot reads it, list and delete manage it, the 10-per-org rule
// is respected, and no key is ever printed.
import { spawn } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSandbox, type TestSandbox } from '../harness/sandbox.js';
import { startBot } from '../harness/bot.js';
import { freePort, post } from '../harness/net.js';
import { registerSecrets } from '../harness/secretScan.js';
import { NS } from '../../src/infra/state/types.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { systemClock } from '../../src/infra/clock.js';

const repo = resolve(import.meta.dirname, '../..');
const SECRETS_KEY = randomBytes(32).toString('base64');
const HOOK = 'https://billbridge.example.com/api/bill/webhooks';

let sb: TestSandbox;
let cwd: string;
let env: Record<string, string>;

beforeAll(async () => {
  sb = await startTestSandbox();
  cwd = mkdtempSync(join(tmpdir(), 'billbridge-cli-'));
  env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? cwd,
    STATE_DIR: join(cwd, 'state'),
    // A port nothing listens on: the CLI checks that no bot with the file store is running there.
    PORT: String(await freePort()),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    NODE_ENV: 'test',
    BILL_BASE_URL: sb.sandbox.baseUrl,
    BILL_EVENTS_BASE_URL: sb.sandbox.eventsBaseUrl,
    BILL_DEV_KEY: sb.credentials.devKey,
    BILL_USERNAME: sb.credentials.username,
    BILL_PASSWORD: sb.credentials.password,
    BILL_ORG_ID: sb.credentials.orgId,
    SECRETS_KEY,
  };
  registerSecrets(() => [SECRETS_KEY, ...sb.sandbox.org.subscriptions.all().map((s) => s.securityKey)]);
});
afterAll(async () => {
  await sb.stop();
  rmSync(cwd, { recursive: true, force: true });
});

function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(join(repo, 'node_modules/.bin/tsx'), [join(repo, 'tools/webhooks.ts'), ...args], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

describe('npm run webhooks', () => {
  it('setup creates the BILL subscription, stores its key sealed where the bot reads it, and prints no key', async () => {
    const run = await cli('setup', '--url', HOOK);
    expect(run.code, run.stderr).toBe(0);
    const subs = sb.sandbox.org.subscriptions.all();
    expect(subs).toHaveLength(1);
    expect(run.stdout).toContain(`Created subscription ${subs[0]!.id} -> ${HOOK}`);
    expect(run.stdout).toContain('sealed with SECRETS_KEY');
    const key = subs[0]!.securityKey;
    expect(run.stdout + run.stderr).not.toContain(key);
    const state = new SqliteStateStore(env.STATE_DIR!, systemClock);
    const stored = JSON.stringify(await state.entries(NS.webhookKeys));
    await state.close();
    expect(stored).toContain(subs[0]!.id);
    expect(stored).not.toContain(key);
    const audit = readFileSync(join(env.STATE_DIR!, 'audit.log'), 'utf8');
    expect(audit).toContain('"action":"webhook.setup"');
    expect(audit).toContain('"userId":"cli:');

    // The bot, started on the same state, verifies BILL's events with that key.
    const bot = await startBot({
      stateDir: env.STATE_DIR,
      env: {
        BILL_BASE_URL: env.BILL_BASE_URL!,
        BILL_EVENTS_BASE_URL: env.BILL_EVENTS_BASE_URL!,
        BILL_DEV_KEY: env.BILL_DEV_KEY!,
        BILL_USERNAME: env.BILL_USERNAME!,
        BILL_PASSWORD: env.BILL_PASSWORD!,
        BILL_ORG_ID: env.BILL_ORG_ID!,
        SECRETS_KEY,
      },
    });
    try {
      const body = JSON.stringify({
        metadata: {
          eventId: randomUUID(),
          subscriptionId: subs[0]!.id,
          organizationId: sb.credentials.orgId,
          eventType: 'vendor.created',
          version: '1',
        },
        vendor: { id: sb.sandbox.org.vendors.all()[0]!.id, name: 'New Vendor' },
      });
      const ok = await post(`${bot.url}/api/bill/webhooks`, body, {
        'x-bill-sha-signature': createHmac('sha256', key).update(body).digest('base64'),
      });
      expect(ok.json?.status).toBe('accepted');
      // While the bot holds STATE_DIR the CLI does not open it behind its back: it says who holds it.
      const refused = await cli('list');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `billbridge webhooks: STATE_DIR ${env.STATE_DIR!} is in use by another billbridge process (pid ${process.pid})`,
      );
    } finally {
      await bot.close();
    }
  }, 60_000);

  it('setup again changes nothing in BILL; list shows the subscription with its key held', async () => {
    const again = await cli('setup', '--url', HOOK);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('Already set up:');
    expect(sb.sandbox.org.subscriptions.all()).toHaveLength(1);
    const list = await cli('list');
    expect(list.code).toBe(0);
    expect(list.stdout).toContain('1 of 10 webhook subscriptions');
    expect(list.stdout).toContain('key stored');
  }, 60_000);

  it("respects BILL's 10 subscriptions per organisation, refuses http URLs, and deletes", async () => {
    const id = sb.sandbox.org.subscriptions.all()[0]!.id;
    expect((await cli('delete', id)).code).toBe(0);
    expect(sb.sandbox.org.subscriptions.all()).toHaveLength(0);
    const org = (await import('../harness/sandbox.js')).billClient(sb);
    try {
      for (let i = 0; i < 10; i++)
        await org.gateway.org(sb.credentials.orgId).subscriptions.create({
          name: `other ${i}`,
          events: [{ type: 'vendor.created', version: '1' }],
          notificationUrl: `https://elsewhere.example.com/${i}`,
        });
    } finally {
      await org.close();
    }
    const full = await cli('setup', '--url', HOOK);
    expect(full.code).toBe(1);
    expect(full.stderr).toContain('BILL allows 10 webhook subscriptions per organisation');
    expect(sb.sandbox.org.subscriptions.all()).toHaveLength(10);
    const plain = await cli('setup', '--url', 'http://billbridge.example.com/api/bill/webhooks');
    expect(plain.code).toBe(1);
    expect(plain.stderr).toContain('HTTPS');
    const wrong = await cli('frobnicate');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('Usage: npm run webhooks');
  }, 60_000);

  it("list shows a subscription name carrying terminal control sequences (ESC [ 2J, an OSC title, C1, a right-to-left override) escaped, never as sequences the operator's terminal runs", async () => {
    const victim = sb.sandbox.org.subscriptions.all().at(-1)!;
    expect((await cli('delete', victim.id)).code).toBe(0);
    const hostile = 'ops\x1b[2J\x1b[1;1H\x1b]0;owned\x07\u009b31m\u202etxt.exe\r\nforged line';
    const org = (await import('../harness/sandbox.js')).billClient(sb);
    try {
      await org.gateway.org(sb.credentials.orgId).subscriptions.create({
        name: hostile,
        events: [{ type: 'vendor.created', version: '1' }],
        notificationUrl: 'https://elsewhere.example.com/hostile',
      });
    } finally {
      await org.close();
    }
    expect(sb.sandbox.org.subscriptions.all().some((x) => x.name === hostile)).toBe(true);
    const list = await cli('list');
    expect(list.code, list.stderr).toBe(0);
    // eslint-disable-next-line no-control-regex -- control characters are what must not reach the terminal
    expect(list.stdout.replace(/\n/g, '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u);
    expect(list.stdout).toContain('"ops\\x1b[2J\\x1b[1;1H\\x1b]0;owned\\x07\\x9b31m\\u202etxt.exe\\r\\nforged line"');
  }, 60_000);
});
