// Lookups by number in the org mirror: a number one record carries finds it, a number several records share finds
// each of them, and a record renumbered or gone leaves the number it had, as BILL answers change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/infra/clock.js';
import { startBot, type TestBot } from '../harness/bot.js';

const NOW = Date.parse('2026-03-10T15:30:00.000Z');
let clock: ManualClock;
let bot: TestBot;
const iso = () => new Date(clock.now()).toISOString();

beforeAll(async () => {
  clock = new ManualClock(NOW);
  bot = await startBot({ clock });
});
afterAll(async () => {
  await bot.close();
});

describe('lookups by number', () => {
  it('find one record, then each record sharing the number, and forget the number as records leave it', async () => {
    const mirror = bot.app.mirror;
    const org = bot.app.sandbox!.org;
    const found = async (number: string) => {
      const r = await mirror.lookup(org.id, 'bill', number, { waitMs: 30_000 });
      return 'rows' in r ? r.rows.map((b) => b.id).sort() : [];
    };
    const [a, b, c] = org.bills.all().filter((x) => !x.archived);
    expect(await found(a!.invoice!.invoiceNumber!)).toEqual([a!.id]);
    // Typed as people type it: any case, a leading '#', extra spaces.
    expect(await found(`# ${a!.invoice!.invoiceNumber!.toLowerCase()}`)).toEqual([a!.id]);
    clock.advance(1_000);
    const shared = 'SHARED-77';
    for (const x of [a!, b!, c!])
      await mirror.apply(org.id, 'bill', org.bills.put({ ...x, invoice: { ...x.invoice, invoiceNumber: shared }, updatedTime: iso() }));
    expect(await found(shared)).toEqual([a!.id, b!.id, c!.id].sort());
    expect(await found(a!.invoice!.invoiceNumber!)).toEqual([]);
    clock.advance(1_000);
    await mirror.apply(org.id, 'bill', org.bills.put({ ...b!, invoice: { ...b!.invoice, invoiceNumber: 'OWN-1' }, updatedTime: iso() }));
    expect(await found(shared)).toEqual([a!.id, c!.id].sort());
    expect(await found('own-1')).toEqual([b!.id]);
    // Deleted in BILL: a stale mark makes the next lookup read it again, and BILL's 404 drops it.
    const gone = async (id: string) => {
      org.bills.delete(id);
      await mirror.markStale(org.id, 'bill', id);
    };
    await gone(a!.id);
    expect(await found(shared)).toEqual([c!.id]);
    await gone(c!.id);
    expect(await found(shared)).toEqual([]);
  });
});
