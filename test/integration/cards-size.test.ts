// A record whose BILL text is long (line descriptions, a bill's description) still gets its card in Teams: Teams
// refuses a bot message over 100 KB counted in UTF-16 (413 MessageSizeTooBig), which left the person with no answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn, MAX_MESSAGE_UTF16_BYTES } from '../harness/connector.js';
import { textOf } from '../harness/finance.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
let bot: TestBot;
const org = () => bot.app.sandbox!.org;
/** 8,000 characters of markup-looking text, as a pasted description could be. */
const long = (i: number) => `${'*[x]'.repeat(2_000)} ${i}`;

beforeAll(async () => {
  bot = await startBot({ clock: new ManualClock(NOW) });
});

afterAll(async () => {
  await bot.close();
});

/** Says `line` in a channel and returns every send of the answer the stand-in saw, delivered or refused. */
async function answer(line: string) {
  const res = await bot.say(line);
  const conversation = res.activity.conversation.id;
  const calls = await bot.connector.waitFor(
    (all) => {
      const sends = all.filter(
        (c) => c.conversationId === conversation && (c.kind === 'reply' || c.kind === 'send') && c.body?.type === 'message',
      );
      return sends.length > 0 ? sends : undefined;
    },
    10_000,
    `the answer to "${line}"`,
  );
  return calls;
}

describe('records with long BILL text', () => {
  it('an invoice with four 8,000-character line descriptions gets its card, the descriptions shortened', async () => {
    const base = org().invoices.all()[0]!;
    org().invoices.put({
      ...base,
      id: '00e01LONGLINES000001',
      invoiceNumber: 'LONGLINES-1',
      invoiceLineItems: Array.from({ length: 4 }, (_, i) => ({ id: `li${i}`, price: 10, quantity: 1, description: long(i) })),
      updatedTime: new Date(NOW).toISOString(),
    });
    const [sent, ...more] = await answer('invoice LONGLINES-1');
    expect(more).toEqual([]);
    expect(sent!.status).toBe(200);
    expect(sent!.raw.length * 2).toBeLessThanOrEqual(MAX_MESSAGE_UTF16_BYTES);
    const shown = textOf(ConnectorStandIn.card(sent!));
    expect(shown).toContain('Invoice LONGLINES-1');
    expect(shown).toContain('…');
  });

  it('a bill with 8,000-character line descriptions, and one with an 8,000-character description, get their cards', async () => {
    const base = org().bills.all()[0]!;
    org().bills.put({
      ...base,
      id: '00n01LONGLINES000001',
      invoice: { ...base.invoice, invoiceNumber: 'LONGBILL-1' },
      billLineItems: Array.from({ length: 5 }, (_, i) => ({ id: `bl${i}`, amount: 10, description: long(i) })),
      updatedTime: new Date(NOW).toISOString(),
    });
    org().bills.put({
      ...base,
      id: '00n01LONGDESCR000001',
      invoice: { ...base.invoice, invoiceNumber: 'LONGBILL-2' },
      billLineItems: [],
      description: long(9).repeat(4),
      updatedTime: new Date(NOW).toISOString(),
    });
    for (const number of ['LONGBILL-1', 'LONGBILL-2']) {
      const [sent] = await answer(`bill ${number}`);
      expect(sent!.status).toBe(200);
      expect(textOf(ConnectorStandIn.card(sent!))).toContain(`Bill ${number}`);
    }
  });
});
