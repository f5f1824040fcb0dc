// Every card in the gallery, built from a demo organisation whose BILL text is hostile markdown (vendor, customer,
// merchant, budget and approver names, invoice numbers, memos): no card lets that text format, link or vanish.
import { describe, expect, it, vi } from 'vitest';
import { escapeMarkdown, unescapeMarkdown } from '../../src/cards/card.js';
import { liveMarkup, markdownTexts, plainRuns } from '../harness/markdown.js';

/** Markdown Teams would act on: a link, an image, HTML, code, strike-through, emphasis, a bare address. */
const HOSTILE =
  'Zq9 *Star* _Under_ [x](https://evil.example) ![i](https://evil.example/i.png) <b>bold</b> `code` ~~gone~~ www.evil.example';

vi.mock('../../src/sandbox/seed.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/sandbox/seed.js')>();
  return {
    ...real,
    // The real demo organisation, then every name, number and memo a card shows made hostile.
    seedDemoOrg: (...args: Parameters<typeof real.seedDemoOrg>) => {
      const creds = real.seedDemoOrg(...args);
      const org = args[0].org(creds.orgId)!;
      const bad = (s: string | undefined) => `${s ?? ''} ${HOSTILE}`;
      for (const v of org.vendors.all()) org.vendors.put({ ...v, name: bad(v.name) });
      for (const c of org.customers.all()) org.customers.put({ ...c, name: bad(c.name) });
      for (const b of org.bills.all())
        org.bills.put({
          ...b,
          vendorName: bad(b.vendorName),
          description: bad(b.description),
          invoice: b.invoice ? { ...b.invoice, invoiceNumber: bad(b.invoice.invoiceNumber) } : b.invoice,
        });
      for (const p of org.payments.all()) org.payments.put({ ...p, vendorName: bad(p.vendorName), description: bad(p.description) });
      for (const i of org.invoices.all())
        org.invoices.put({
          ...i,
          invoiceNumber: bad(i.invoiceNumber),
          description: bad((i as { description?: string }).description),
        } as typeof i);
      for (const t of org.spend.transactions.all()) org.spend.transactions.put({ ...t, merchantName: bad(t.merchantName) });
      for (const r of org.spend.reimbursements.all())
        org.spend.reimbursements.put({
          ...r,
          merchantName: bad(r.merchantName),
          userName: bad((r as { userName?: string }).userName),
        } as typeof r);
      for (const b of org.spend.budgets.all()) org.spend.budgets.put({ ...b, name: bad(b.name) });
      return creds;
    },
  };
});

const { galleryCards } = await import('../../tools/galleryCards.js');

describe('hostile BILL text on every gallery card', () => {
  const cards = galleryCards({ version: '1.2.3' });
  const showing = cards.filter(
    (c) =>
      markdownTexts(c.reply.card).some((t) => unescapeMarkdown(t).includes('Zq9')) ||
      plainRuns(c.reply.card).some((t) => t.includes('Zq9')),
  );

  it('reaches the cards that show BILL data (the fixtures are in use)', () => {
    const names = showing.map((c) => c.name);
    for (const expected of [
      'bills due',
      'bill (overdue)',
      'payments',
      'vendor Acme',
      'customer Contoso',
      'invoices overdue',
      'spend transactions',
      'spend budgets',
    ]) {
      expect(
        names.some((n) => n.startsWith(expected)),
        expected,
      ).toBe(true);
    }
  });

  it.each(cards.map((c) => [`${c.group} / ${c.name}`, c] as const))('%s: no hostile text formats, links or vanishes', (_name, c) => {
    for (const t of markdownTexts(c.reply.card)) {
      if (!unescapeMarkdown(t).includes('Zq9')) continue;
      expect(liveMarkup(t), t).toEqual([]);
      // Shown as typed: escaping takes nothing away.
      expect(unescapeMarkdown(t), t).toContain('[x](https://evil.example)');
    }
    // Plain runs show it exactly as BILL has it: no markdown there, so no backslash either.
    for (const t of plainRuns(c.reply.card)) if (t.includes('Zq9')) expect(t).toContain(HOSTILE);
    const urls = JSON.stringify(c.reply.card).match(/"url":"[^"]*"/g) ?? [];
    expect(urls.filter((u) => u.includes('evil'))).toEqual([]);
  });
});

describe('escapeMarkdown', () => {
  it('leaves amounts, dates and invoice numbers as typed', () => {
    for (const s of ['$1,250.00', 'INV-2026.11', 'INV_2026_11', 'Nov 21, 2026', 'Acme Office Supplies']) expect(escapeMarkdown(s)).toBe(s);
  });

  it('escapes a link, an image, HTML, code, strike-through, emphasis, a bare address and a date function', () => {
    expect(escapeMarkdown('[a](https://x.example)')).toBe('\\[a\\]\\(https\\://x\\.example\\)');
    expect(escapeMarkdown('![i](y)')).toBe('\\!\\[i\\]\\(y\\)');
    expect(escapeMarkdown('<b>x</b>')).toBe('\\<b\\>x\\</b\\>');
    expect(escapeMarkdown('`c` ~~s~~ *e* _u_')).toBe('\\`c\\` \\~\\~s\\~\\~ \\*e\\* \\_u\\_');
    expect(escapeMarkdown('see www.evil.com')).toBe('see www\\.evil\\.com');
    expect(escapeMarkdown('{{DATE(2026-01-01T00:00:00Z)}}')).toBe('\\{\\{DATE\\(2026-01-01T00:00:00Z\\)}}');
  });

  it('escapes a leading list or heading marker and folds line breaks', () => {
    expect(escapeMarkdown('# Heading')).toBe('\\# Heading');
    expect(escapeMarkdown('1. first\r\n- second')).toBe('1\\. first - second');
    expect(escapeMarkdown('+ plus')).toBe('\\+ plus');
  });

  it('round-trips through unescapeMarkdown', () => {
    expect(unescapeMarkdown(escapeMarkdown(HOSTILE))).toBe(HOSTILE);
  });
});
