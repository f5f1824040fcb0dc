// `vendor <name>` and `customer <name>` in a channel: the best match with its open bills and balance, a list to pick
// from when several match, and names that can never change the filter or the card. The first search of an org goes
// to BILL (name:sw) while the org's vendor replica is built; later ones are answered from the replica, which a
// webhook, a name nobody matched, and a changed bill (the balance) keep honest.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { createVendor, payBill } from '../../src/sandbox/mutations.js';
import type { Customer } from '../../src/bill/types.js';
import type { Bill, Vendor } from '../../src/bill/types.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { allRows, ask, buttons, expectValidCard, factsOf, money, tableRows, textOf, total } from '../harness/finance.js';
import { expectNoSensitive, poisonedVendor } from '../harness/sensitive.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
const TODAY = '2026-03-10';
let bot: TestBot;

const vendors = (): Vendor[] => bot.app.sandbox!.org.vendors.all();
const openBills = (vendorId: string): Bill[] =>
  bot.app
    .sandbox!.org.bills.all()
    .filter((b) => b.vendorId === vendorId && !b.archived && b.paymentStatus !== 'PAID')
    .sort((a, b) => a.dueDate.localeCompare(b.dueDate) || a.id.localeCompare(b.id));
const vendorRequests = () => bot.app.sandbox!.requests().filter((r) => r.route === 'GET /v3/vendors');

beforeAll(async () => {
  bot = await startBot({ clock: new ManualClock(NOW), env: { USER_COMMANDS_PER_MINUTE: '10000' } });
});
afterAll(async () => {
  await bot.close();
});

describe('vendor <name>', () => {
  it('one match shows the vendor with every open bill, the open total, the overdue part and the balance', async () => {
    const acme = vendors().find((v) => v.name === 'Acme Office Supplies')!;
    const open = openBills(acme.id);
    expect(open.length).toBeGreaterThan(0);
    bot.app.sandbox!.clearRequests();
    const { rows, first } = await allRows(bot.app, 'vendor acme');
    expectValidCard(first.reply.card);
    expect(textOf(first.reply.card).split('\n')[0]).toBe('Acme Office Supplies');
    expect(rows.map((r) => r[0])).toEqual(open.map((b) => b.invoice!.invoiceNumber));
    const f = factsOf(first.reply.card);
    expect(f['Open bills']).toBe(
      `${money(total(open.map((b) => b.dueAmount ?? b.amount)))} · ${open.length} bill${open.length === 1 ? '' : 's'}`,
    );
    const late = open.filter((b) => b.dueDate < TODAY);
    expect(f.Overdue).toBe(
      late.length
        ? `${money(total(late.map((b) => b.dueAmount ?? b.amount)))} · ${late.length} bill${late.length === 1 ? '' : 's'}`
        : 'none',
    );
    expect(f['Balance in BILL']).toBe(money(acme.balance!.amount));
    // The name search, cold; the walk that builds the org's vendor replica runs beside it (unfiltered pages).
    expect(
      vendorRequests()
        .filter((r) => r.filters !== undefined)
        .map((r) => r.filters),
    ).toEqual(['name:sw:acme,archived:eq:false']);
    expect(bot.app.sandbox!.requests().find((r) => r.route === 'GET /v3/bills')?.filters).toBe(
      `vendorId:eq:${acme.id},archived:eq:false,paymentStatus:ne:PAID`,
    );
  });

  it('several matches come as a list with open bills and balance each, and buttons to pick one', async () => {
    const live = vendors().filter((v) => !v.archived);
    const letter = 'abcdefghijklmnopqrstuvwxyz'.split('').find((l) => live.filter((v) => v.name.toLowerCase().startsWith(l)).length > 2)!;
    const matches = live.filter((v) => v.name.toLowerCase().startsWith(letter));
    const { rows, first } = await allRows(bot.app, `vendor ${letter}`);
    expectValidCard(first.reply.card);
    expect(textOf(first.reply.card)).toContain(`${matches.length} vendors start with "${letter}"`);
    const expected = matches.map((v) => {
      const open = openBills(v.id);
      return [v.name, String(open.length), money(v.balance!.amount), money(total(open.map((b) => b.dueAmount ?? b.amount)))];
    });
    expect([...rows].sort((a, b) => a[0]!.localeCompare(b[0]!))).toEqual(expected.sort((a, b) => a[0]!.localeCompare(b[0]!)));
    const picks = buttons(first.reply.card).filter((b) => String(b.data.command).startsWith('vendor '));
    expect(picks.length).toBeGreaterThan(0);
    const picked = await ask(bot.app, String(picks[0]!.data.command));
    expect(picked.outcome).toBe('ok');
    expect(textOf(picked.reply.card)).not.toContain('vendors start with');
  });

  it('a name with a comma is quoted for BILL and finds exactly that vendor', async () => {
    // A bot of its own, so this is the org's first search (BILL's name:sw) and not the replica's.
    const fresh = await startBot({ clock: new ManualClock(NOW) });
    try {
      const r = await ask(fresh.app, 'vendor Smith, Barney');
      expect(r.outcome).toBe('ok');
      expect(textOf(r.reply.card).split('\n')[0]).toBe('Smith, Barney & Co');
      const searches = fresh.app.sandbox!.requests().filter((q) => q.route === 'GET /v3/vendors' && q.filters?.startsWith('name:'));
      expect(searches.map((q) => q.filters)).toEqual(['name:sw:"Smith, Barney",archived:eq:false']);
      // From the replica the same name finds the same vendor.
      await fresh.app.mirror.rows(fresh.app.sandbox!.org.id, 'vendor', { waitMs: 60_000 });
      const again = await ask(fresh.app, 'vendor Smith, Barney');
      expect(textOf(again.reply.card).split('\n')[0]).toBe('Smith, Barney & Co');
    } finally {
      await fresh.close();
    }
  });

  it('several matches: a vendor whose BILL name holds a double quote gets a pick button too, which shows that vendor', async () => {
    // A bot of its own: the first search is BILL's (cold), the second the replica's (warm).
    const fresh = await startBot({ clock: new ManualClock(NOW), env: { USER_COMMANDS_PER_MINUTE: '10000' } });
    try {
      const org = fresh.app.sandbox!.org;
      const quoted = org.vendors.put(poisonedVendor({ id: '00901QUOTEDPICK00001', name: 'Qwerty "Best" Pizza' }));
      org.vendors.put(poisonedVendor({ id: '00901QUOTEDPICK00002', name: 'Qwerty Plumbing' }));
      for (const when of ['cold', 'warm']) {
        if (when === 'warm') await fresh.app.mirror.rows(org.id, 'vendor', { waitMs: 60_000 });
        const list = await ask(fresh.app, 'vendor qwerty');
        expect(textOf(list.reply.card), when).toContain('2 vendors start with "qwerty"');
        const pick = buttons(list.reply.card).find((b) => b.title === 'Qwerty "Best" Pizza');
        expect(pick, when).toBeDefined();
        const picked = await ask(fresh.app, String(pick!.data.command));
        expect(picked.outcome, when).toBe('ok');
        expect(textOf(picked.reply.card).split('\n')[0], when).toBe(quoted.name);
      }
    } finally {
      await fresh.close();
    }
  });

  it('"Zeta Inc." beside "Zeta Inc. (UK)": its pick button and its typed name show it, not the same pick list again', async () => {
    // A command line loses trailing punctuation ("bills due?"): "vendor Zeta Inc." reads as "Zeta Inc", which both start with.
    const org = bot.app.sandbox!.org;
    const dotted = org.vendors.put(
      poisonedVendor({ id: '00901DOTTEDNAME00001', name: 'Zeta Inc.', updatedTime: new Date(NOW).toISOString() }),
    );
    const uk = org.vendors.put(
      poisonedVendor({ id: '00901DOTTEDNAME00002', name: 'Zeta Inc. (UK)', updatedTime: new Date(NOW).toISOString() }),
    );
    for (const v of [dotted, uk]) await bot.app.mirror.markStale(org.id, 'vendor', v.id);
    const list = await ask(bot.app, 'vendor zeta');
    expect(textOf(list.reply.card)).toContain('2 vendors start with "zeta"');
    const pick = buttons(list.reply.card).find((b) => b.title === 'Zeta Inc.')!;
    for (const line of [String(pick.data.command), 'vendor Zeta Inc.']) {
      const shown = await ask(bot.app, line);
      expect(shown.outcome, line).toBe('ok');
      expect(textOf(shown.reply.card).split('\n')[0], line).toBe('Zeta Inc.');
    }
  });

  it('a name the command line would read differently (doubled spaces, markup) gets a pick button that shows it', async () => {
    // A line's doubled spaces become one and its tags go: "vendor Omega  Tools" would ask for "Omega Tools".
    const org = bot.app.sandbox!.org;
    const updatedTime = new Date(NOW).toISOString();
    const odd = [
      org.vendors.put(poisonedVendor({ id: '00901ODDSPACING00001', name: 'Omega  Tools', updatedTime })),
      org.vendors.put(poisonedVendor({ id: '00901ODDSPACING00002', name: 'Omega <b>Bold</b> Co', updatedTime })),
      org.vendors.put(poisonedVendor({ id: '00901ODDSPACING00003', name: 'Omega R&amp;D', updatedTime })),
    ];
    for (const v of odd) await bot.app.mirror.markStale(org.id, 'vendor', v.id);
    const list = await ask(bot.app, 'vendor omega');
    for (const v of odd) {
      const pick = buttons(list.reply.card).find((b) => b.title === v.name);
      expect(pick, v.name).toBeDefined();
      const shown = await ask(bot.app, String(pick!.data.command));
      expect(shown.outcome, v.name).toBe('ok');
      expect(textOf(shown.reply.card).split('\n')[0], v.name).toBe(v.name);
    }
  });

  it('a filter injection never reaches BILL: the card says what cannot be searched', async () => {
    bot.app.sandbox!.clearRequests();
    for (const typed of ['vendor a",name:sw:"b', 'vendor x",archived:eq:true', 'vendor \\"', `vendor ${'y'.repeat(501)}`]) {
      const r = await ask(bot.app, typed);
      expect(r.outcome).toBe('error');
      expectValidCard(r.reply.card);
      expect(textOf(r.reply.card)).toContain("I can't search for that");
    }
    expect(vendorRequests()).toEqual([]);
  });

  it('no match and no name get cards that say what to type', async () => {
    const none = await ask(bot.app, 'vendor Zzyzx Unknown');
    expect(textOf(none.reply.card)).toContain('No vendor starts with "Zzyzx Unknown"');
    expect(textOf(none.reply.card)).toContain('I understood: vendor Zzyzx Unknown');
    expect(textOf((await ask(bot.app, 'vendor')).reply.card)).toContain('Which vendor?');
  });

  it('a vendor name full of markdown is shown as text, and its bank and tax numbers never appear', async () => {
    const org = bot.app.sandbox!.org;
    const vendor = poisonedVendor({
      id: '00901POISONVENDOR001',
      name: '**Mega** _Corp_ [pay](https://evil.example) <at>all</at>',
      updatedTime: new Date(NOW).toISOString(),
    });
    org.vendors.put(vendor);
    // BILL's vendor.created webhook: the vendor replica reads the change before the next search.
    await bot.app.mirror.markStale(org.id, 'vendor', vendor.id);
    const bill = org.bills.all().find((b) => !b.archived && b.paymentStatus === 'UNPAID')!;
    const created = org.bills.put({
      ...bill,
      id: '00n01POISONBILL00001',
      vendorId: vendor.id,
      vendorName: vendor.name,
      invoice: { invoiceNumber: 'MEGA-1', invoiceDate: bill.invoice?.invoiceDate },
      updatedTime: new Date(NOW).toISOString(),
    });
    // BILL's bill.created webhook: the receiver drops what the cache built from bills, so the next answer reads the change.
    await bot.app.mirror.markStale(org.id, 'bill', created.id);
    const r = await ask(bot.app, 'vendor **Mega**');
    expect(r.outcome).toBe('ok');
    expectValidCard(r.reply.card);
    const json = JSON.stringify(r.reply.card);
    expect(json).toContain('\\\\*\\\\*Mega\\\\*\\\\*');
    // No mention entities: <at> in text is not a mention on an Adaptive Card, it stays text.
    expect(json).not.toContain('"entities"');
    expect(json).toContain('\\\\[pay\\\\]\\\\(https\\\\://evil\\\\.example\\\\)');
    expect(tableRows(r.reply.card).map((x) => x[0])).toEqual(['MEGA-1']);
    expectNoSensitive(r.reply.card, vendor);
    const one = await ask(bot.app, 'bill MEGA-1');
    expectNoSensitive(one.reply.card, vendor);
  });
});

describe("vendor and customer searches from the org's replicas", () => {
  let clock: ManualClock;
  let b: TestBot;
  const orgId = () => b.app.sandbox!.org.id;
  const requests = (route: string) => b.app.sandbox!.requests().filter((r) => r.route === route);

  beforeAll(async () => {
    clock = new ManualClock(NOW);
    b = await startBot({ clock, env: { USER_COMMANDS_PER_MINUTE: '10000' } });
    // The first searches go to BILL and start the builds; these wait for them.
    await ask(b.app, 'vendor acme');
    await ask(b.app, 'customer contoso');
    await b.app.mirror.rows(orgId(), 'vendor', { waitMs: 60_000 });
    await b.app.mirror.rows(orgId(), 'customer', { waitMs: 60_000 });
  });
  afterAll(async () => {
    await b.close();
  });

  it("answers name searches with no BILL call, with the same cards BILL's search gave", async () => {
    const acme = b.app.sandbox!.org.vendors.all().find((v) => v.name === 'Acme Office Supplies')!;
    b.app.sandbox!.clearRequests();
    const one = await ask(b.app, 'vendor ACME');
    expect(textOf(one.reply.card).split('\n')[0]).toBe('Acme Office Supplies');
    expect(factsOf(one.reply.card)['Balance in BILL']).toBe(money(acme.balance!.amount));
    const contoso = await ask(b.app, 'customer Contoso');
    expect(textOf(contoso.reply.card).split('\n')[0]).toBe('Contoso Ltd');
    const archived = b.app.sandbox!.org.vendors.all().find((v) => v.archived);
    // Archived vendors are left out, as BILL's search (archived:eq:false) leaves them out.
    if (archived) expect(textOf((await ask(b.app, `vendor ${archived.name}`)).reply.card)).toContain('No vendor starts with');
    expect(requests('GET /v3/vendors')).toEqual([]);
    expect(requests('GET /v3/customers')).toEqual([]);
    const status = factsOf((await ask(b.app, 'status')).reply.card);
    expect(status['Vendor index']).toMatch(new RegExp(`^${b.app.sandbox!.org.vendors.all().length} records, updated `));
    expect(status['Customer index']).toMatch(/^\d+ records, updated /);
  });

  it('finds a vendor created in BILL once its webhook arrives, with one incremental call', async () => {
    const created = createVendor(b.app.sandbox!.model, b.app.sandbox!.org, { name: 'Zenith Freight Partners' });
    b.app.sandbox!.clearRequests();
    await b.app.mirror.markStale(orgId(), 'vendor', created.id);
    const r = await ask(b.app, 'vendor zenith');
    expect(r.outcome).toBe('ok');
    expect(textOf(r.reply.card).split('\n')[0]).toBe('Zenith Freight Partners');
    const calls = requests('GET /v3/vendors');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.filters).toMatch(/^updatedTime:gte:/);
  });

  it('looks once more at BILL for a customer name nobody matched (no webhooks for customers), at most every 15 s', async () => {
    const org = b.app.sandbox!.org;
    const template = org.customers.all().find((c) => !c.archived)!;
    const added: Customer = {
      ...template,
      id: '0cu01QUOKKACUSTOMER1',
      name: 'Quokka Analytics',
      balance: { amount: 0 },
      createdTime: new Date(clock.now()).toISOString(),
      updatedTime: new Date(clock.now()).toISOString(),
    };
    org.customers.put(added);
    clock.advance(16_000);
    b.app.sandbox!.clearRequests();
    const r = await ask(b.app, 'customer quokka');
    expect(textOf(r.reply.card).split('\n')[0]).toBe('Quokka Analytics');
    expect(requests('GET /v3/customers').map((q) => q.filters?.split(':')[0])).toEqual(['updatedTime']);
    b.app.sandbox!.clearRequests();
    expect(textOf((await ask(b.app, 'customer Nobody By This Name')).reply.card)).toContain('No customer starts with');
    expect(textOf((await ask(b.app, 'customer Nobody By This Name Either')).reply.card)).toContain('No customer starts with');
    // Quokka was read 0 s ago: nothing is asked again within 15 s.
    expect(requests('GET /v3/customers')).toEqual([]);
  });

  it('reads a vendor again by id when one of its bills was paid, and shows the balance BILL has now', async () => {
    const org = b.app.sandbox!.org;
    const bill = org.bills
      .all()
      .find(
        (x) =>
          !x.archived &&
          x.paymentStatus === 'UNPAID' &&
          (x.dueAmount ?? 0) > 0 &&
          org.vendors.get(x.vendorId) &&
          !org.vendors.get(x.vendorId)!.archived &&
          /^[A-Za-z]/.test(org.vendors.get(x.vendorId)!.name),
      )!;
    const vendor = org.vendors.get(bill.vendorId)!;
    const before = vendor.balance!.amount;
    payBill(b.app.sandbox!.model, org, bill.id);
    expect(org.vendors.get(vendor.id)!.balance!.amount).toBeLessThan(before);
    // bill.updated and payment.updated webhooks: the cache drops what was built from bills and payments.
    await b.app.mirror.markStale(orgId(), 'bill', bill.id);
    b.app.sandbox!.clearRequests();
    const r = await ask(b.app, `vendor ${vendor.name}`);
    expect(textOf(r.reply.card).split('\n')[0]).toBe(vendor.name);
    expect(factsOf(r.reply.card)['Balance in BILL']).toBe(money(org.vendors.get(vendor.id)!.balance!.amount));
    expect(requests('GET /v3/vendors/{id}')).toHaveLength(1);
    expect(requests('GET /v3/vendors')).toEqual([]);
    b.app.sandbox!.clearRequests();
    const again = await ask(b.app, `vendor ${vendor.name}`);
    expect(factsOf(again.reply.card)['Balance in BILL']).toBe(money(org.vendors.get(vendor.id)!.balance!.amount));
    expect(requests('GET /v3/vendors/{id}')).toEqual([]);
  });
});
