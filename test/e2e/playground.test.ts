// billbridge in Microsoft 365 Agents Playground (Microsoft's Teams emulator for bots), driven in headless Chromium as
// a newcomer would click through it: the install welcome, commands in a personal chat and in a channel, a line that
// only names a bill, the compose box's search and the "Look up in BILL" message action.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PLAYGROUND_TEAM, PLAYGROUND_USER, startPlayground, type RunningPlayground } from '../../tools/agentsPlayground.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { freePort } from '../harness/net.js';
import { botCard, messageBox, openConversation, openPlayground, say, screenshotForDocs } from '../harness/playground.js';
import { launchChromium } from '../harness/render.js';

/**
 * Searches from the compose box as Teams' search-based message extension: the + menu, "Search Command", then the
 * Playground's "Specify Command ID or Parameter" fields (it reads no app manifest, so the command id and parameter
 * name are typed here), then the search term. The Playground sends composeExtension/query once per change of a
 * non-empty term (no initialRun). Returns the popover; its results are `h1` titles of thumbnail or hero previews.
 */
async function searchFromCompose(page: Page, commandId: string, text: string, parameterName = 'query'): Promise<Locator> {
  // In a channel the new post's + comes first; each posted thread has a reply box with its own.
  await page.getByRole('button', { name: 'Trigger Message Extension App' }).first().click();
  await page.getByRole('menuitem', { name: 'Search Command' }).click();
  const popover = page.getByRole('group').filter({ has: page.getByText('Search-Based Message Extension', { exact: true }) });
  await popover.getByRole('button', { name: 'Specify Command ID or Parameter' }).click();
  await popover.getByPlaceholder('Command ID', { exact: true }).fill(commandId);
  await popover.getByPlaceholder('Parameter name', { exact: true }).fill(parameterName);
  await popover.getByPlaceholder('Enter a search term').fill(text);
  return popover;
}

/**
 * Picks the first result and returns the card it put in the message box. The Playground lists a result only when
 * its preview is a thumbnail or hero card without a `tap` (with one it shows nothing and warns in its log panel), and
 * inserts the attachment's `content`: the whole card travels in the query's answer, no selectItem.
 */
async function insertFirstResult(page: Page, popover: Locator): Promise<Locator> {
  const unsupported = page.getByText('tap action is not supported yet');
  const first = popover.locator('h1').first();
  await first.or(unsupported).first().waitFor();
  if (await unsupported.isVisible()) throw new Error('the results carry a preview tap, which the Playground does not support');
  await first.click();
  const inserted = messageBox(page).locator('[data-lexical-decorator="true"] .ac-adaptiveCard');
  await inserted.waitFor();
  return inserted;
}

/**
 * Posts the new channel post holding the inserted card and returns the card as posted. In a channel, as in Teams, the
 * post goes to the bot only with an @mention; in a personal chat the Playground sends it to the bot as a message
 * (text: an inline-compose-card span), which billbridge leaves unanswered (test/integration/cards-teams.test.ts).
 */
async function postInserted(page: Page, text: string): Promise<Locator> {
  await page.getByRole('button', { name: 'Post', exact: true }).click();
  return botCard(page, text);
}

let bot: TestBot;
let playground: RunningPlayground | undefined;
let browser: Browser | undefined;
let page: Page;
const pageErrors: string[] = [];
const home = mkdtempSync(join(tmpdir(), 'billbridge-playground-'));

beforeAll(async () => {
  // info: a failed test prints the bot's last log lines, which then name each turn and its reply.
  bot = await startBot({ env: { ADMIN_AAD_OBJECT_IDS: PLAYGROUND_USER.aadObjectId, LOG_LEVEL: 'info' } });
  [playground, browser] = await Promise.all([
    startPlayground({ endpoint: `${bot.url}/api/messages`, port: await freePort(), dir: home }),
    launchChromium(),
  ]);
  page = await openPlayground(browser, playground.url);
  // The page's own errors, such as the one that named a reply it dropped ("Saga error: Invalid conversation id").
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text().split('\n')[0] ?? '');
  });
}, 60_000);

// A failed step on the page says which wait hung; this says what the Playground and the bot did meanwhile (it showed a
// channel reply the page had dropped: see holdRepliesUntilPostShown in the harness).
afterEach(async (ctx) => {
  if (ctx.task.result?.state !== 'fail') return;
  // The log panel's lines: each message the Playground sent the bot and got from it, with its HTTP status.
  const panel = await page
    .locator('[contenteditable="true"][spellcheck="false"]')
    .innerText({ timeout: 2_000 })
    .catch((err: unknown) => `(log panel unreadable: ${String(err)})`);
  // Every card on the page, seen or hidden, with its first words: which one the failed step did not find.
  const cards = await page
    .locator('.ac-adaptiveCard')
    .evaluateAll((els) =>
      els.map((e) => `${e.checkVisibility() ? 'seen' : 'hidden'}: ${(e as HTMLElement).innerText.replace(/\s+/g, ' ').slice(0, 80)}`),
    )
    .catch((err: unknown) => [`(cards unreadable: ${String(err)})`]);
  console.error(
    [
      `cards on the page:\n${cards.join('\n')}`,
      `page errors:\n${pageErrors.slice(-10).join('\n')}`,
      `Playground log panel:\n${panel.slice(-4_000)}`,
      `Playground output:\n${(playground?.output.join('') ?? '').slice(-2_000)}`,
      `bot log (last 30 lines):\n${bot.logs.lines.slice(-30).join('')}`,
    ].join('\n\n'),
  );
});

afterAll(async () => {
  await browser?.close();
  await playground?.stop();
  await bot.close();
  rmSync(home, { recursive: true, force: true });
});

describe('billbridge in the Agents Playground', () => {
  it('welcomes the newcomer when the Playground installs it in their personal chat', async () => {
    const welcome = await botCard(page, "Hi, I'm billbridge");
    expect(await welcome.innerText()).toContain('demo organisation of the embedded BILL sandbox');
  });

  it('answers bills due in the personal chat with the bills due card, amounts and a Refresh button', async () => {
    await say(page, 'bills due');
    const card = await botCard(page, 'Bills due in the next 7 days');
    const text = await card.innerText();
    expect(text).toMatch(/Invoice\s#:\s[A-Z]{3}-\d+/);
    expect(text).toMatch(/\$\d[\d,]*\.\d\d/);
    await expect.poll(() => card.getByRole('button', { name: 'Refresh' }).count()).toBe(1);
    await screenshotForDocs(page, 'bills-due', card);
  });

  it(`lists the commands for help in the ${PLAYGROUND_TEAM.name} team's channel when @mentioned`, async () => {
    await openConversation(page, `${PLAYGROUND_TEAM.name} - ${PLAYGROUND_TEAM.channel}`);
    await say(page, 'help', { mention: 'billbridge' });
    const card = await botCard(page, 'billbridge commands');
    expect(await card.innerText()).toContain('bills due [days]');
  });
});

describe('the compose box message extension in the Agents Playground', () => {
  it(`searches bills from a ${PLAYGROUND_TEAM.channel} post's compose box, inserts the first result and posts its card`, async () => {
    await openConversation(page, `${PLAYGROUND_TEAM.name} - ${PLAYGROUND_TEAM.channel}`);
    const popover = await searchFromCompose(page, 'bills', 'ACM');
    const inserted = await insertFirstResult(page, popover);
    const title = (await inserted.innerText()).split('\n')[0] ?? '';
    expect(title).toMatch(/ACM-/);
    const posted = await postInserted(page, title);
    await screenshotForDocs(page, 'search', posted);
  });
});

/** A bill number the sandbox's demo organisation has, on exactly one bill. */
function oneBillNumber(): string {
  const bills = bot.app.sandbox?.org.bills.all() ?? [];
  const counts = new Map<string, number>();
  for (const b of bills) {
    const n = b.invoice?.invoiceNumber;
    if (n) counts.set(n, (counts.get(n) ?? 0) + 1);
  }
  const number = [...counts].find(([n, c]) => c === 1 && /^[A-Z]{3}-\d+$/.test(n))?.[0];
  if (!number) throw new Error('the sandbox has no bill with a number of its own');
  return number;
}

describe('the doors beside commands in the Agents Playground', () => {
  it('answers a channel line that only names a bill with the card `bill <number>` shows', async () => {
    const number = oneBillNumber();
    await openConversation(page, `${PLAYGROUND_TEAM.name} - ${PLAYGROUND_TEAM.channel}`);
    await say(page, `did we pay ${number}?`, { mention: 'billbridge' });
    const card = await botCard(page, `Bill ${number}`);
    await expect.poll(() => card.getByRole('button', { name: 'Refresh' }).count()).toBe(1);
    await screenshotForDocs(page, 'forgiving', card);
  });

  it('looks up the bill a message names from its ... menu and inserts its card into the message box', async () => {
    const number = oneBillNumber();
    await openConversation(page, `${PLAYGROUND_TEAM.name} - ${PLAYGROUND_TEAM.channel}`);
    // A post without a mention: Teams (and the Playground) does not send it to the bot.
    await say(page, `Vendor asks whether ${number} went out`);
    // The innermost block holding both the post's text and a "..." button is the post (newest posts come first).
    const more = page.getByRole('button', { name: 'Show more information' });
    const post = page
      .locator('div')
      .filter({ has: page.getByText(`Vendor asks whether ${number} went out`, { exact: true }) })
      .filter({ has: more })
      .last();
    await post.hover();
    await post.locator(more).first().click();
    await page.getByRole('menuitem', { name: 'Action Command' }).click();
    const ask = page.getByRole('dialog', { name: 'Command ID option dialog' });
    await ask.getByPlaceholder('Input command id or leave blanks').fill('lookUp');
    await ask.getByRole('button', { name: 'Create' }).click();
    const insert = page.getByRole('button', { name: new RegExp(`^Insert .*${number}`) });
    await insert.waitFor();
    await screenshotForDocs(page, 'look-up', insert);
    await insert.click();
    const inserted = messageBox(page).locator('[data-lexical-decorator="true"] .ac-adaptiveCard');
    await inserted.waitFor();
    expect(await inserted.innerText()).toContain(number);
  });
});
