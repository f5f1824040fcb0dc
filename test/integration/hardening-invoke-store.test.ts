// A turn whose own record cannot be written (the audit line, the duplicate-delivery mark: state store down, disk full)
// is answered with the error card in the shape its kind of turn expects — never Teams' generic error from a 501 with
// no body — is logged as an error, and never says the action ran.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { channelMessage, executeInvoke, messageActionInvoke } from '../harness/activities.js';
import { composeQuery } from '../harness/compose.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { NS } from '../../src/infra/state/types.js';
import { REFRESH_VERB } from '../../src/features/notifications/cards.js';

let bot: TestBot;
const undo: Array<() => void> = [];

beforeAll(async () => {
  bot = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '10000', LOG_LEVEL: 'info' } });
});
afterAll(async () => {
  await bot.close();
});
afterEach(() => {
  for (const restore of undo.splice(0)) restore();
});

const DISK_FULL = 'ENOSPC: no space left on device, write';

/** Every audit line is refused from now on (until the test ends). */
function auditFails(): void {
  const audit = bot.app.audit;
  const command = audit.command.bind(audit);
  audit.command = () => Promise.reject(new Error(DISK_FULL));
  undo.push(() => (audit.command = command));
}

/** Every duplicate-delivery mark is refused from now on (until the test ends); other state writes go on. */
function duplicateMarksFail(): void {
  const state = bot.app.state;
  const setIfAbsent = state.setIfAbsent.bind(state);
  state.setIfAbsent = (ns, ...rest) => (ns === NS.seenActivities ? Promise.reject(new Error(DISK_FULL)) : setIfAbsent(ns, ...rest));
  undo.push(() => (state.setIfAbsent = setIfAbsent));
}

const channel = () => channelMessage('', { serviceUrl: bot.connector.url });

/** The error a turn logged at error level since `from` (a count of log lines). */
const errorsSince = (from: number) =>
  bot.logs
    .records()
    .slice(from)
    .filter((r) => r.level === 50 || r.level === 'error');

interface CardAnswer {
  statusCode: number;
  type: string;
  value: { type: string; body: unknown[] };
}

describe('a card click (Action.Execute) whose record cannot be written', () => {
  for (const [what, fail] of [
    ['the audit line', auditFails],
    ['the duplicate-delivery mark', duplicateMarksFail],
  ] as const) {
    it(`a Refresh-style run button while ${what} cannot be written (disk full) answers the error card in place, not a 501 with no body`, async () => {
      fail();
      const from = bot.logs.records().length;
      const res = await bot.send(executeInvoke({ verb: 'run', command: 'help' }, channel()));
      expect(res.status).toBe(200);
      const answer = res.json as unknown as CardAnswer;
      expect(answer.statusCode).toBe(200);
      expect(answer.type).toBe('application/vnd.microsoft.card.adaptive');
      expect(answer.value.type).toBe('AdaptiveCard');
      const shown = JSON.stringify(answer.value);
      expect(shown).toMatch(/went wrong/i);
      expect(shown).not.toContain('ENOSPC');
      expect(errorsSince(from).length).toBeGreaterThan(0);
    });
  }

  it("a notification card's Refresh while the duplicate-delivery mark cannot be written answers the error card, not a 501", async () => {
    duplicateMarksFail();
    const res = await bot.send(executeInvoke({ verb: REFRESH_VERB, kind: 'bill', id: '00n01bill' }, channel()));
    expect(res.status).toBe(200);
    const answer = res.json as unknown as CardAnswer;
    expect(answer.type).toBe('application/vnd.microsoft.card.adaptive');
    expect(JSON.stringify(answer.value)).toMatch(/went wrong/i);
  });
});

describe('a compose-box search or message action whose audit line cannot be written', () => {
  it('a compose-box search while the audit line cannot be written answers a message, not a 501 with no body', async () => {
    auditFails();
    const from = bot.logs.records().length;
    const res = await bot.send(composeQuery('vendors', 'Acme', { serviceUrl: bot.connector.url }));
    expect(res.status).toBe(200);
    const answer = (res.json as { composeExtension?: { type: string; text?: string } }).composeExtension;
    expect(answer?.type).toBe('message');
    expect(answer?.text).toMatch(/went wrong/i);
    expect(answer?.text).not.toContain('ENOSPC');
    expect(errorsSince(from).length).toBeGreaterThan(0);
  });

  it('"Look up in BILL" on a message while the audit line cannot be written opens a dialog with the error card, not a 501', async () => {
    auditFails();
    const res = await bot.send(messageActionInvoke('composeExtension/fetchTask', channel(), { content: 'Acme' }));
    expect(res.status).toBe(200);
    const task = (res.json as { task?: { type: string; value: { card: { content: unknown } } } }).task;
    expect(task?.type).toBe('continue');
    expect(JSON.stringify(task?.value.card.content)).toMatch(/went wrong/i);
  });

  it('an Insert from the dialog while the audit line cannot be written answers a message, not a 501', async () => {
    auditFails();
    const res = await bot.send(messageActionInvoke('composeExtension/submitAction', channel(), { data: { kind: 'vendor', id: 'nosuch' } }));
    expect(res.status).toBe(200);
    const answer = (res.json as { composeExtension?: { type: string; text?: string } }).composeExtension;
    expect(answer?.type).toBe('message');
    expect(answer?.text).toMatch(/went wrong/i);
  });
});

describe('a typed command whose audit line cannot be written', () => {
  it('gets the error card as a reply (as before), never a card saying it ran', async () => {
    auditFails();
    const res = await bot.say('help');
    expect(res.status).toBe(200);
    const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
    expect(JSON.stringify(ConnectorStandIn.card(reply!))).toMatch(/went wrong/i);
  });
});
