// The gallery's collection is every card the bot sends (demo data, empty and error states): each must parse at 1.5
// with no warnings and stay under 40 KB, and the gallery page must render each one, light and dark.
import { describe, expect, it } from 'vitest';
import { JSDOM, VirtualConsole } from 'jsdom';
import { galleryCards } from '../../tools/galleryCards.js';
import { galleryHtml, rendererBundle } from '../../tools/gallery.js';
import { commandCatalogue } from '../../src/features/index.js';
import { checkCard } from '../harness/cards.js';
import { chartsOf } from '../harness/charts.js';

const cards = galleryCards({ version: '1.2.3' });

describe('the card gallery collection', () => {
  it.each(cards.map((c) => [`${c.group} / ${c.name}`, c] as const))(
    '%s parses at 1.5 with no problems, under 40 KB, with a one-line summary',
    (_name, c) => {
      const check = checkCard(c.reply.card);
      expect(check.problems).toEqual([]);
      expect(check.bytes).toBeLessThan(40 * 1024);
      expect(c.reply.summary).toMatch(/^[^\n]{1,200}$/);
    },
  );

  it.each(cards.map((c) => [`${c.group} / ${c.name}`, c] as const))(
    '%s: its summary (what a screen reader speaks and a notification shows) is plain text, not markdown',
    (_name, c) => {
      const { summary } = c.reply;
      expect(summary).not.toMatch(/\*\*|\]\(|\\[\\*_[\]()#.!<>-]/);
      // Sentences do not run into each other ("No invoice 99999 Check the number").
      expect(summary).not.toMatch(/[^.!?:…)"'\s] [A-Z][a-z]+ the /);
      expect(c.reply.card.speak).toBe(summary);
    },
  );

  it('covers every finance command, help and status, plus empty and error states', () => {
    const names = cards.map((c) => c.name);
    const registry = commandCatalogue();
    for (const name of [
      'bills due',
      'bills overdue',
      'bill',
      'invoice',
      'invoices overdue',
      'vendor',
      'customer',
      'payments',
      'spend',
      'status',
      'help',
    ]) {
      expect(registry.get(name), name).toBeDefined();
      expect(
        names.some((n) => n.startsWith(name)),
        name,
      ).toBe(true);
    }
    expect(names.filter((n) => /none|nothing|no API token|no open/.test(n)).length).toBeGreaterThanOrEqual(5);
    expect(cards.filter((c) => c.group === 'Errors').length).toBeGreaterThanOrEqual(15);
  });

  it('stays valid in another locale and time zone', () => {
    for (const c of galleryCards({ locale: 'de-DE', timeZone: 'Asia/Tokyo' })) expect(checkCard(c.reply.card).problems, c.name).toEqual([]);
  });
});

describe('the gallery page', () => {
  it("renders every card with Microsoft's renderer, light and dark, without an error", () => {
    const errors: string[] = [];
    const console = new VirtualConsole();
    console.on('jsdomError', (e) => errors.push(e.message));
    const dom = new JSDOM(galleryHtml(cards, rendererBundle()), { runScripts: 'dangerously', virtualConsole: console });
    const doc = dom.window.document;
    expect(errors).toEqual([]);
    expect(doc.querySelectorAll('section.entry')).toHaveLength(cards.length);
    // Each card at a phone's 320 px and the desktop's 450 px.
    expect(doc.querySelectorAll('.frame.light .ac-adaptiveCard')).toHaveLength(cards.length * 2);
    expect(doc.querySelectorAll('.frame.dark.w320 .ac-adaptiveCard')).toHaveLength(cards.length);
    expect(doc.querySelectorAll('.error')).toHaveLength(0);
    // Markdown the cards use is rendered (bold), and escaped text is shown as typed.
    expect(doc.querySelectorAll('strong').length).toBeGreaterThan(0);
    dom.window.close();
  }, 60_000); // four frames per card (light and dark at 320 and 450 px) in jsdom

  it("shows each Teams chart as a sketch of its data above the card, whose frames show the chart's fallback", () => {
    const charted = cards.filter((c) => chartsOf(c.reply.card).length > 0);
    expect(charted.map((c) => c.name)).toEqual(expect.arrayContaining(['bills due', 'invoices overdue', 'spend', 'spend budgets']));
    const dom = new JSDOM(galleryHtml(charted, rendererBundle()), { runScripts: 'dangerously' });
    const doc = dom.window.document;
    const entries = [...doc.querySelectorAll('section.entry')];
    expect(entries).toHaveLength(charted.length);
    charted.forEach((c, i) => {
      const sketches = [...(entries[i]?.querySelectorAll('.chart') ?? [])];
      const charts = chartsOf(c.reply.card);
      expect(sketches.map((el) => el.querySelector('.chart-title')?.textContent)).toEqual(
        charts.map((ch): unknown => expect.stringContaining(`${ch.type}: ${ch.title}`)),
      );
      expect(sketches.map((el) => [...el.querySelectorAll('.chart-label')].map((l) => l.textContent))).toEqual(
        charts.map((ch) => ch.data.map((d) => d.x ?? d.legend)),
      );
      expect(entries[i]?.querySelectorAll('.frame .ac-adaptiveCard')).toHaveLength(4);
    });
    const aging = entries[charted.findIndex((c) => c.name === 'invoices overdue')];
    expect(aging?.querySelector('.chart-title')?.textContent).toContain('fallback: FactSet');
    expect(aging?.querySelector('.frame.w450')?.textContent).toContain('90+ days');
    dom.window.close();
  }, 60_000); // four frames per card in jsdom, as above
});
