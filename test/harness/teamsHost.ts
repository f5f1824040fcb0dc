// A Teams host stand-in for tab pages in headless Chromium: a page at https://teams.microsoft.com (fulfilled by the
// browser, nothing leaves the machine) that iframes the tab from the real bot server and answers TeamsJS's
// postMessage protocol as Teams does: initialize, getContext, authentication.getAuthToken, settings.* and themeChange.
import type { Browser, BrowserContext, Frame, Page } from 'playwright-core';

/** The origin Teams on the web frames tabs from: in TeamsJS's list of hosts and in the page's frame-ancestors. */
const TEAMS_ORIGIN = 'https://teams.microsoft.com';

type TeamsThemeName = 'default' | 'dark' | 'contrast';

export interface TeamsHostOptions {
  /** The tab's URL on the bot server, e.g. http://127.0.0.1:1234/tab. */
  tabUrl: string;
  width: number;
  height?: number;
  theme?: TeamsThemeName;
  /** A channel tab's team (context.team.internalId); none for a personal tab or a meeting without a team. */
  teamId?: string;
  /** 'content' for the tab itself, 'settings' for its configuration page. */
  frameContext?: 'content' | 'settings';
  /** What authentication.getAuthToken answers: a token, or a failure reason. */
  token?: string | { failure: string };
  /** The host page's origin: Teams on the web unless told (a test of who may frame the tab gives another). */
  origin?: string;
  /** Runs before the host page opens (routes the tab's requests must meet from its first one). */
  prepare?: (context: BrowserContext) => Promise<unknown>;
}

/** A message the tab sent to its host, as TeamsJS posts it. */
interface HostMessage {
  func: string;
  args: unknown[];
}

export interface TeamsHost {
  context: BrowserContext;
  page: Page;
  /** The tab's frame. */
  tab(): Promise<Frame>;
  /** Every message the tab has sent to the host so far. */
  messages(): Promise<HostMessage[]>;
  /** Teams telling the tab the person switched theme. */
  changeTheme(theme: TeamsThemeName): Promise<void>;
  /** Teams' Save button on a configuration page. */
  save(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The host, in the host page. Replies carry the request's id and uuid; the runtime config says the host supports
 * pages.config (a configurable tab's Save), the rest of what a tab uses needs no capability.
 */
const HOST_SCRIPT = String.raw`
const options = JSON.parse(document.getElementById('options').textContent);
const frame = document.getElementById('tab');
const tabOrigin = new URL(options.tabUrl).origin;
window.hostMessages = [];
const runtime = { apiVersion: 4, supports: { pages: { appButton: {}, tabs: {}, config: {}, backStack: {}, fullTrust: {} }, teams: { fullTrust: {} } } };
const context = {
  theme: options.theme,
  locale: 'en-us',
  hostClientType: 'web',
  frameContext: options.frameContext,
  entityId: 'billbridge-dashboard',
  tid: '72f988bf-86f1-41af-91ab-2d7cd011db47',
  userObjectId: '00000000-0000-0000-0000-00000000c0de',
  userPrincipalName: 'avery@contoso.example',
};
if (options.teamId) Object.assign(context, { teamId: options.teamId, teamName: 'Finance', channelId: '19:finance@thread.tacv2', channelName: 'General' });
function reply(request, args) {
  frame.contentWindow.postMessage({ id: request.id, uuidAsString: request.uuidAsString, args }, tabOrigin);
}
window.addEventListener('message', (event) => {
  if (event.source !== frame.contentWindow || event.origin !== tabOrigin) return;
  const request = event.data;
  if (!request || typeof request.func !== 'string') return;
  window.hostMessages.push({ func: request.func, args: request.args });
  switch (request.func) {
    case 'initialize':
      return reply(request, [options.frameContext, 'web', JSON.stringify(runtime), '2.58.0']);
    case 'getContext':
      return reply(request, [context]);
    case 'authentication.getAuthToken':
      return reply(request, typeof options.token === 'string' ? [true, options.token] : [false, options.token.failure]);
    case 'settings.setSettings':
      return reply(request, [true]);
  }
});
window.sendToTab = (func, args) => frame.contentWindow.postMessage({ func, args }, tabOrigin);
`;

function hostPage(options: Required<Omit<TeamsHostOptions, 'teamId' | 'height' | 'prepare' | 'origin'>> & { teamId?: string }): string {
  // JSON in a script element: "<" escaped so no value can close the element.
  const json = JSON.stringify(options).replace(/</g, '\\u003c');
  return `<!doctype html><html><head><meta charset="utf-8"><title>Microsoft Teams</title>
<style>html,body{margin:0;height:100%;overflow:hidden}iframe{border:0;width:100%;height:100%;display:block}</style></head>
<body><iframe id="tab" title="BILL dashboard" src="${options.tabUrl}"></iframe>
<script type="application/json" id="options">${json}</script><script>${HOST_SCRIPT}</script></body></html>`;
}

/** Opens the tab inside the host stand-in, in a new browser context of the given width. */
export async function openInTeams(browser: Browser, opts: TeamsHostOptions): Promise<TeamsHost> {
  const options = {
    tabUrl: opts.tabUrl,
    width: opts.width,
    theme: opts.theme ?? 'default',
    frameContext: opts.frameContext ?? 'content',
    token: opts.token ?? 'header.payload.signature',
    ...(opts.teamId ? { teamId: opts.teamId } : {}),
  };
  const origin = opts.origin ?? TEAMS_ORIGIN;
  const context = await browser.newContext({ viewport: { width: opts.width, height: opts.height ?? 900 } });
  // Teams is a public site framing the bot: Chromium asks before a public page reaches a loopback address.
  await context.grantPermissions(['local-network-access'], { origin });
  await context.route(`${origin}/**`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: hostPage(options) }));
  await opts.prepare?.(context);
  const page = await context.newPage();
  await page.goto(`${origin}/_#/tab`, { waitUntil: 'commit' });
  return {
    context,
    page,
    async tab() {
      const handle = await page.waitForSelector('#tab');
      const frame = await handle.contentFrame();
      if (!frame) throw new Error('the host page has no tab frame');
      return frame;
    },
    messages: () => page.evaluate(() => (window as unknown as { hostMessages: HostMessage[] }).hostMessages),
    async changeTheme(theme) {
      await page.evaluate(
        (t) => (window as unknown as { sendToTab: (f: string, a: unknown[]) => void }).sendToTab('themeChange', [t]),
        theme,
      );
    },
    async save() {
      await page.evaluate(() => (window as unknown as { sendToTab: (f: string, a: unknown[]) => void }).sendToTab('settings.save', [{}]));
    },
    close: () => context.close(),
  };
}
