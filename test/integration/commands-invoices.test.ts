// Receivables in a channel: `invoice <number>` from the org's invoice index, `invoices overdue` aged by customer,
// `customer <name>`; the index survives a restart and stays cheap at 10,000 invoices.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/infra/clock.js';
import type { Invoice } from '../../src/bill/types.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { Rng, fuzzSeed } from '../harness/fuzz.js';
import { allRows, ask, expectValidCard, factsOf, money, textOf, total } from '../harness/finance.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
const TODAY = '2026-03-10';
const date = (iso: string) =>
  new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' }).format(new Date(`${iso}T00:00:00Z`));
const daysLate = (due: string) => Math.round((Date.parse(`${TODAY}T00:00:00Z`) - Date.parse(`${due}T00:00:00Z`)) / 86_400_000);

let bot: TestBot;
let clock: ManualClock;
let stateDir: string;

const invoices = (): Invoice[] => bot.app.sandbox!.org.invoices.all();
const customerName = (id: string) => bot.app.sandbox!.org.customers.get(id)!.name;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'billbridge-invoices-'));
  clock = new ManualClock(NOW);
  bot = await startBot({ clock, stateDir, env: { USER_COMMANDS_PER_MINUTE: '10000' } });
});
afterAll(async () => {
  await bot.close();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('invoice <number>', () => {
  const expectations: Array<[string, (i: Invoice) => boolean, (i: Invoice) => string]> = [
    ['an open', (i) => !i.archived && i.status === 'OPEN' && i.dueDate >= TODAY, () => 'Open'],
    [
      'an overdue',
      (i) => !i.archived && i.status === 'OPEN' && i.dueDate < TODAY,
      (i) => `Overdue by ${daysLate(i.dueDate)} day${daysLate(i.dueDate) === 1 ? '' : 's'}`,
    ],
    ['a partially paid', (i) => !i.archived && i.status === 'PARTIAL_PAYMENT' && i.dueDate >= TODAY, () => 'Partially paid'],
    ['a paid', (i) => !i.archived && i.status === 'PAID', () => 'Paid'],
    ['an archived', (i) => i.archived, () => 'Archived'],
  ];

  it.each(expectations)(
    '%s invoice shows customer, dates, total, amount due, status in words and payments received',
    async (_kind, pick, words) => {
      const inv = invoices().find(pick)!;
      expect(inv).toBeDefined();
      const r = await ask(bot.app, `invoice ${inv.invoiceNumber}`);
      expect(r.outcome).toBe('ok');
      expectValidCard(r.reply.card);
      const f = factsOf(r.reply.card);
      expect(f.Customer).toBe(customerName(inv.customerId));
      expect(f['Invoice date']).toBe(date(inv.invoiceDate));
      expect(f['Due date']).toBe(date(inv.dueDate));
      expect(f.Total).toBe(money(inv.totalAmount));
      expect(f['Amount due']).toBe(money(inv.dueAmount));
      expect(textOf(r.reply.card).split('\n')).toContain(words(inv));
      const received = total((inv.payments ?? []).map((p) => p.amount));
      if ((inv.payments ?? []).length > 0) expect(textOf(r.reply.card)).toContain(`Payments received: ${money(received)}`);
      else expect(textOf(r.reply.card)).toContain('No payments received yet.');
    },
  );

  it('an unknown number gets a card that says what was understood and what to type', async () => {
    const r = await ask(bot.app, 'invoice 999999');
    expect(r.outcome).toBe('error');
    expectValidCard(r.reply.card);
    expect(textOf(r.reply.card)).toContain('No invoice 999999');
    expect(textOf(r.reply.card)).toContain('I understood: invoice 999999');
    expect(textOf(r.reply.card)).toContain('customer {name}');
    expect(textOf((await ask(bot.app, 'invoice')).reply.card)).toContain('Which invoice?');
  });

  it('finds a new invoice after a refresh, and one the webhook engineer applies without any list call', async () => {
    const org = bot.app.sandbox!.org;
    const created = await fetch(`${bot.app.sandbox!.url}/__sandbox/invoices`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ totalAmount: 1234.5 }),
    });
    const invoice = (await created.json()) as Invoice;
    // Within the refresh interval a miss is answered from the index; after it, one updatedTime:gte call finds it.
    clock.advance(20_000);
    bot.app.sandbox!.clearRequests();
    const found = await ask(bot.app, `invoice ${invoice.invoiceNumber}`);
    expect(found.outcome).toBe('ok');
    expect(factsOf(found.reply.card).Total).toBe(money(1234.5));
    const refresh = bot.app.sandbox!.requests().filter((q) => q.route === 'GET /v3/invoices');
    expect(refresh).toHaveLength(1);
    expect(refresh[0]!.filters).toMatch(/^updatedTime:gte:"\d{4}-\d\d-\d\dT[\d:.]+Z"$/);
    expect(refresh[0]!.sort).toBe('updatedTime:asc');

    // apply(): what the webhook handler does with an invoice.updated payload (with cache.invalidate): the replica has
    // the change at once, without a call; the invalidation makes the next answer read the changes once (webhooks
    // are hints), and no GET of the invoice is needed, the row carries the card.
    const renamed = org.invoices.put({
      ...org.invoices.get(invoice.id)!,
      invoiceNumber: 'WEBHOOK-1',
      updatedTime: new Date(clock.now()).toISOString(),
    });
    bot.app.sandbox!.clearRequests();
    await bot.app.mirror.apply(org.id, 'invoice', renamed);
    expect(await bot.app.mirror.lookup(org.id, 'invoice', 'webhook-1', { waitMs: 1_000 })).toMatchObject({
      rows: [{ id: invoice.id }],
    });
    expect(bot.app.sandbox!.requests()).toEqual([]);
    await bot.app.mirror.markStale(org.id, 'invoice', invoice.id);
    const r = await ask(bot.app, 'invoice webhook-1');
    expect(r.outcome).toBe('ok');
    expect(textOf(r.reply.card)).toContain('Invoice WEBHOOK-1');
    expect(factsOf(r.reply.card).Total).toBe(money(1234.5));
    expect(bot.app.sandbox!.requests().map((q) => [q.route, q.filters?.replace(/"[^"]+"/, 'T')])).toEqual([
      ['GET /v3/invoices', 'updatedTime:gte:T'],
    ]);
    // Deleted in BILL and marked stale: the next lookup reads it again by id, BILL answers 404, and it leaves the index.
    org.invoices.delete(invoice.id);
    await bot.app.mirror.markStale(org.id, 'invoice', invoice.id);
    bot.app.sandbox!.clearRequests();
    expect(await bot.app.mirror.lookup(org.id, 'invoice', 'WEBHOOK-1', { waitMs: 1_000 })).toMatchObject({ rows: [] });
    expect(bot.app.sandbox!.requests().map((q) => [q.route, q.status])).toEqual([['GET /v3/invoices/{id}', 404]]);
    expect(await bot.app.mirror.lookup(org.id, 'invoice', 'WEBHOOK-1', { waitMs: 1_000 })).toMatchObject({ rows: [] });
    expect(bot.app.sandbox!.requests()).toHaveLength(1);
  });
});

describe('invoices overdue', () => {
  it('ages every overdue receivable by customer (1–30, 31–60, 61–90, 90+) with totals that match the sandbox', async () => {
    const overdue = invoices().filter((i) => !i.archived && i.status !== 'PAID' && i.dueAmount > 0 && i.dueDate < TODAY);
    expect(overdue.length).toBeGreaterThan(0);
    const byCustomer = new Map<string, number[][]>();
    for (const i of overdue) {
      const b = byCustomer.get(i.customerId) ?? [[], [], [], []];
      const d = daysLate(i.dueDate);
      b[d <= 30 ? 0 : d <= 60 ? 1 : d <= 90 ? 2 : 3]!.push(i.dueAmount);
      byCustomer.set(i.customerId, b);
    }
    const expected = [...byCustomer.entries()]
      .map(([id, b]) => ({ name: customerName(id), buckets: b, sum: total(b.flat()), n: b.flat().length }))
      .sort((x, y) => y.sum - x.sum || x.name.localeCompare(y.name));
    const { rows, first } = await allRows(bot.app, 'invoices overdue');
    expectValidCard(first.reply.card);
    expect(rows).toEqual(
      expected.map((c) => [c.name, ...c.buckets.map((b) => (b.length ? money(total(b)) : '—')), `${money(c.sum)} (${c.n})`]),
    );
    const f = factsOf(first.reply.card);
    expect(f.Overdue).toBe(`${money(total(overdue.map((i) => i.dueAmount)))} · ${overdue.length} invoices · ${expected.length} customers`);
    ['1–30 days', '31–60 days', '61–90 days', '90+ days'].forEach((label, k) => {
      const amounts = expected.flatMap((c) => c.buckets[k]!);
      expect(f[label]).toBe(
        amounts.length ? `${money(total(amounts))} · ${amounts.length} invoice${amounts.length === 1 ? '' : 's'}` : '—',
      );
    });
    expect(bot.app.sandbox!.requests().some((q) => q.route === 'GET /v3/invoices' && /status|dueDate/.test(q.filters ?? ''))).toBe(false);
  });
});

describe('customer <name>', () => {
  it('one match shows its open invoices and balance; several come as a list to pick from', async () => {
    const org = bot.app.sandbox!.org;
    const contoso = org.customers.find((c) => c.name === 'Contoso Ltd')!;
    const open = invoices()
      .filter((i) => i.customerId === contoso.id && !i.archived && i.status !== 'PAID' && i.dueAmount > 0)
      .sort((a, b) => a.dueDate.localeCompare(b.dueDate) || a.invoiceNumber.localeCompare(b.invoiceNumber));
    const one = await allRows(bot.app, 'customer contoso');
    expectValidCard(one.first.reply.card);
    expect(one.rows.map((r) => r[0])).toEqual(open.map((i) => i.invoiceNumber));
    expect(factsOf(one.first.reply.card)['Open invoices']).toBe(
      `${money(total(open.map((i) => i.dueAmount)))} · ${open.length} invoice${open.length === 1 ? '' : 's'}`,
    );
    expect(factsOf(one.first.reply.card)['Balance in BILL']).toBe(money(contoso.balance!.amount));

    const live = org.customers.all().filter((c) => !c.archived);
    const letter = 'abcdefghijklmnopqrstuvwxyz'.split('').find((l) => live.filter((c) => c.name.toLowerCase().startsWith(l)).length > 1)!;
    const prefix = live.filter((c) => c.name.toLowerCase().startsWith(letter));
    const many = await allRows(bot.app, `customer ${letter.toUpperCase()}`);
    expectValidCard(many.first.reply.card);
    expect(textOf(many.first.reply.card)).toContain(`${prefix.length} customers start with "${letter.toUpperCase()}"`);
    expect(many.rows.map((r) => r[0]).sort()).toEqual(prefix.map((c) => c.name).sort());
  });
});

describe('the index after a restart', () => {
  it('is read from the state store: a lookup after a restart calls BILL for neither the list nor the invoice', async () => {
    const number = invoices().find((i) => !i.archived)!.invoiceNumber;
    await ask(bot.app, `invoice ${number}`);
    await bot.close();
    const again = await startBot({ clock, stateDir, env: { USER_COMMANDS_PER_MINUTE: '10000' } });
    try {
      const r = await ask(again.app, `invoice ${number}`);
      expect(r.outcome).toBe('ok');
      const byPath = again.app.sandbox!.stats().requestsByPath;
      // The stored replica is still fresh (this clock has not moved) and its rows carry the card.
      expect(byPath['GET /v3/invoices'] ?? 0).toBe(0);
      expect(byPath['GET /v3/invoices/{id}'] ?? 0).toBe(0);
      // Customer names were loaded with the replica, so the next lookup costs no call at all.
      const other = invoices().find(
        (i) => !i.archived && i.invoiceNumber !== number && i.customerId !== invoices().find((x) => x.invoiceNumber === number)!.customerId,
      )!;
      const before = again.app.sandbox!.stats().requests;
      const r2 = await ask(again.app, `invoice ${other.invoiceNumber}`);
      expect(r2.outcome).toBe('ok');
      expect(factsOf(r2.reply.card)['Amount due']).toBe(money(other.dueAmount));
      expect(again.app.sandbox!.stats().requests - before).toBe(0);
    } finally {
      await again.close();
    }
  });
});

describe('an organisation with 10,000 invoices', () => {
  let big: TestBot;
  beforeAll(async () => {
    big = await startBot({ clock: new ManualClock(NOW), env: { SANDBOX_INVOICES: '10000', USER_COMMANDS_PER_MINUTE: '10000' } });
  });
  afterAll(async () => {
    await big.close();
  });

  it('builds the index on the first lookup, then 100 lookups of random numbers cost at most 100 BILL calls', async () => {
    const sandbox = big.app.sandbox!;
    const first = await ask(big.app, 'invoice 1001');
    expect(first.outcome).toBe('ok');
    const built = sandbox.stats();
    // 10,000 invoices at 100 a page, plus sign-in, the customer names and the invoice itself.
    expect(built.requestsByPath['GET /v3/invoices']).toBe(100);
    expect(big.app.mirror.info(sandbox.org.id).find((i) => i.kind === 'invoice')).toMatchObject({ records: 10_000, complete: true });

    const rng = new Rng(fuzzSeed(42));
    const before = sandbox.stats().requests;
    let worst = 0;
    for (let k = 0; k < 100; k++) {
      // Mostly real numbers, some that do not exist.
      const n = rng.chance(0.9) ? 1001 + rng.int(0, 9_999) : 20_000 + rng.int(0, 1_000);
      const start = sandbox.stats().requests;
      const r = await ask(big.app, `invoice ${n}`);
      expectValidCard(r.reply.card);
      expect(r.outcome).toBe(n < 20_000 ? 'ok' : 'error');
      worst = Math.max(worst, sandbox.stats().requests - start);
    }
    expect(sandbox.stats().requests - before).toBeLessThanOrEqual(100);
    expect(worst).toBeLessThanOrEqual(1);
  });
});
