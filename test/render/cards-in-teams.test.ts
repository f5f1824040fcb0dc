// Every card of the gallery laid out by Microsoft's adaptivecards renderer in headless Chromium, with Teams' light,
// dark and high-contrast host configs, at a phone's 320 px and Teams desktop's 450 px: read back from the page.
import { describe, expect, it } from 'vitest';
import { galleryCards } from '../../tools/galleryCards.js';
import { TEAMS_THEMES } from '../../tools/hostConfigs.js';
import { sharedCardRenderer, type RenderCase } from '../harness/render.js';

const WIDTHS = [320, 450];
const CASES: RenderCase[] = TEAMS_THEMES.flatMap((theme) => WIDTHS.map((width) => ({ theme, width })));
const cards = galleryCards();

const renderer = sharedCardRenderer();

describe('cards as people see them in Teams (light, dark, high contrast; 320 px phone and 450 px desktop)', () => {
  it.each(cards.map((c) => [`${c.group}: ${c.name}`, c] as const))(
    '%s: no amount or word split across lines or cut off, every text readable, nothing dropped, nothing wider than the column',
    async (_name, c) => {
      expect(await renderer.problems(c.reply.card, CASES)).toEqual([]);
    },
  );

  it('the checks see a broken amount, a broken word, unreadable yellow and a dropped element when a card has them', async () => {
    const bad = {
      type: 'AdaptiveCard',
      version: '1.5',
      body: [
        {
          type: 'ColumnSet',
          columns: [1, 1, 1, 1, 1, 1].map((_, i) => ({
            type: 'Column',
            width: 1,
            items: [{ type: 'TextBlock', wrap: true, text: i === 0 ? '$12,345,678.00' : 'Unreconciled' }],
          })),
        },
        { type: 'TextBlock', text: 'Due today', color: 'Warning', wrap: true },
        { type: 'Chart.Pie', data: [] },
      ],
    };
    const problems = (await renderer.problems(bad, [{ theme: 'light', width: 320 }])).join('\n');
    expect(problems).toMatch(/amount broken across lines: "\$12,345,678\.00"/);
    expect(problems).toMatch(/word broken across lines: "Unreconciled"/);
    expect(problems).toMatch(/contrast 1\.4\d:1 \(needs 4\.5\)/);
    expect(problems).toMatch(/dropped without fallback: .*Chart\.Pie/);
  });

  it('the checks see a row of buttons that runs past a 320 px card', async () => {
    const run = (title: string) => ({ type: 'Action.Submit', title, data: { verb: 'run', command: title } });
    const crowded = {
      type: 'AdaptiveCard',
      version: '1.5',
      body: [{ type: 'TextBlock', text: 'Spend', wrap: true }],
      actions: ['Transactions', 'Reimbursements', 'Budgets', 'Refresh'].map(run),
    };
    expect((await renderer.problems(crowded, [{ theme: 'light', width: 320 }])).join('\n')).toMatch(
      /button past the edge of the card: "Refresh"/,
    );
  });
});
