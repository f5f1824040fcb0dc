// What a person sees never leaks: no bank or tax numbers on cards, no upstream messages, a reference on every error.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/infra/clock.js';
import { accessPolicy } from '../../src/features/access.js';
import { CommandRegistry } from '../../src/features/registry.js';
import { helpCommand } from '../../src/features/admin/help.js';
import type { CommandDefinition } from '../../src/features/types.js';
import type { TurnContext } from 'botbuilder';
import { Dispatcher } from '../../src/features/dispatch.js';
import { billbridgeBot } from '../../src/teams/bot.js';
import { CardMessages } from '../../src/teams/cardMessages.js';
import { errorReply } from '../../src/cards/errorCards.js';
import { adaptiveCard, facts, shortId, text, title } from '../../src/cards/card.js';
import { limiterUserCommandRate, memoryUserCommandRate, userRateKey } from '../../src/teams/userRate.js';
import { AuditTrail } from '../../src/infra/audit.js';
import { SqliteStateStore } from '../../src/infra/state/sqliteStore.js';
import { BillApiError, DependencyUnavailable, NotBound } from '../../src/errors.js';
import { checkCard } from '../harness/cards.js';
import { channelMessage } from '../harness/activities.js';
import { expectNoSensitive, leakedValues, poisonedCustomer, poisonedVendor, SENSITIVE, sensitiveValues } from '../harness/sensitive.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
afterEach(() => {
  vi.useRealTimers();
});

const TENANT_ID = 'aaaaaaaa-0000-4000-8000-000000000001';
const DANA = '11111111-0000-4000-8000-00000000d0d0';
const who = (aadObjectId: string) => ({ id: '29:user', aadObjectId, name: 'Dana Lee' });

/** A real bot (route table, steps, Dispatcher) with its own registry and a file audit trail, as app.ts wires them. */
function botWith(commands: CommandDefinition[], opts: { perMinute?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'billbridge-cards-'));
  dirs.push(dir);
  const config = loadConfig({ STATE_DIR: dir });
  const registry = new CommandRegistry();
  const help: CommandDefinition = {
    ...helpCommand,
    run: (ctx) => helpCommand.run(ctx, { registry, note: undefined, version: config.version }),
  };
  registry.register(help, ...commands);
  const state = new SqliteStateStore(dir, systemClock);
  const log = pino({ level: 'silent' });
  const audit = new AuditTrail({ store: state, clock: systemClock, log, scrub: (t) => t });
  const nothingNamed = { matches: [], lookedFor: { numbers: [], names: false }, building: [] };
  const orgBindings = { resolve: async () => 'org-under-test' };
  const dispatcher = new Dispatcher({
    registry,
    orgBindings,
    clock: systemClock,
    locale: config.locale,
    timeZone: config.timeZone,
    log,
    lookup: { find: async () => nothingNamed },
  });
  const rate = memoryUserCommandRate(opts.perMinute ?? 1000, systemClock);
  const noInstallEvents = async () => {
    throw new Error('no install events in these tests');
  };
  const bot = billbridgeBot({
    dispatcher,
    install: {
      installs: { recordInstall: noInstallEvents, get: noInstallEvents, update: noInstallEvents, remove: noInstallEvents },
      orgBindings: { describe: noInstallEvents },
      registry,
      graph: undefined,
      sandbox: true,
      version: config.version,
      appId: '',
    },
    access: accessPolicy(config),
    state,
    clock: systemClock,
    rate,
    audit,
    upstreamCalls: { scope: () => ({ counts: { bill: 2 }, deadline: Number.POSITIVE_INFINITY }) },
    log,
    cardMessages: new CardMessages(state, systemClock),
    cardActions: {},
    search: { query: () => Promise.reject(new Error('no searches in these tests')) },
    orgBindings: { forExtension: () => Promise.reject(new Error('no message actions in these tests')) },
    lookup: { find: async () => nothingNamed, commandFor: async () => undefined },
  });
  const auditRecords = (): Array<Record<string, unknown>> => {
    const file = join(dir, 'audit.log');
    return existsSync(file)
      ? readFileSync(file, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, unknown>)
      : [];
  };

  /**
   * A person types `line` in a channel. Resolves with what the bot sent (typing indicators and the card message), the
   * card, and how many audit records there were when the card went out.
   */
  async function say(line: string, aadObjectId = DANA) {
    const sent: SentActivity[] = [];
    let auditedBeforeReply = -1;
    const context = {
      activity: channelMessage(line, { serviceUrl: 'http://127.0.0.1:1/', from: who(aadObjectId), tenant: TENANT_ID }),
      turnState: new Map(),
      sendActivity: async (a: SentActivity) => {
        if (a.type === 'message') auditedBeforeReply = auditRecords().length;
        sent.push(a);
        return { id: `m${sent.length}` };
      },
    } as unknown as TurnContext;
    await bot(context);
    const message = sent.find((a) => a.type === 'message')!;
    return {
      kinds: sent.map((a) => a.type),
      card: message.attachments?.[0]?.content,
      summary: message.summary,
      auditedBeforeReply,
    };
  }
  return { say, auditRecords };
}

/** What the bot hands sendActivity: a typing indicator or a card message (the fields these tests read). */
interface SentActivity {
  type?: string;
  summary?: string;
  attachments?: Array<{ content?: unknown }>;
}

function throwing(name: string, err: () => unknown): CommandDefinition {
  return {
    name,
    usage: name,
    description: `fails with ${name}`,
    examples: [name],
    upstream: true,
    run: async () => {
      throw err();
    },
  };
}

describe('redaction helpers', () => {
  it('shortens identifiers to their last four characters', () => {
    expect(shortId('00901ABCDEFGH1234567')).toBe('…4567');
    expect(shortId('123')).toBe('…');
    expect(shortId('')).toBe('');
  });

  it('finds every bank and tax number in a BILL vendor and customer, at any depth', () => {
    const values = sensitiveValues([poisonedVendor(), { nested: { customers: [poisonedCustomer()] } }]);
    for (const v of Object.values(SENSITIVE)) expect(values).toContain(v);
    expect(values).not.toContain('Acme Office Supply');
  });

  it('catches a number shown with different separators, and a shortened id is not a leak', () => {
    const vendor = poisonedVendor();
    const leaky = adaptiveCard(
      [
        title(vendor.name),
        facts([
          ['Tax id', '987654321'],
          ['Account', '0001 2345 6789'],
        ]),
      ],
      { summary: 'vendor' },
    );
    expect(leakedValues(leaky.card, vendor).sort()).toEqual([SENSITIVE.bankAccountNumber, SENSITIVE.taxId].sort());
    const safe = adaptiveCard(
      [
        title(vendor.name),
        facts([
          ['Bank account', shortId(SENSITIVE.bankAccountNumber)],
          ['Vendor id', shortId(vendor.id)],
          ['Balance', '$1,250.50'],
        ]),
      ],
      { summary: 'vendor' },
    );
    expect(leakedValues(safe.card, vendor)).toEqual([]);
  });

  it('the check itself fails on a leaking card', () => {
    const card = adaptiveCard([text(`Routing ${SENSITIVE.routingNumber}`)], { summary: 'x' });
    expect(() => expectNoSensitive(card.card, poisonedVendor())).toThrow(/bank account or tax id/);
  });
});

describe('error cards', () => {
  const upstreamMessage = 'Vendor 98-7654321 bank 000123456789 rejected by processor node px-17 at 10.2.3.4';

  it('a BILL error becomes a card with the correlation id and none of the upstream message', async () => {
    const billError = () =>
      new BillApiError({
        category: 'server',
        status: 502,
        code: 'BDC_1399',
        message: upstreamMessage,
        entries: [{ code: 'BDC_1399', severity: 'ERROR', message: upstreamMessage }],
      });
    const { say, auditRecords } = botWith([throwing('boom bill', billError)]);
    const answer = await say('boom bill now');
    const [record] = auditRecords();
    expect(record).toMatchObject({
      kind: 'command',
      command: 'boom bill',
      args: ['now'],
      result: 'error',
      reason: 'BillApiError:server:BDC_1399',
      upstreamCalls: 2,
    });
    const json = JSON.stringify(answer.card);
    expect(json).toContain(`Reference: ${String(record!.correlationId)}`);
    expect(json).not.toContain('px-17');
    expect(json).not.toContain('rejected by processor');
    expect(json).not.toContain('BDC_1399');
    expectNoSensitive(answer.card, { taxId: SENSITIVE.taxId, accountNumber: SENSITIVE.bankAccountNumber });
    expect(checkCard(answer.card).problems).toEqual([]);
  });

  it('an unexpected error becomes "Something went wrong" with the reference, not its message', async () => {
    const { say, auditRecords } = botWith([
      throwing('boom', () => new TypeError(`Cannot read properties of undefined (reading 'taxId') ${upstreamMessage}`)),
    ]);
    const answer = await say('boom');
    const json = JSON.stringify(answer.card);
    expect(json).toContain('Something went wrong');
    expect(json).toContain(auditRecords()[0]!.correlationId);
    expect(json).not.toContain('Cannot read properties');
    expect(json).not.toContain('10.2.3.4');
    expect(checkCard(answer.card).problems).toEqual([]);
  });

  it.each([
    [
      'every BILL category',
      [
        'session',
        'credentials',
        'hourlyLimit',
        'concurrencyLimit',
        'notFound',
        'validation',
        'rateLimited',
        'server',
        'network',
        'unknown',
      ] as const,
    ],
  ])('never shows the upstream message, for %s', (_n, categories) => {
    for (const category of categories) {
      const reply = errorReply(
        new BillApiError({ category, status: 400, code: 'BDC_1000', message: upstreamMessage, entries: [{ message: upstreamMessage }] }),
        { correlationId: 'ref123', timeIn: () => '11:00' },
      );
      expect(JSON.stringify(reply)).not.toContain('px-17');
      expect(checkCard(reply.card).problems).toEqual([]);
    }
  });
});

describe('per-user command rate limit', () => {
  it('the fourth command in a minute from one person gets a polite card; another person is unaffected; a minute later it works again', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { say, auditRecords } = botWith([], { perMinute: 3 });
    const lastResult = () => auditRecords().at(-1)!.result;
    for (let i = 0; i < 3; i++) {
      await say('help');
      expect(lastResult()).toBe('ok');
    }
    const refused = await say('help');
    expect(lastResult()).toBe('refused');
    expect(JSON.stringify(refused.card)).toContain('One moment, please');
    expect(refused.summary).toMatch(/try again in \d+ s/);
    expect(checkCard(refused.card).problems).toEqual([]);
    await say('help', '22222222-0000-4000-8000-00000000e0e0');
    expect(lastResult()).toBe('ok');
    vi.advanceTimersByTime(61_000);
    await say('help');
    expect(lastResult()).toBe('ok');
    expect(
      auditRecords()
        .filter((r) => r.result === 'refused')
        .map((r) => r.reason),
    ).toEqual(['LimitExceeded:userRate']);
  });

  it('counts a person by Entra object id within their tenant, falling back to the Bot Framework id', () => {
    const scope = {
      kind: 'channel' as const,
      tenantId: TENANT_ID,
      teamId: undefined,
      channelId: undefined,
      aadGroupId: undefined,
      conversationId: '19:chan@thread.tacv2',
      serviceUrl: '',
    };
    expect(userRateKey({ scope, caller: who('ABCDEF00-0000-4000-8000-000000000000') })).toBe(
      'aaaaaaaa-0000-4000-8000-000000000001:abcdef00-0000-4000-8000-000000000000',
    );
    expect(userRateKey({ scope, caller: { id: '29:Someone', aadObjectId: undefined, name: undefined } })).toBe(
      'aaaaaaaa-0000-4000-8000-000000000001:29:someone',
    );
  });

  it('a failing shared store refuses as "temporarily unavailable", never lets everything through', async () => {
    const broken = limiterUserCommandRate(
      Object.assign(new RateLimiterMemory({ points: 1, duration: 60 }), { consume: () => Promise.reject(new Error('ECONNREFUSED')) }),
    );
    await expect(broken.take('k')).rejects.toBeInstanceOf(DependencyUnavailable);
  });
});

describe('the steps around a typed command', () => {
  it('a command that calls BILL shows the typing indicator before its answer, and its audit record is written before the answer goes out', async () => {
    const peek: CommandDefinition = {
      name: 'peek',
      usage: 'peek',
      description: 'reads BILL',
      examples: ['peek'],
      upstream: true,
      run: async () => adaptiveCard([title('Peeked')], { summary: 'peeked' }),
    };
    const { say, auditRecords } = botWith([peek]);
    const answer = await say('peek');
    expect(answer.kinds).toEqual(['typing', 'message']);
    expect(answer.auditedBeforeReply).toBe(1);
    expect(auditRecords()).toEqual([expect.objectContaining({ command: 'peek', result: 'ok', orgId: 'org-under-test' })]);
  });

  it('a command that needs nothing from BILL (help) and a refused one get no typing indicator, and are audited before their answer too', async () => {
    const { say } = botWith([], { perMinute: 1 });
    const help = await say('help');
    expect(help.kinds).toEqual(['message']);
    expect(help.auditedBeforeReply).toBe(1);
    const refused = await say('help');
    expect(refused.kinds).toEqual(['message']);
    expect(refused.auditedBeforeReply).toBe(2);
  });
});

describe('admin actions', () => {
  it('audit.admin appends a record that keeps non-secret detail and scrubs known secrets', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'billbridge-audit-'));
    dirs.push(dir);
    const store = new SqliteStateStore(dir, systemClock);
    const audit = new AuditTrail({
      store,
      clock: systemClock,
      log: pino({ level: 'silent' }),
      scrub: (t) => t.replaceAll('s3cr3t-session', '[REDACTED]'),
    });
    await audit.admin({
      action: 'link',
      orgId: '00801ORG',
      result: 'ok',
      tenantId: 't',
      teamId: '19:team',
      aadObjectId: 'admin-1',
      correlationId: 'abc',
      detail: { previousOrg: '00801OLD', note: 'session s3cr3t-session' },
    });
    const line = readFileSync(audit.location, 'utf8');
    expect(audit.location).toBe(join(dir, 'audit.log'));
    expect(JSON.parse(line)).toMatchObject({
      v: 1,
      kind: 'admin',
      action: 'link',
      orgId: '00801ORG',
      result: 'ok',
      aadObjectId: 'admin-1',
      detail: { previousOrg: '00801OLD', note: 'session [REDACTED]' },
    });
    expect(line).not.toContain('s3cr3t-session');
  });

  it('a record that cannot be written makes audit.admin throw', async () => {
    const failing = { kind: 'file', location: '/nonexistent', appendAudit: () => Promise.reject(new Error('EROFS')) } as never;
    const audit = new AuditTrail({ store: failing, clock: systemClock, log: pino({ level: 'silent' }), scrub: (t) => t });
    await expect(audit.admin({ action: 'unlink', result: 'ok' })).rejects.toThrow('EROFS');
    await expect(
      audit.command({ command: 'help', args: [], result: 'ok', upstreamCalls: 0, upstream: {}, correlationId: 'x', durationMs: 1 }),
    ).resolves.toBeUndefined();
  });

  it('the audit reason names an unbound team', async () => {
    const { say, auditRecords } = botWith([throwing('bills due', () => new NotBound('unbound'))]);
    await say('bills due 7');
    expect(auditRecords()[0]).toMatchObject({
      command: 'bills due',
      args: ['7'],
      result: 'error',
      reason: 'NotBound:unbound',
      orgId: 'org-under-test',
    });
  });

  it('a command whose arguments are secret is recorded without them', async () => {
    const connect: CommandDefinition = {
      name: 'connect',
      usage: 'connect <token>',
      description: 'link',
      examples: ['connect'],
      upstream: false,
      secretArgs: true,
      scopes: ['channel'],
      run: async () => adaptiveCard([title('ok')], { summary: 'ok' }),
    };
    const { say, auditRecords } = botWith([connect]);
    await say('connect tok-abcdef-123456');
    const [record] = auditRecords();
    expect(record).toMatchObject({ command: 'connect', args: [], result: 'ok' });
    expect(JSON.stringify(record)).not.toContain('tok-abcdef');
  });
});
