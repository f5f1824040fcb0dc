// The audit trail on a real turn: who, where, which command and org, the outcome and the BILL calls it made.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { DEFAULT_USER, TENANT, teamIds } from '../harness/activities.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { checkCard } from '../harness/cards.js';
import { expectNoSensitive } from '../harness/sensitive.js';
import { adaptiveCard, facts, shortId, title } from '../../src/cards/card.js';
import type { CommandDefinition } from '../../src/features/types.js';

let bot: TestBot;
let vendorIds: string[];

/** A command that reads two vendors from BILL and shows them the way cards must: no bank or tax numbers, short ids. */
const vendorPeek: CommandDefinition = {
  name: 'vendor peek',
  usage: 'vendor peek',
  description: 'Two vendors, for the audit test',
  examples: ['vendor peek'],
  upstream: true,
  async run(ctx) {
    const org = bot.app.bill.org(ctx.orgId!, { priority: 'interactive' });
    const vendors = [await org.vendors.get(vendorIds[0]!), await org.vendors.get(vendorIds[1]!)];
    return adaptiveCard([title('Vendors'), facts(vendors.map((v) => [v.name, `id ${shortId(v.id)}`]))], { summary: 'Two vendors' });
  },
};

beforeAll(async () => {
  bot = await startBot();
  bot.app.registry.register(vendorPeek);
  vendorIds = bot.app
    .sandbox!.org.vendors.all()
    .slice(0, 2)
    .map((v) => v.id);
});
afterAll(async () => {
  await bot.close();
});

/** One audit line as written; each test asserts the fields it reads. */
interface AuditLine {
  command?: string;
  conversationId?: string;
  upstream: { bill: number; 'bill.login'?: number };
  correlationId?: string;
  durationMs?: number;
  time: string;
  [key: string]: unknown;
}

function auditRecords(): AuditLine[] {
  return readFileSync(bot.app.audit.location, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as AuditLine);
}

describe('a channel member runs a command that reads BILL', () => {
  it('leaves one audit line with who, where, the command, org, result, the BILL calls made, correlation id and duration', async () => {
    const before = bot.app.sandbox!.stats().requests;
    const res = await bot.say('vendor peek');
    const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
    const billCalls = bot.app.sandbox!.stats().requests - before;
    expect(billCalls).toBeGreaterThanOrEqual(2);

    const card = ConnectorStandIn.card(reply!);
    expect(checkCard(card).problems).toEqual([]);
    expectNoSensitive(card, bot.app.sandbox!.org.vendors.all());

    expect(bot.app.audit.location).toBe(join(bot.stateDir, 'audit.log'));
    const record = auditRecords().find((r) => r.command === 'vendor peek')!;
    const ids = teamIds();
    expect(record).toMatchObject({
      v: 1,
      kind: 'command',
      tenantId: TENANT,
      teamId: ids.team,
      channelId: ids.channel,
      conversationId: res.activity.conversation.id,
      aadObjectId: DEFAULT_USER.aadObjectId,
      userId: DEFAULT_USER.id,
      command: 'vendor peek',
      args: [],
      orgId: bot.app.sandbox!.credentials.orgId,
      result: 'ok',
      upstreamCalls: billCalls,
    });
    expect(record.upstream.bill + (record.upstream['bill.login'] ?? 0)).toBe(billCalls);
    expect(record.correlationId).toMatch(/^[0-9a-f]{12}$/);
    expect(record.durationMs).toBeGreaterThanOrEqual(0);
    expect(Date.parse(record.time)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('a command that needs nothing from BILL records zero upstream calls, and the line never holds the sandbox secrets', async () => {
    const res = await bot.say('help');
    await bot.connector.waitForMessages(1, res.activity.conversation.id);
    const record = auditRecords().find((r) => r.conversationId === res.activity.conversation.id)!;
    expect(record).toMatchObject({ command: 'help', result: 'ok', upstreamCalls: 0 });
    const raw = readFileSync(bot.app.audit.location, 'utf8');
    const demo = bot.app.sandbox!.credentials;
    for (const secret of [demo.password, demo.devKey, ...bot.app.sandbox!.stats().sessionsIssued]) expect(raw).not.toContain(secret);
  });

  it('text that is not a command is recorded without what was typed', async () => {
    const res = await bot.say('my password is hunter2-hunter2');
    await bot.connector.waitForMessages(1, res.activity.conversation.id);
    const record = auditRecords().find((r) => r.conversationId === res.activity.conversation.id)!;
    expect(record).toMatchObject({ args: [], result: 'unknown' });
    expect(record.command).toBeUndefined();
    expect(readFileSync(bot.app.audit.location, 'utf8')).not.toContain('hunter2');
  });
});
