// "Look up in BILL" on a message, as Teams drives it: composeExtension/fetchTask opens a dialog listing what the
// message names in the org's mirror (each with Insert), composeExtension/submitAction answers the chosen record's
// command card for the person's compose box. The bot posts nothing; the text never reaches BILL as a filter.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { channelMessage, groupChatMessage, messageActionInvoke, OTHER_TENANT, TENANT, teamIds } from '../harness/activities.js';
import { startMultiOrgBot, startTwoOrgSandbox, type TwoOrgs } from '../harness/orgs.js';
import { ask, buttons, expectValidCard, textOf } from '../harness/finance.js';
import { poisonedVendor } from '../harness/sensitive.js';
import { sandboxControlOk } from '../harness/sandbox.js';

type Base = Parameters<typeof messageActionInvoke>[1];
interface Answer {
  task?: { type: string; value: { title: string; card: { contentType: string; content: unknown } } };
  composeExtension?: {
    type: string;
    attachmentLayout?: string;
    text?: string;
    attachments?: Array<{ contentType: string; content: unknown }>;
  };
}

/** Picks "Look up in BILL" on a message with this (HTML) content; resolves with the dialog's card. */
async function lookUp(bot: TestBot, content: string, base: Base = channel(bot)) {
  const res = await bot.send(messageActionInvoke('composeExtension/fetchTask', base, { content }));
  expect(res.status).toBe(200);
  const answer = res.json as Answer;
  expect(answer.task?.type).toBe('continue');
  expect(answer.task?.value.title).toBe('Look up in BILL');
  expect(answer.task?.value.card.contentType).toBe('application/vnd.microsoft.card.adaptive');
  return answer.task!.value.card.content;
}

/** Presses a dialog button (Action.Submit): Teams sends its data in a submitAction invoke. */
async function press(bot: TestBot, data: Record<string, unknown>, base: Base = channel(bot)): Promise<Answer> {
  const res = await bot.send(messageActionInvoke('composeExtension/submitAction', base, { data }));
  expect(res.status).toBe(200);
  return res.json as Answer;
}

const channel = (bot: TestBot, opts: { tenant?: string; team?: string } = {}): Base => {
  const ids = teamIds(opts.team);
  return channelMessage('', { serviceUrl: bot.connector.url, tenant: opts.tenant, team: ids.team, channel: ids.channel });
};

/** The card a command shows, as it travels (JSON). */
async function commandCard(bot: TestBot, line: string) {
  const r = await ask(bot.app, line);
  expect(r.outcome).toBe('ok');
  return JSON.parse(JSON.stringify(r.reply.card)) as unknown;
}

const HOSTILE = [
  `name:sw:"x" OR "1"="1"`,
  `vendorId:in:["a","b"],archived:eq:false`,
  `<script>alert(1)</script> <img src=x onerror=alert(1)> [click](javascript:alert(1)) <at>x</at> &lt;at&gt;`,
  `'; DROP TABLE bills; -- {{DATE()}} \\" ** __ ~~ #1999-12-31`,
].join(' ');

describe('Look up in BILL in a single-organisation deployment', () => {
  let bot: TestBot;
  const requests = () => bot.app.sandbox!.requests();
  const bills = () => bot.app.sandbox!.org.bills.all().filter((b) => !b.archived && b.invoice?.invoiceNumber);

  beforeAll(async () => {
    bot = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '10000', ALLOWED_TENANT_IDS: TENANT } });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('a cold organisation reads its mirror once, as commands do, and builds no filter from the text', async () => {
    const number = bills()[0]!.invoice!.invoiceNumber!;
    const card = await lookUp(bot, `<p>${HOSTILE} <b>${number}</b> ${'ACM-0 '.repeat(30)}</p>`);
    expect(textOf(card)).toContain(`**Bill** ${number}`);
    const filters = requests().flatMap((q) => (q.filters ? [q.filters] : []));
    expect(filters.filter((f) => !/^(updatedTime:gte:|paymentStatus:ne:"PAID"|archived:eq:false)/.test(f))).toEqual([]);
    // One list walk per kind at most, whatever the number of tokens.
    expect(requests().filter((q) => q.route === 'GET /v3/bills').length).toBeLessThanOrEqual(2);
  });

  it('the dialog lists what a message names, each with Insert, and posts nothing to the conversation', async () => {
    const [a, b] = bills();
    const calls = bot.connector.calls.length;
    const card = await lookUp(
      bot,
      `<p>Did we pay <b>${a!.invoice!.invoiceNumber}</b>?</p><p>Also invoice #1042 &amp; ${b!.invoice!.invoiceNumber}, Contoso&#39;s.</p>`,
    );
    expectValidCard(card);
    expect(textOf(card)).toContain('Found 4 records in BILL');
    const contoso = bot.app.sandbox!.org.customers.all().find((c) => c.name === 'Contoso Ltd')!;
    expect(buttons(card).map((x) => [x.title, x.data])).toEqual([
      [`Insert Bill ${a!.invoice!.invoiceNumber}`, { verb: 'insert', kind: 'bill', number: a!.invoice!.invoiceNumber }],
      [`Insert Bill ${b!.invoice!.invoiceNumber}`, { verb: 'insert', kind: 'bill', number: b!.invoice!.invoiceNumber }],
      ['Insert Invoice 1042', { verb: 'insert', kind: 'invoice', number: '1042' }],
      ['Insert Customer Contoso Ltd', { verb: 'insert', kind: 'customer', id: contoso.id }],
    ]);
    expect(bot.connector.calls.slice(calls)).toEqual([]);
  });

  it("Insert answers the record's command card for the compose box, and posts nothing", async () => {
    const number = bills()[1]!.invoice!.invoiceNumber!;
    const calls = bot.connector.calls.length;
    const answer = await press(bot, { verb: 'insert', kind: 'bill', number });
    expect(answer.composeExtension?.type).toBe('result');
    expect(answer.composeExtension?.attachmentLayout).toBe('list');
    const [attachment] = answer.composeExtension!.attachments!;
    expect(attachment!.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expect(attachment!.content).toEqual(await commandCard(bot, `bill ${number}`));
    expect(Buffer.byteLength(JSON.stringify(attachment!.content))).toBeLessThanOrEqual(28 * 1024);
    expect(bot.connector.calls.slice(calls)).toEqual([]);
  });

  it("a vendor's Insert (by BILL id) answers the vendor card for the name BILL has", async () => {
    const card = await lookUp(bot, 'Is Acme still owed anything?');
    const insert = buttons(card).find((x) => x.title === 'Insert Vendor Acme Office Supplies')!;
    expect(insert.data).toMatchObject({ verb: 'insert', kind: 'vendor' });
    const answer = await press(bot, insert.data);
    expect(answer.composeExtension?.attachments?.[0]?.content).toEqual(await commandCard(bot, 'vendor Acme Office Supplies'));
    // A forged id names nothing; a forged kind or number is refused before anything runs.
    expect((await press(bot, { verb: 'insert', kind: 'vendor', id: '00900000000000000000' })).composeExtension).toEqual({
      type: 'message',
      text: 'That record is no longer in BILL.',
    });
    expect((await press(bot, { verb: 'insert', kind: 'payment', number: 'x' })).composeExtension?.type).toBe('message');
    expect((await press(bot, { verb: 'insert', kind: 'vendor', id: 'name:sw:"a"' })).composeExtension?.type).toBe('message');
  });

  it('a vendor whose BILL name holds a double quote is listed and its Insert answers its card, not "leave out quotes"', async () => {
    const org = bot.app.sandbox!.org;
    const vendor = org.vendors.put(
      poisonedVendor({ id: '00901QUOTEDNAME00002', name: 'Zanzibar "Best" Pizza', updatedTime: new Date().toISOString() }),
    );
    await bot.app.mirror.markStale(org.id, 'vendor', vendor.id);
    const card = await lookUp(bot, 'Did we pay Zanzibar "Best" Pizza?');
    const insert = buttons(card).find((x) => x.title === 'Insert Vendor Zanzibar "Best" Pizza')!;
    expect(insert.data).toMatchObject({ verb: 'insert', kind: 'vendor', id: vendor.id });
    const answer = await press(bot, insert.data);
    expect(answer.composeExtension?.type).toBe('result');
    const inserted = answer.composeExtension!.attachments![0]!.content;
    expectValidCard(inserted);
    expect(textOf(inserted).split('\n')[0]).toBe(vendor.name);
  });

  it('a warm organisation answers a look-up and an Insert with no BILL call', async () => {
    const number = bills()[2]!.invoice!.invoiceNumber!;
    bot.app.sandbox!.clearRequests();
    const card = await lookUp(bot, `who approved ${number} for Northwind?`);
    expect(textOf(card)).toContain(`**Bill** ${number}`);
    await press(bot, { verb: 'insert', kind: 'bill', number });
    expect(requests()).toEqual([]);
  });

  it('nothing named: the dialog says what it looked for', async () => {
    const card = await lookUp(bot, '<p>Lunch at noon? Bring ZZ-404 and the 2026 plan.</p>');
    expect(textOf(card)).toContain('Nothing found in BILL');
    expect(textOf(card)).toContain('bill and invoice numbers (ZZ-404) and vendor and customer names');
    expect(buttons(card)).toEqual([]);
  });

  it('5 KB of quotes, filter fragments and markup gets an ordinary "nothing found", quickly and with no BILL call', async () => {
    bot.app.sandbox!.clearRequests();
    const started = performance.now();
    const card = await lookUp(bot, HOSTILE.repeat(Math.ceil(5_000 / HOSTILE.length)));
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(textOf(card)).toContain('Nothing found in BILL');
    expect(requests()).toEqual([]);
  });

  it("a group chat looks in the deployment's organisation", async () => {
    const number = bills()[0]!.invoice!.invoiceNumber!;
    const card = await lookUp(bot, number, groupChatMessage('', { serviceUrl: bot.connector.url }));
    expect(textOf(card)).toContain(`**Bill** ${number}`);
  });

  it('a tenant not allowed is refused as for commands, and its message is not looked up', async () => {
    bot.app.sandbox!.clearRequests();
    const card = await lookUp(bot, bills()[0]!.invoice!.invoiceNumber!, channel(bot, { tenant: OTHER_TENANT }));
    expect(textOf(card)).not.toContain('Found');
    expect(textOf(card).toLowerCase()).toContain('organisation');
    const answer = await press(bot, { verb: 'insert', kind: 'invoice', number: '1042' }, channel(bot, { tenant: OTHER_TENANT }));
    expect(answer.composeExtension?.type).toBe('message');
    expect(requests()).toEqual([]);
  });

  it('each look-up leaves an audit record, without the message text', async () => {
    const base = channel(bot, { team: 'audited' });
    await lookUp(bot, 'secret plans for ACM-4242', base);
    await press(bot, { verb: 'insert', kind: 'invoice', number: '1042' }, base);
    const records = readFileSync(join(bot.stateDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.teamId === teamIds('audited').team);
    expect(records.map((r) => [r.command, r.result])).toEqual([
      [undefined, 'ok'],
      ['invoice', 'ok'],
    ]);
    expect(JSON.stringify(records)).not.toContain('secret plans');
  });

  it('another command id is not this action (501, as any invoke without a route)', async () => {
    const res = await bot.send(
      messageActionInvoke('composeExtension/fetchTask', channel(bot), { commandId: 'somethingElse', content: 'x' }),
    );
    expect(res.status).toBe(501);
  });
});

describe('Look up in BILL in a multi-organisation deployment', () => {
  let orgs: TwoOrgs;
  let bot: TestBot;

  beforeAll(async () => {
    orgs = await startTwoOrgSandbox();
    bot = await startMultiOrgBot(orgs, '66666666-0000-4000-8000-00000000ad01', { env: { USER_COMMANDS_PER_MINUTE: '10000' } });
  });
  afterAll(async () => {
    await bot.close();
    await orgs.sandbox.stop();
  });

  it('a chat gets a clear "use it from a channel of a linked team" answer', async () => {
    const card = await lookUp(bot, 'invoice 1042', groupChatMessage('', { serviceUrl: bot.connector.url }));
    expect(textOf(card)).toContain('Use Look up in BILL from a channel of a linked team');
    const answer = await press(
      bot,
      { verb: 'insert', kind: 'invoice', number: '1042' },
      groupChatMessage('', { serviceUrl: bot.connector.url }),
    );
    expect(answer.composeExtension).toEqual({ type: 'message', text: 'Look up in BILL works on messages in a channel of a linked team.' });
  });

  it('a channel of a team not linked gets the "not linked" answer commands give', async () => {
    const card = await lookUp(bot, 'invoice 1042', channel(bot, { team: 'unlinked' }));
    expect(textOf(card).toLowerCase()).toContain('link');
    expect(textOf(card)).not.toContain('Found');
  });
});

describe('Look up in BILL while BILL fails', () => {
  it('a cold organisation whose BILL answers 500 gets the error in the dialog and in Insert, recorded as an error, never a 501', async () => {
    const bot = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '10000' } });
    try {
      for (const path of ['/v3/bills', '/v3/invoices', '/v3/vendors', '/v3/customers'])
        await sandboxControlOk(bot.app.sandbox!.url, 'POST', '/faults', { kind: 'serverError', path, count: 1000 });
      const card = await lookUp(bot, 'did we pay Acme for invoice 1042?');
      expect(textOf(card)).toContain("BILL didn't answer as expected");
      const answer = await press(bot, { verb: 'insert', kind: 'vendor', id: '00901ABCDEFGH1234567' });
      expect(answer.composeExtension).toEqual({ type: 'message', text: "BILL didn't answer as expected; try again in a moment." });
      const records = readFileSync(join(bot.stateDir, 'audit.log'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(records.map((r) => [r.result, r.reason])).toEqual([
        ['error', 'BillApiError:server'],
        ['error', 'BillApiError:server'],
      ]);
      expect(bot.logs.text()).not.toContain('unhandled error in turn');
    } finally {
      await bot.close();
    }
  });
});
