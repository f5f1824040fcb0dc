// Searching BILL from the compose box, driven as Teams drives it (composeExtension/query invokes over
// HTTP into /api/messages): results from the org's warm mirror with no BILL call, each inserting the card its command
// shows; hints instead of errors for empty, bad and hostile text; the org from where the search happens; and the
// tenant allow-list, the per-person rate and the audit trail as for a typed command.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Bill } from '../../src/bill/types.js';
import { ManualClock } from '../../src/infra/clock.js';
import { executeInvoke, groupChatMessage, OTHER_TENANT } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { checkCard, type CardJson } from '../harness/cards.js';
import { composeQuery, type ComposeAnswer, type ComposeOpts } from '../harness/compose.js';
import { ask, button, expectValidCard, money, textOf } from '../harness/finance.js';
import { startMultiOrgBot, startTwoOrgSandbox, type TwoOrgs } from '../harness/orgs.js';
import { poisonedCustomer, poisonedVendor } from '../harness/sensitive.js';
import { sandboxControlOk } from '../harness/sandbox.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
const TODAY = '2026-03-10';
/** Teams' limit for a card a message extension inserts. */
const MAX_EXTENSION_CARD_BYTES = 28 * 1024;
let bot: TestBot;

const org = () => bot.app.sandbox!.org;
const billCalls = () => bot.app.sandbox!.requests();

async function search(commandId: string, text: string | undefined, opts: Partial<ComposeOpts> & { skip?: number; count?: number } = {}) {
  const res = await bot.send(composeQuery(commandId, text, { serviceUrl: bot.connector.url, ...opts }));
  expect(res.status).toBe(200);
  return (res.json as unknown as ComposeAnswer).composeExtension;
}

/**
 * Every result is a valid card within Teams' message-extension limit, with a thumbnail preview and no tap: picking it
 * inserts this card (a tap would have Teams ask again with selectItem, and the Agents Playground lists no such result).
 */
function expectResults(answer: ComposeAnswer['composeExtension']) {
  expect(answer.type).toBe('result');
  expect(answer.attachmentLayout).toBe('list');
  for (const a of answer.attachments ?? []) {
    expect(a.contentType).toBe('application/vnd.microsoft.card.adaptive');
    expectValidCard(a.content);
    expect(checkCard(a.content).bytes).toBeLessThan(MAX_EXTENSION_CARD_BYTES);
    expect(a.preview?.contentType).toBe('application/vnd.microsoft.card.thumbnail');
    expect(a.preview?.content.tap).toBeUndefined();
  }
  return answer.attachments ?? [];
}

/** The preview titles of a result list: a bill's or invoice's number (the sandbox gives every record one). */
const titles = (results: ReturnType<typeof expectResults>) => results.map((r) => r.preview?.content.title);
const billTitle = (b: Bill) => b.invoice?.invoiceNumber;
const unpaid = (b: Bill) => !b.archived && b.paymentStatus !== 'PAID';

beforeAll(async () => {
  bot = await startBot({ clock: new ManualClock(NOW), env: { USER_COMMANDS_PER_MINUTE: '10000' } });
  // A warm org: its mirror of every kind built (as a day of commands leaves it).
  for (const kind of ['bill', 'invoice', 'vendor', 'customer'] as const) await bot.app.mirror.rows(org().id, kind, { waitMs: 60_000 });
  bot.app.sandbox!.clearRequests();
});
beforeEach(() => {
  bot.app.sandbox!.clearRequests();
});
afterAll(async () => {
  await bot.close();
});

describe('searching bills', () => {
  it("finds a bill by the vendor's invoice number and inserts the card `bill <number>` shows, without calling BILL", async () => {
    const bill = org()
      .bills.all()
      .find((b) => unpaid(b) && b.invoice?.invoiceNumber)!;
    const number = bill.invoice!.invoiceNumber!;
    const answer = await search('bills', number.toLowerCase());
    const [first] = expectResults(answer);
    expect(first!.preview!.content.title).toBe(number);
    expect(first!.preview!.content.subtitle).toBe(bill.vendorName);
    expect(first!.preview!.content.text).toContain(money(bill.dueAmount ?? bill.amount));
    expect(first!.preview!.content.text).toContain('Unpaid');
    expect(first!.content).toEqual((await ask(bot.app, `bill ${number}`)).reply.card);
    expect(billCalls()).toEqual([]);
  });

  it('finds every bill of a vendor by the first letters of its name, exact numbers first', async () => {
    const acme = org()
      .vendors.all()
      .find((v) => v.name === 'Acme Office Supplies')!;
    const expected = org()
      .bills.all()
      .filter((b) => b.vendorId === acme.id)
      .map(billTitle);
    const results = expectResults(await search('bills', 'acme'));
    expect(titles(results).sort()).toEqual(expected.sort());
    expect(results.every((r) => r.preview!.content.subtitle === 'Acme Office Supplies')).toBe(true);
    expect(billCalls()).toEqual([]);
  });

  it('before anything is typed, shows the bills due this week, soonest first', async () => {
    const week = new Date(Date.parse(`${TODAY}T00:00:00Z`) + 7 * 86_400_000).toISOString().slice(0, 10);
    const expected = org()
      .bills.all()
      .filter((b) => unpaid(b) && b.dueDate >= TODAY && b.dueDate <= week)
      .sort((a, b) => a.dueDate.localeCompare(b.dueDate) || (a.id < b.id ? -1 : 1));
    expect(expected.length).toBeGreaterThan(0);
    const results = expectResults(await search('bills', undefined));
    expect(titles(results)).toEqual(expected.map(billTitle));
    expect(billCalls()).toEqual([]);
  });

  it('the bills due this week leave out an unpaid bill with $0 due (fully credited), as bills due does', async () => {
    const base = org().bills.all().find(unpaid)!;
    const zero = org().bills.put({
      ...base,
      id: '00n01ZERODUE00000001',
      amount: 310,
      dueAmount: 0,
      creditAmount: 310,
      dueDate: '2026-03-11',
      invoice: { invoiceNumber: 'ZERODUE-1', invoiceDate: base.invoice?.invoiceDate },
      updatedTime: new Date(NOW).toISOString(),
    });
    try {
      await bot.app.mirror.markStale(org().id, 'bill', zero.id);
      expect(titles(expectResults(await search('bills', 'ZERODUE-')))).toEqual(['ZERODUE-1']);
      expect(titles(expectResults(await search('bills', undefined, { count: 25 })))).not.toContain('ZERODUE-1');
    } finally {
      org().bills.put({ ...zero, archived: true, updatedTime: new Date(NOW).toISOString() });
      await bot.app.mirror.markStale(org().id, 'bill', zero.id);
    }
  });

  it('pages as Teams asks (skip, count)', async () => {
    const all = expectResults(await search('bills', 'a', { count: 25 }));
    expect(all.length).toBeGreaterThan(3);
    const second = expectResults(await search('bills', 'a', { skip: 2, count: 2 }));
    expect(second.map((r) => r.preview)).toEqual(all.slice(2, 4).map((r) => r.preview));
  });
});

describe('searching invoices, vendors and customers', () => {
  it('finds an invoice by number and inserts the card `invoice <number>` shows', async () => {
    const invoice = org()
      .invoices.all()
      .find((i) => !i.archived)!;
    const results = expectResults(await search('invoices', invoice.invoiceNumber));
    expect(results[0]!.preview!.content.title).toBe(invoice.invoiceNumber);
    expect(results[0]!.content).toEqual((await ask(bot.app, `invoice ${invoice.invoiceNumber}`)).reply.card);
    expect(billCalls()).toEqual([]);
  });

  it("finds a customer's invoices by the first letters of its name", async () => {
    const contoso = org()
      .customers.all()
      .find((c) => c.name === 'Contoso Ltd')!;
    const expected = org()
      .invoices.all()
      .filter((i) => i.customerId === contoso.id)
      .map((i) => i.invoiceNumber);
    const results = expectResults(await search('invoices', 'Cont'));
    expect(titles(results).sort()).toEqual(expected.sort());
  });

  it('before anything is typed, shows the latest invoices first', async () => {
    const expected = org()
      .invoices.all()
      .filter((i) => !i.archived)
      .sort((a, b) => b.invoiceDate.localeCompare(a.invoiceDate) || b.updatedTime.localeCompare(a.updatedTime) || (a.id < b.id ? -1 : 1))
      .slice(0, 25);
    const results = expectResults(await search('invoices', undefined));
    expect(titles(results)).toEqual(expected.map((i) => i.invoiceNumber));
    expect(billCalls()).toEqual([]);
  });

  it("writes amounts and dates in the person's Teams locale, as commands do", async () => {
    const invoice = org()
      .invoices.all()
      .find((i) => !i.archived && i.dueAmount >= 1_000)!;
    const dueDe = new Intl.DateTimeFormat('de-DE', { day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' }).format(
      new Date(`${invoice.dueDate}T00:00:00Z`),
    );
    const [german] = expectResults(await search('invoices', invoice.invoiceNumber, { locale: 'de-DE' }));
    expect(german!.preview!.content.text).toMatch(/\d\.\d{3},\d{2}\s\$/u);
    expect(german!.preview!.content.text).toContain(dueDe);
    const [english] = expectResults(await search('invoices', invoice.invoiceNumber));
    expect(english!.preview!.content.text).toMatch(/\$\d{1,3},\d{3}\.\d{2}/u);
  });

  it('finds vendors and customers by name, each inserting the card `vendor <name>` or `customer <name>` shows', async () => {
    const vendors = expectResults(await search('vendors', 'acm'));
    expect(vendors.map((r) => r.preview!.content.title)).toEqual(['Acme Office Supplies']);
    expect(vendors[0]!.content).toEqual((await ask(bot.app, 'vendor Acme Office Supplies')).reply.card);
    const customers = expectResults(await search('customers', 'contoso'));
    expect(customers.map((r) => r.preview!.content.title)).toEqual(['Contoso Ltd']);
    expect(customers[0]!.content).toEqual((await ask(bot.app, 'customer Contoso Ltd')).reply.card);
    expect(billCalls()).toEqual([]);
  });

  it('a vendor and a customer whose BILL names hold a double quote or a backslash are found and insert their cards', async () => {
    // BILL's name filter cannot carry " or \; the names come from BILL, so the search is not the person's to reword.
    const vendor = org().vendors.put(
      poisonedVendor({ id: '00901QUOTEDNAME00001', name: 'Qwerty "Best" Pizza', updatedTime: new Date(NOW).toISOString() }),
    );
    const customer = org().customers.put(
      poisonedCustomer({ id: '0cu01QUOTEDNAME00001', name: 'Qwerty \\ Sons', updatedTime: new Date(NOW).toISOString() }),
    );
    await bot.app.mirror.markStale(org().id, 'vendor', vendor.id);
    await bot.app.mirror.markStale(org().id, 'customer', customer.id);
    for (const [commandId, name] of [
      ['vendors', vendor.name],
      ['customers', customer.name],
    ] as const) {
      const results = expectResults(await search(commandId, 'qwerty'));
      expect(results.map((r) => r.preview!.content.title)).toEqual([name]);
      expect(textOf(results[0]!.content).split('\n')[0]).toBe(name);
    }
  });

  it('a vendor whose BILL name is 8,000 characters long is listed with a short preview and a card within 28 KB', async () => {
    const name = `Zanzibar ${'Holdings '.repeat(900)}`.slice(0, 8_000);
    const vendor = org().vendors.put(poisonedVendor({ id: '00901LONGNAME0000001', name, updatedTime: new Date(NOW).toISOString() }));
    await bot.app.mirror.markStale(org().id, 'vendor', vendor.id);
    const [result, ...others] = expectResults(await search('vendors', 'zanzibar'));
    expect(others).toEqual([]);
    const preview = result!.preview!.content;
    expect(preview.title.length).toBeLessThanOrEqual(200);
    expect(preview.title).toMatch(/^Zanzibar Holdings .*…$/);
    expect(checkCard(result!.content).bytes).toBeLessThan(MAX_EXTENSION_CARD_BYTES);
  });

  it('a vendor or customer search opened with nothing typed says what to type', async () => {
    const vendors = await search('vendors', undefined);
    expect(vendors.type).toBe('message');
    expect(vendors.text).toContain("first letters of the vendor's name");
    const customers = await search('customers', undefined);
    expect(customers.type).toBe('message');
    expect(customers.text).toContain("first letters of the customer's name");
  });
});

describe('picking a result', () => {
  it("the inserted card's Refresh works for someone else who sees it later, in a chat", async () => {
    const [first] = expectResults(await search('invoices', org().invoices.all()[0]!.invoiceNumber));
    const refresh = button(first!.content, 'Refresh')!;
    const chat = groupChatMessage('hello', {
      serviceUrl: bot.connector.url,
      from: { id: '29:user-sam', aadObjectId: '22222222-0000-4000-8000-00000000000a' },
    });
    const res = await bot.send(executeInvoke(refresh.data, chat));
    expect(res.status).toBe(200);
    const card = (res.json as { value: CardJson }).value;
    expectValidCard(card);
    expect(textOf(card)).toBe(textOf(first!.content));
  });
});

describe('empty, bad and hostile text', () => {
  it('gets an ordinary "nothing found" or a hint, never an error, and nothing reaches BILL', async () => {
    const hostile = [
      '',
      '   ',
      'a",name:sw:"b',
      'x",archived:eq:true',
      "'; DROP TABLE bills; --",
      '<script>alert(1)</script>',
      '**bold** [link](https://evil.example) <at>all</at>',
      '\\"',
      'zz'.repeat(2_500),
      'Zzyzx Unknown',
    ];
    for (const commandId of ['bills', 'invoices', 'vendors', 'customers']) {
      for (const text of hostile) {
        const answer = await search(commandId, text);
        expect(answer.type, `${commandId} ${text.slice(0, 30)}`).toBe('message');
        expect(answer.text).toMatch(/^(No \w+ match|Type )/);
        expect(answer.text).not.toContain('<script>');
        expect(answer.text).not.toContain('evil');
      }
    }
    expect(billCalls()).toEqual([]);
  });

  it("a BILL status carrying an HTML link shows as text in a result's preview, whose text Teams renders as HTML", async () => {
    // A thumbnail card's text (unlike its title and subtitle) takes Teams' XML formatting: <a href> makes a link.
    const link = '<a href="https://evil.example">Pay here</a> & <b>now</b>';
    const base = org().bills.all().find(unpaid)!;
    const bill = org().bills.put({
      ...base,
      id: '00n01HTMLSTATUS00001',
      paymentStatus: link,
      invoice: { invoiceNumber: 'HTMLST-1', invoiceDate: base.invoice?.invoiceDate },
      updatedTime: new Date(NOW).toISOString(),
    });
    const invoiceBase = org().invoices.all()[0]!;
    const invoice = org().invoices.put({
      ...invoiceBase,
      id: '00e01HTMLSTATUS00001',
      invoiceNumber: 'HTMLST-2',
      status: link,
      dueDate: '2099-01-01',
      updatedTime: new Date(NOW).toISOString(),
    });
    await bot.app.mirror.markStale(org().id, 'bill', bill.id);
    await bot.app.mirror.markStale(org().id, 'invoice', invoice.id);
    for (const commandId of ['bills', 'invoices']) {
      const [result] = expectResults(await search(commandId, 'HTMLST-'));
      const shown = result!.preview!.content.text;
      expect(shown, commandId).not.toMatch(/<[a-z/]/i);
      expect(shown, commandId).toContain('&lt;a href="https://evil.example"&gt;pay here&lt;/a&gt; &amp; &lt;b&gt;now&lt;/b&gt;');
    }
  });

  it('an unknown search command is answered, not failed', async () => {
    expect(await search('payments', 'x')).toEqual({ type: 'message', text: 'billbridge has no such search.' });
  });
});

describe('a cold organisation', () => {
  it('answers within the command wait that it is still reading BILL, then from the mirror; what was typed never reaches BILL', async () => {
    const cold = await startBot({ env: { SANDBOX_LATENCY_MS: '300', COMMAND_WAIT_MS: '100', USER_COMMANDS_PER_MINUTE: '10000' } });
    try {
      const ask = async (commandId: string, text: string) => {
        const res = await cold.send(composeQuery(commandId, text, { serviceUrl: cold.connector.url }));
        return (res.json as unknown as ComposeAnswer).composeExtension;
      };
      const first = await ask('vendors', 'Acme');
      expect(first.type).toBe('message');
      expect(first.text).toMatch(
        /^billbridge is still reading this organisation's vendors from BILL \(\d+ so far; this happens once\)\. Try again in a minute\.$/,
      );
      // The build it started goes on; once it is done the same search is answered from the mirror.
      await cold.app.mirror.rows(cold.app.sandbox!.org.id, 'vendor', { waitMs: 60_000 });
      await cold.app.mirror.rows(cold.app.sandbox!.org.id, 'bill', { waitMs: 60_000, scope: 'open' });
      const later = await ask('vendors', 'Acme');
      expect(later.type).toBe('result');
      expect(later.attachments!.map((a) => a.preview!.content.title)).toEqual(['Acme Office Supplies']);
      const filters = cold.app.sandbox!.requests().map((r) => r.filters ?? '');
      expect(filters.filter((f) => /acme/i.test(f))).toEqual([]);
    } finally {
      await cold.close();
    }
  });
});

describe('BILL failing', () => {
  it('a search BILL cannot answer is a message saying so, recorded as an error, never an HTTP error', async () => {
    const failing = await startBot({ env: { USER_COMMANDS_PER_MINUTE: '10000' } });
    try {
      await sandboxControlOk(failing.app.sandbox!.url, 'POST', '/faults', { kind: 'serverError', path: '/v3/customers', count: 1000 });
      const res = await failing.send(composeQuery('customers', 'Contoso', { serviceUrl: failing.connector.url }));
      expect(res.status).toBe(200);
      const answer = (res.json as unknown as ComposeAnswer).composeExtension;
      expect(answer.type).toBe('message');
      expect(answer.text).toBe("BILL didn't answer as expected; try again in a moment.");
      const audit = readFileSync(join(failing.stateDir, 'audit.log'), 'utf8');
      expect(JSON.parse(audit.trim().split('\n').at(-1)!)).toEqual(
        expect.objectContaining({ command: 'search customers', result: 'error', reason: 'BillApiError:server' }),
      );
    } finally {
      await failing.close();
    }
  });
});

describe('cards inserted from the compose box stay within 28 KB', () => {
  it('the largest bill the sandbox can hold: 60 line items, 30 approvers, markdown-heavy long names', async () => {
    const base = org().bills.all().find(unpaid)!;
    const vendor = poisonedVendor({
      id: '00901BIGVENDOR000001',
      name: `${'*_[Big](x) '.repeat(18)}Vendor`.slice(0, 200),
      updatedTime: new Date(NOW).toISOString(),
    });
    org().vendors.put(vendor);
    const bill = org().bills.put({
      ...base,
      id: '00n01BIGBILL00000001',
      vendorId: vendor.id,
      vendorName: vendor.name,
      description: 'd'.repeat(4000),
      purchaseOrderNumber: `PO-${'9'.repeat(60)}`,
      invoice: { invoiceNumber: `BIG-${'<>'.repeat(40)}`, invoiceDate: base.invoice?.invoiceDate },
      billLineItems: Array.from({ length: 60 }, (_, i) => ({ id: `li${i}`, amount: 1234567.89, description: `${'[*]_'.repeat(50)} ${i}` })),
      approvers: Array.from({ length: 30 }, (_, i) => ({ userId: `00601APPROVER${i}`, status: 'WAITING', approverOrder: i })),
      updatedTime: new Date(NOW).toISOString(),
    });
    await bot.app.mirror.markStale(org().id, 'vendor', vendor.id);
    await bot.app.mirror.markStale(org().id, 'bill', bill.id);
    const results = expectResults(await search('bills', 'BIG-'));
    expect(titles(results)).toEqual([billTitle(bill)]);
    const bytes = checkCard(results[0]!.content).bytes;
    expect(bytes).toBeLessThan(MAX_EXTENSION_CARD_BYTES);
    const vendorCard = expectResults(await search('vendors', vendor.name.slice(0, 20)));
    expect(vendorCard.length).toBeGreaterThan(0);
  });

  it('an invoice with four 8,000-character line descriptions is listed with its own card, within 28 KB, the lines shortened', async () => {
    const base = org().invoices.all()[0]!;
    const invoice = org().invoices.put({
      ...base,
      id: '00e01BIGLINES0000001',
      invoiceNumber: 'BIGLINES-1',
      invoiceLineItems: Array.from({ length: 4 }, (_, i) => ({
        id: `li${i}`,
        price: 10,
        quantity: 1,
        description: `${'*[x]'.repeat(2_000)} ${i}`,
      })),
      updatedTime: new Date(NOW).toISOString(),
    });
    await bot.app.mirror.markStale(org().id, 'invoice', invoice.id);
    const full = await ask(bot.app, `invoice ${invoice.invoiceNumber}`);
    const [result, ...others] = expectResults(await search('invoices', 'BIGLINES-'));
    expect(others).toEqual([]);
    expect(result!.preview!.content.title).toBe('BIGLINES-1');
    // The command's own card, whose line descriptions the card kit shortened (an 81 KB card before).
    expect(result!.content).toEqual(full.reply.card);
    expect(checkCard(result!.content).bytes).toBeLessThan(MAX_EXTENSION_CARD_BYTES);
    expect(textOf(result!.content)).toContain('…');
  });
});

describe('who may search, and what is recorded', () => {
  it('a tenant outside the allow-list is told so, and nothing else happens', async () => {
    const allowListed = await startBot({ env: { ALLOWED_TENANT_IDS: 'aaaaaaaa-0000-4000-8000-000000000001' } });
    try {
      allowListed.app.sandbox!.clearRequests();
      const res = await allowListed.send(composeQuery('bills', 'acme', { serviceUrl: allowListed.connector.url, tenant: OTHER_TENANT }));
      expect(res.status).toBe(200);
      expect((res.json as unknown as ComposeAnswer).composeExtension).toEqual({
        type: 'message',
        text: 'billbridge is not available in this tenant.',
      });
      expect(allowListed.app.sandbox!.requests()).toEqual([]);
    } finally {
      await allowListed.close();
    }
  });

  it("each search counts against the person's commands per minute; beyond it they are told to wait", async () => {
    const limited = await startBot({ clock: new ManualClock(NOW), env: { USER_COMMANDS_PER_MINUTE: '2' } });
    try {
      const send = async () => {
        const res = await limited.send(composeQuery('vendors', 'acme', { serviceUrl: limited.connector.url }));
        return (res.json as unknown as ComposeAnswer).composeExtension;
      };
      await send();
      await send();
      limited.app.sandbox!.clearRequests();
      const third = await send();
      expect(third.type).toBe('message');
      expect(third.text).toMatch(/^Too many commands; try again in \d+ s\.$/);
      expect(limited.app.sandbox!.requests()).toEqual([]);
    } finally {
      await limited.close();
    }
  });

  it('each search leaves an audit line: who, where, what was searched, how it went, BILL calls made', async () => {
    await search('bills', 'ACM');
    const lines = readFileSync(join(bot.stateDir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({ kind: 'command', command: 'search bills', args: ['ACM'], result: 'ok', orgId: org().id, upstreamCalls: 0 }),
    );
  });
});

describe('which organisation a search uses', () => {
  let orgs: TwoOrgs;
  let multi: TestBot;
  const ADMIN = { id: '29:admin', name: 'Ada Admin', aadObjectId: '33333333-0000-4000-8000-00000000000a' };

  beforeAll(async () => {
    orgs = await startTwoOrgSandbox();
    multi = await startMultiOrgBot(orgs, ADMIN.aadObjectId, { clock: new ManualClock(NOW) });
  });
  afterAll(async () => {
    await multi.close();
    await orgs.sandbox.stop();
  });

  const searchIn = async (opts: Partial<ComposeOpts>) => {
    const res = await multi.send(composeQuery('vendors', 'a', { serviceUrl: multi.connector.url, ...opts }));
    return (res.json as unknown as ComposeAnswer).composeExtension;
  };

  it('in multi-org mode a chat or the command box is asked to search from a channel of a linked team', async () => {
    for (const where of ['groupChat', 'commandBox'] as const) {
      const answer = await searchIn({ where });
      expect(answer.type).toBe('message');
      expect(answer.text).toContain('from a channel of a team linked to BILL');
    }
  });

  it("a channel of a team nobody linked is told how to link it; a linked team's channel searches that team's org", async () => {
    const unlinked = await searchIn({ where: 'channel', team: 'payables' });
    expect(unlinked.type).toBe('message');
    expect(unlinked.text).toContain('link {BILL organisation id}');
    const { askInTeam } = await import('../harness/orgs.js');
    await askInTeam(multi, `link ${orgs.orgB}`, 'payables', ADMIN);
    const linked = await searchIn({ where: 'channel', team: 'payables' });
    expect(linked.type).toBe('result');
    const expected = orgs.sandbox.sandbox.model
      .org(orgs.orgB)!
      .vendors.all()
      .filter((v) => !v.archived && v.name.toLowerCase().startsWith('a'));
    expect(linked.attachments!.map((a) => a.preview!.content.title).sort()).toEqual(expected.map((v) => v.name).sort());
  });
});
