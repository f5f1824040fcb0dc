// A forgiving parser: a line that is not a command but names a bill, invoice, vendor or customer in the org's mirror
// answers with that record's command card; several get a card to pick one; nothing gets "I didn't understand", whose
// "Did you mean" button runs the suggestion. Text is matched in memory: nothing typed reaches BILL as a filter.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBot, type TestBot } from '../harness/bot.js';
import { executeInvoke } from '../harness/activities.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { ask, buttons, textOf } from '../harness/finance.js';

let bot: TestBot;

beforeAll(async () => {
  bot = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '10000' } });
});
afterAll(async () => {
  await bot.close();
});

const org = () => bot.app.sandbox!.org;
const requests = () => bot.app.sandbox!.requests();

/** "@billbridge <text>" in a new thread of the finance channel; resolves with the card the bot posted there. */
async function say(text: string) {
  const res = await bot.say(text);
  expect(res.status).toBe(200);
  const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
  return { card: ConnectorStandIn.card(reply!), base: res.activity };
}

/** The card a command shows, as it travels (JSON). */
async function commandCard(line: string) {
  const r = await ask(bot.app, line);
  expect(r.outcome).toBe('ok');
  return JSON.parse(JSON.stringify(r.reply.card)) as unknown;
}

describe('a line that names one record answers with its command card', () => {
  it('"@billbridge ACM-95303": a bill by its vendor invoice number gets the card `bill ACM-95303` shows', async () => {
    const number = org()
      .bills.all()
      .find((b) => !b.archived && b.invoice?.invoiceNumber)!.invoice!.invoiceNumber!;
    const { card } = await say(number);
    expect(card).toEqual(await commandCard(`bill ${number}`));
  });

  it('"@billbridge Acme": a vendor by the first word of its name gets the vendor card', async () => {
    const { card } = await say('Acme');
    expect(textOf(card)).toContain('Acme Office Supplies');
    expect(card).toEqual(await commandCard('vendor Acme Office Supplies'));
  });

  it('"@billbridge did we pay invoice 1042?": an invoice number in a question gets the invoice card', async () => {
    const { card } = await say('did we pay invoice #1042?');
    expect(card).toEqual(await commandCard('invoice 1042'));
  });

  it('the audit line names the command that answered and its arguments', async () => {
    const { base } = await say('did we pay invoice #1042?');
    const records = readFileSync(join(bot.stateDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.conversationId === base.conversation.id);
    expect(records).toEqual([expect.objectContaining({ kind: 'command', command: 'invoice', args: ['1042'], result: 'ok' })]);
  });

  it('a warm organisation answers a lookup with no BILL call at all', async () => {
    const number = org()
      .bills.all()
      .find((b) => b.invoice?.invoiceNumber)!.invoice!.invoiceNumber!;
    await say(`is ${number} from Northwind paid?`);
    bot.app.sandbox!.clearRequests();
    const { card } = await say(`is ${number} from Northwind paid?`);
    expect(textOf(card)).toContain('Which one do you mean?');
    expect(requests()).toEqual([]);
  });
});

describe('a line that names several records gets a card to pick one', () => {
  it('each button runs the command that shows its record, in a new reply', async () => {
    const number = org()
      .bills.all()
      .find((b) => b.invoice?.invoiceNumber)!.invoice!.invoiceNumber!;
    const { card, base } = await say(`${number} or invoice 1042, and what about Contoso?`);
    expect(textOf(card)).toContain('That names 3 records in BILL');
    expect(buttons(card).map((b) => b.data.command)).toEqual([`bill ${number}`, 'invoice 1042', 'customer Contoso Ltd']);
    const from = bot.connector.calls.length;
    const res = await bot.send(executeInvoke(buttons(card)[1]!.data, base));
    expect(res.status).toBe(200);
    const posted = await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.body?.type === 'message'));
    expect(ConnectorStandIn.card(posted)).toEqual(await commandCard('invoice 1042'));
  });
});

describe('a line that names nothing gets "I didn\'t understand"', () => {
  it('with a "Did you mean" button that runs the suggestion', async () => {
    const { card, base } = await say('bils due');
    expect(textOf(card)).toContain("I didn't understand that");
    expect(textOf(card)).toContain('Did you mean **bills due [days]**?');
    const run = buttons(card).find((b) => b.title === 'Run "bills due"')!;
    expect(run.data).toEqual({ verb: 'run', command: 'bills due' });
    const from = bot.connector.calls.length;
    await bot.send(executeInvoke(run.data, base));
    const posted = await bot.connector.waitFor((calls) => calls.slice(from).find((c) => c.body?.type === 'message'));
    expect(ConnectorStandIn.card(posted)).toEqual(await commandCard('bills due'));
  });

  it('hostile text (quotes, filter fragments, markup) is an ordinary unknown line, and no filter is built from it', async () => {
    await say('Acme'); // warm: the vendors and customers are read
    bot.app.sandbox!.clearRequests();
    const hostile = [
      `name:sw:"x" OR "1"="1"`,
      `vendorId:in:["a","b"],archived:eq:false`,
      `<script>alert(1)</script> <img src=x onerror=alert(1)> [click](javascript:alert(1))`,
      `'; DROP TABLE bills; -- {{DATE()}} \\" \\u0000 ** __ ~~`,
    ].join(' ');
    const { card } = await say(hostile);
    expect(textOf(card)).toContain("I didn't understand that");
    expect(requests()).toEqual([]);
  });

  it('5 KB of it gets the ordinary "too long" answer, with no BILL call', async () => {
    bot.app.sandbox!.clearRequests();
    const { card } = await say(`"name:sw:'x'" <b>ACM-95303</b> `.repeat(160));
    expect(textOf(card)).toContain('That message is too long for a command');
    expect(requests()).toEqual([]);
  });
});
