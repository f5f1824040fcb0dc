// The bot restarted with another SECRETS_KEY says at start-up how many stored secrets it cannot open, instead of
// finding out when BILL disables a subscription whose events it can no longer verify.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startBot } from '../harness/bot.js';
import { registerSecrets } from '../harness/secretScan.js';

const WEBHOOK_KEY = randomBytes(32).toString('base64');
const TOKEN = randomBytes(24).toString('hex');
registerSecrets(() => [WEBHOOK_KEY, TOKEN]);
const stateDir = mkdtempSync(join(tmpdir(), 'billbridge-secrets-'));
afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

const WARNING = 'stored secrets cannot be opened with SECRETS_KEY (was it changed?)';

describe('a restart with a changed SECRETS_KEY', () => {
  it('logs "2 stored secrets cannot be opened with SECRETS_KEY" at start-up; the same key restarts without it', async () => {
    const first = await startBot({ stateDir, env: { SECRETS_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'info' } });
    const orgId = first.app.sandbox!.credentials.orgId;
    try {
      await first.app.notify.keys.save({
        subscriptionId: 'sub-restart',
        orgId,
        name: 'billbridge',
        notificationUrl: 'https://bot.example.com/api/bill/webhooks',
        events: ['invoice.updated'],
        securityKey: WEBHOOK_KEY,
      });
      await first.app.approvals!.links.put({
        tenantId: 't',
        aadObjectId: 'a',
        orgId,
        billUserId: 'u',
        token: { name: 'sync', value: TOKEN },
        teamsUserId: '29:a',
      });
      expect(first.logs.text()).not.toContain(WARNING);
    } finally {
      await first.close();
    }

    const same = await startBot({ stateDir, env: { SECRETS_KEY: first.app.config.secretsKey!.toString('hex'), LOG_LEVEL: 'info' } });
    await same.close();
    expect(same.logs.text()).not.toContain(WARNING);

    const changed = await startBot({ stateDir, env: { SECRETS_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'info' } });
    await changed.close();
    const warnings = changed.logs.records().filter((r) => r.level === 'warn' && String(r.msg).includes(WARNING));
    expect(warnings.map((r) => r.msg)).toEqual([
      `2 ${WARNING}: webhook keys among them stop verifying BILL's events, approvers among them must connect again`,
    ]);
    expect(warnings[0]).toMatchObject({ unopenable: 2 });
  }, 60_000);
});
