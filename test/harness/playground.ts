// Drives the Microsoft 365 Agents Playground's page in headless Chromium as a person would: pick a chat or channel,
// type into the message box, read the bot's Adaptive Cards; and saves screenshots for the README (docs/playground-*.png).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { repo } from './process.js';

const isLocal = (url: URL) => url.hostname === 'localhost' || url.hostname === '127.0.0.1';

/** The message box: a Lexical editor (contenteditable), in chats at the bottom, in a channel as a new post. */
export const messageBox = (page: Page): Locator => page.locator('[data-lexical-editor="true"][role="textbox"]').first();

/**
 * Opens the Playground's page and waits for its message box. Requests off this machine (Segoe UI fonts and an
 * animation from Microsoft's CDN) are refused at once: offline they would only hang, and the page falls back.
 */
export async function openPlayground(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
  await page.route(
    (u) => !isLocal(u),
    (route) => route.abort(),
  );
  await holdRepliesUntilPostShown(page);
  await page.goto(url);
  await messageBox(page).waitFor();
  // Each later wait fails on its own, naming what it waited for (the chat, the mention list, the card), well inside a
  // test's 30 s: a hang then says where it was.
  page.setDefaultTimeout(15_000);
  return page;
}

/** A Playground WebSocket frame's conversation fields; none for a frame that is not JSON. */
function newsIn(frame: string | Buffer): { actionConversationId?: string; message?: { postConversationId?: string } } {
  try {
    return JSON.parse(String(frame)) as ReturnType<typeof newsIn>;
  } catch {
    return {};
  }
}

/**
 * Holds the Playground's WebSocket news about a channel post until the page knows that post, as Teams shows a person's
 * post before anyone replies to it. The page learns of a post it sends only from the answer to its POST, and the
 * Playground forwards the post to the bot right after answering: a quick reply (help calls no BILL) can reach the page
 * over the WebSocket first, name a post the page does not know yet and be dropped ("Saga error: Invalid conversation
 * id"; the channel help test failed so in 1 of 4 CI runs, and every time that answer is held back 1.5 s). A post is
 * known once the page shows the person's post (counted by its text before it was sent) or once a frame created it.
 */
async function holdRepliesUntilPostShown(page: Page): Promise<void> {
  const known = new Map<string, { shown: Promise<void>; show: () => void }>();
  const post = (id: string) => {
    let entry = known.get(id);
    if (!entry) {
      let show!: () => void;
      const shown = new Promise<void>((resolve) => {
        show = resolve;
      });
      entry = { shown, show };
      known.set(id, entry);
    }
    return entry;
  };
  await page.route('**/_conversation/v1/conversations/*/messages', async (route) => {
    const sent = route.request().postDataJSON() as { text?: string };
    const text = (sent.text ?? '').replace(/<[^>]*>/g, '');
    // Posts, not the new post's box (which holds the text while it is typed): each post has a "..." menu.
    const menu = page.getByRole('button', { name: 'Show more information' });
    const posts = page.locator('[role="group"]').filter({ has: menu, hasText: text });
    const before = await posts.count();
    const response = await route.fetch();
    const { postConversationId } = (await response.json()) as { postConversationId?: string };
    await route.fulfill({ response });
    if (!postConversationId) return;
    // A post the page never shows (it failed) lets its frames through after the wait: the test then says what is missing.
    await posts
      .nth(before)
      .waitFor()
      .catch(() => undefined);
    post(postConversationId).show();
  });
  await page.routeWebSocket(
    (u) => isLocal(u),
    (ws) => {
      const server = ws.connectToServer();
      let delivered = Promise.resolve();
      server.onMessage((frame) => {
        const news = newsIn(frame);
        const thread = news.actionConversationId?.includes(';messageid=') ? news.actionConversationId : undefined;
        delivered = delivered
          .then(() => (thread ? post(thread).shown : undefined))
          .then(() => {
            ws.send(frame);
            // A post the bot starts (the install welcome) is known from the frame that creates it.
            const started = news.message?.postConversationId;
            if (started) post(started).show();
          });
      });
    },
  );
}

/** Opens a conversation from the left rail: 'Personal Chat', the group chat's name, or '<team> - <channel>'. */
export async function openConversation(page: Page, name: string): Promise<void> {
  // By its aria-label: the rail's buttons sit in a Fluent tree whose roles hide them from getByRole.
  await page.locator(`button[aria-label="${name}"]`).click();
  await messageBox(page).waitFor();
}

/**
 * Types `text` and sends it. With `mention`, starts with @billbridge picked from the mention list, as a channel post
 * needs (Teams sends the bot a channel message only when it is mentioned).
 */
export async function say(page: Page, text: string, opts: { mention?: string } = {}): Promise<void> {
  await messageBox(page).click();
  if (opts.mention) {
    await page.keyboard.type(`@${opts.mention.slice(0, 4)}`);
    await page.getByRole('menuitem', { name: opts.mention }).click();
    await page.keyboard.type(' ');
  }
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
}

/**
 * The latest Adaptive Card in the conversation whose text includes `text` (case-sensitive), once a person can see it on
 * the page: a hidden copy of a card the page may keep elsewhere is not the one in the conversation.
 */
export async function botCard(page: Page, text: string): Promise<Locator> {
  const exactly = new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  const card = page.locator('.ac-adaptiveCard').filter({ hasText: exactly, visible: true }).last();
  await card.waitFor();
  return card;
}

/**
 * Saves the page as docs/playground-<name>.png with `focus` scrolled into view, when PLAYGROUND_SCREENSHOTS is set
 * (`PLAYGROUND_SCREENSHOTS=1 npx vitest run test/e2e`): the README's pictures come from the same steps as the tests.
 */
export async function screenshotForDocs(page: Page, name: string, focus: Locator): Promise<void> {
  if (!process.env.PLAYGROUND_SCREENSHOTS) return;
  const dir = join(repo, 'docs');
  mkdirSync(dir, { recursive: true });
  await focus.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(dir, `playground-${name}.png`) });
}
