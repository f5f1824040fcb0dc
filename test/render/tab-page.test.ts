// The BILL dashboard tab page, served by the real bot server and opened in headless Chromium inside a Teams host
// stand-in that speaks TeamsJS's postMessage protocol: what a person sees outside Teams, in a channel, in a personal
// tab, on a phone and a desktop, in Teams' three themes, and on the configuration page a channel tab starts with.
// Layout and themes are pinned with a fixture answer; the page with a real sign-in against the real API is tested too.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Frame, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelMessage, DEFAULT_USER, installationUpdate, TENANT, teamIds } from '../harness/activities.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { factsOf } from '../harness/finance.js';
import { get, post } from '../harness/net.js';
import { LoginStandIn, OpenIdIssuer } from '../harness/openid.js';
import { sandboxControlOk } from '../harness/sandbox.js';
import { repo } from '../harness/process.js';
import { launchChromium } from '../harness/render.js';
import { openInTeams, type TeamsHost, type TeamsHostOptions } from '../harness/teamsHost.js';

const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJhcGk6Ly9iaWxsYnJpZGdlIn0.c2lnbmF0dXJl';
const TEAM_ID = '19:Qx7finance@thread.tacv2';
const TEAMS_ONLY = 'The BILL dashboard runs inside Microsoft Teams: open it from the billbridge app or a channel tab in Teams.';

const usd = (amount: number, text: string) => ({ currency: 'USD', amount, text });
const eur = (amount: number, text: string) => ({ currency: 'EUR', amount, text });

/**
 * What GET /api/tab/dashboard answers, controlled so that layout and themes are pinned with known figures (long names,
 * two currencies, empty days); the last describe checks it has exactly the real API's keys and types.
 */
const DASHBOARD = {
  org: { name: 'Demo organisation — simulated data' },
  asOf: '2026-03-10T10:42:00.000Z',
  locale: 'en-US',
  payables: {
    dueCount: 3,
    due: [usd(1_234_567.89, '$1,234,567.89'), eur(980, '€980.00')],
    overdueCount: 1,
    overdue: [usd(2_500, '$2,500.00')],
    byDay: [
      { label: 'Mar 10', amounts: [usd(1_200_000, '$1,200,000.00')] },
      { label: 'Mar 11', amounts: [] },
      { label: 'Mar 12', amounts: [usd(34_567.89, '$34,567.89'), eur(980, '€980.00')] },
    ],
  },
  receivables: {
    owedCount: 4,
    owed: [usd(13_396.17, '$13,396.17'), eur(98_785.43, '€98,785.43')],
    aging: [
      { label: '1–30 days', amounts: [usd(12_345.67, '$12,345.67'), eur(98_765.43, '€98,765.43')] },
      { label: '31–60 days', amounts: [eur(20, '€20.00')] },
      { label: '61–90 days', amounts: [] },
      { label: '90+ days', amounts: [usd(1_050.5, '$1,050.50')] },
    ],
  },
  approvals: [
    {
      kind: 'bill',
      number: 'ACM-1042',
      party: 'Fabrikam Industrial Supplies & Logistics GmbH',
      amount: usd(48_250, '$48,250.00'),
      due: 'Mar 14',
    },
    { kind: 'bill', number: 'NW-77', party: 'Northwind Traders', amount: eur(310.5, '€310.50'), due: 'Mar 20' },
  ],
  events: [
    { at: '2026-03-10T09:15:00.000Z', text: 'Bill ACM-1042 from Fabrikam Industrial Supplies & Logistics GmbH was created' },
    { at: '2026-03-10T08:02:00.000Z', text: 'Payment of $2,500.00 to Northwind Traders was scheduled' },
  ],
};

type Answer = { status: number; body: unknown } | undefined;

/** Answers the dashboard API with `answer` (the fixture unless told) and records the requests the tab made. */
async function answerDashboard(context: BrowserContext, seen: Request[], answer: Answer): Promise<void> {
  await context.route('**/api/tab/dashboard**', async (route) => {
    seen.push(route.request());
    const { status, body } = answer ?? { status: 200, body: DASHBOARD };
    await route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(body) });
  });
}

let bot: TestBot;
let browser: Browser;
const hosts: TeamsHost[] = [];

beforeAll(async () => {
  [bot, browser] = await Promise.all([startBot(), launchChromium()]);
}, 60_000);

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close()));
  await browser.close();
  await bot.close();
});

/** The tab in Teams with the dashboard API answered; resolves once the page shows what it came to show. */
async function dashboardInTeams(
  opts: Partial<TeamsHostOptions> = {},
  answer?: Answer,
): Promise<{ host: TeamsHost; tab: Frame; api: Request[]; all: Request[] }> {
  const api: Request[] = [];
  const all: Request[] = [];
  const prepare = async (context: BrowserContext) => {
    context.on('request', (r) => all.push(r));
    await answerDashboard(context, api, answer);
  };
  const host = await openInTeams(browser, { tabUrl: `${bot.url}/tab`, width: 1024, token: TOKEN, prepare, ...opts });
  hosts.push(host);
  const tab = await host.tab();
  await tab.locator('h1, [role="alert"]').first().waitFor();
  return { host, tab, api, all };
}

/** Colours and borders as the page computes them. */
async function look(tab: Frame) {
  return tab.evaluate(() => {
    const body = getComputedStyle(document.body);
    const panel = getComputedStyle(document.querySelector('.panel') ?? document.body);
    const fill = getComputedStyle(document.querySelector('.bar-fill') ?? document.body);
    return {
      theme: document.documentElement.dataset.theme,
      background: body.backgroundColor,
      text: body.color,
      panel: panel.backgroundColor,
      border: `${panel.borderTopWidth} ${panel.borderTopStyle} ${panel.borderTopColor}`,
      bar: fill.backgroundColor,
    };
  });
}

/** Layout problems at the page's width: horizontal scrolling, amounts broken across lines or past the edge. */
async function layoutProblems(tab: Frame): Promise<string[]> {
  return tab.evaluate(() => {
    const problems: string[] = [];
    const doc = document.documentElement;
    if (doc.scrollWidth > doc.clientWidth) problems.push(`page scrolls sideways: ${doc.scrollWidth}px in ${doc.clientWidth}px`);
    for (const amount of document.querySelectorAll('.amount')) {
      const range = document.createRange();
      range.selectNodeContents(amount);
      const tops = new Set([...range.getClientRects()].filter((r) => r.width > 0.5).map((r) => Math.round(r.top)));
      const box = amount.getBoundingClientRect();
      if (tops.size > 1) problems.push(`amount broken across lines: ${amount.textContent}`);
      if (box.right > doc.clientWidth || box.left < 0) problems.push(`amount past the edge: ${amount.textContent}`);
    }
    return problems;
  });
}

async function sectionBoxes(tab: Frame) {
  return tab.evaluate(() =>
    Object.fromEntries(
      [...document.querySelectorAll('section')].map((s) => {
        const r = s.getBoundingClientRect();
        return [s.id, { left: Math.round(r.left), top: Math.round(r.top), width: Math.round(r.width) }];
      }),
    ),
  );
}

/** docs/tab-<name>.png for the README, only when TAB_SCREENSHOTS is set. */
async function screenshotForDocs(host: TeamsHost, name: string): Promise<void> {
  if (!process.env.TAB_SCREENSHOTS) return;
  mkdirSync(join(repo, 'docs'), { recursive: true });
  await host.page.screenshot({ path: join(repo, 'docs', `tab-${name}.png`), fullPage: false });
}

describe('the dashboard tab page outside Teams', () => {
  it('in a browser without Teams says only that it runs inside Teams, and asks nothing of the API', async () => {
    const context = await browser.newContext({ viewport: { width: 1024, height: 700 } });
    try {
      const requests: string[] = [];
      context.on('request', (r) => requests.push(new URL(r.url()).pathname));
      const page = await context.newPage();
      await page.goto(`${bot.url}/tab`);
      await expect.poll(() => page.locator('main').innerText()).toBe(TEAMS_ONLY);
      expect(await page.locator('section, h1, h2').count()).toBe(0);
      expect(requests.filter((p) => p.startsWith('/api/'))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('is served with a policy that allows only its own scripts and requests, and framing only by Teams and Microsoft 365', async () => {
    const page = await get(`${bot.url}/tab`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toMatch(
      /frame-ancestors https:\/\/teams\.microsoft\.com https:\/\/\*\.teams\.microsoft\.com https:\/\/\*\.cloud\.microsoft /,
    );
    expect(csp).not.toContain('unsafe-inline');
    expect(page.text).not.toMatch(/<script>|<script(?![^>]*\bsrc=)[^>]*>|\son\w+=|style=/i);
    for (const [path, type] of [
      ['/tab/app.js', /^text\/javascript/],
      ['/tab/teams.js', /^text\/javascript/],
      ['/tab/tab.css', /^text\/css/],
    ] as const) {
      const file = await get(`${bot.url}${path}`);
      expect(file.status, path).toBe(200);
      expect(file.headers['content-type'], path).toMatch(type);
      expect(file.headers['x-content-type-options'], path).toBe('nosniff');
    }
    const teams = await get(`${bot.url}/tab/teams.js`);
    expect(teams.text).toContain('microsoftTeams');
    expect(teams.headers['cache-control']).toBe('public, max-age=86400');
    expect(page.headers['cache-control']).toBe('no-cache');
  });
});

describe('a site other than Teams or Microsoft 365', () => {
  it('cannot frame the tab: the browser refuses the page before its script runs', async () => {
    const requests: string[] = [];
    const host = await openInTeams(browser, {
      tabUrl: `${bot.url}/tab`,
      width: 1024,
      origin: 'https://billbridge-lookalike.example',
      prepare: async (context) => context.on('request', (r) => requests.push(new URL(r.url()).pathname)),
    });
    hosts.push(host);
    await expect.poll(() => requests).toContain('/tab');
    const tab = await host.tab();
    await expect.poll(() => tab.url()).toMatch(/^chrome-error:/);
    expect(requests).not.toContain('/tab/app.js');
    expect(await host.messages()).toEqual([]);
  });
});

describe('the dashboard tab in a Teams channel (1024 px, light)', () => {
  let tab: Frame;
  let api: Request[];
  let all: Request[];
  let host: TeamsHost;

  beforeAll(async () => {
    ({ host, tab, api, all } = await dashboardInTeams({ teamId: TEAM_ID, height: 640 }));
    await screenshotForDocs(host, 'dashboard');
  }, 60_000);

  it('asks the API once with the Teams token as a Bearer header and the team, and never puts the token in a URL', async () => {
    expect(api).toHaveLength(1);
    const request = api[0]!;
    expect(await request.headerValue('authorization')).toBe(`Bearer ${TOKEN}`);
    const url = new URL(request.url());
    expect(url.pathname).toBe('/api/tab/dashboard');
    expect(url.searchParams.get('team')).toBe(TEAM_ID);
    expect([...url.searchParams.keys()]).toEqual(['team']);
    expect(all.map((r) => r.url()).filter((u) => u.includes(TOKEN) || u.includes(encodeURIComponent(TOKEN)))).toEqual([]);
    expect((await host.messages()).map((m) => m.func)).toEqual(
      expect.arrayContaining(['initialize', 'getContext', 'authentication.getAuthToken']),
    );
  });

  it('shows the organisation and the four sections: payables, receivables, approvals waiting for me, recent BILL events', async () => {
    expect(await tab.locator('h1').innerText()).toBe('BILL dashboard · Demo organisation — simulated data');
    expect(await tab.locator('h2').allInnerTexts()).toEqual(['Payables', 'Receivables', 'Approvals waiting for me', 'Recent BILL events']);
    expect(await tab.getByRole('region', { name: 'Payables' }).count()).toBe(1);
  });

  it('payables: due and overdue with counts and totals per currency, and cash out by due day, a chart per currency', async () => {
    const payables = tab.locator('#payables');
    const text = await payables.innerText();
    expect(text).toMatch(/Due\s+3 bills\s+\$1,234,567\.89\s+€980\.00/);
    expect(text).toMatch(/Overdue\s+1 bill\s+\$2,500\.00/);
    const usdChart = payables.getByRole('figure', { name: 'Cash out by due day, USD' });
    expect((await usdChart.locator('li').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '))).toEqual([
      'Mar 10 $1,200,000.00',
      'Mar 11 —',
      'Mar 12 $34,567.89',
    ]);
    const eurChart = payables.getByRole('figure', { name: 'Cash out by due day, EUR' });
    expect((await eurChart.locator('li').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '))).toEqual([
      'Mar 10 —',
      'Mar 11 —',
      'Mar 12 €980.00',
    ]);
    // The longest bar is the largest amount; bars compare only within a currency.
    const widths = await usdChart.locator('.bar-fill').evaluateAll((fills) => fills.map((f) => f.getBoundingClientRect().width));
    expect(widths[0]).toBeGreaterThan(widths[2]!);
    expect(widths[1]).toBe(0);
  });

  it('receivables: owed with its totals and the aging buckets as bars, with their amounts as text', async () => {
    const receivables = tab.locator('#receivables');
    expect(await receivables.innerText()).toMatch(/Overdue, owed to you\s+4 invoices\s+\$13,396\.17\s+€98,785\.43/);
    const usdAging = receivables.getByRole('figure', { name: 'Overdue by age, USD' });
    expect((await usdAging.locator('li').allInnerTexts()).map((t) => t.replace(/\s+/g, ' '))).toEqual([
      '1–30 days $12,345.67',
      '31–60 days —',
      '61–90 days —',
      '90+ days $1,050.50',
    ]);
    expect(await receivables.getByRole('figure', { name: 'Overdue by age, EUR' }).locator('li').first().innerText()).toMatch(
      /1–30 days\s+€98,765\.43/,
    );
  });

  it("approvals waiting for me and recent BILL events, newest first, with their times in the person's locale", async () => {
    const approvals = await tab.locator('#approvals li').allInnerTexts();
    expect(approvals).toHaveLength(2);
    expect(approvals[0]).toMatch(/Bill ACM-1042\s+\$48,250\.00\s+Fabrikam Industrial Supplies & Logistics GmbH · due Mar 14/);
    expect(approvals[1]).toMatch(/Bill NW-77\s+€310\.50\s+Northwind Traders · due Mar 20/);
    const events = await tab.locator('#events li').allInnerTexts();
    expect(events).toHaveLength(2);
    expect(events[0]).toMatch(/Mar 10, 2026.*\n.*Bill ACM-1042 from Fabrikam/s);
  });

  it('lays the sections out as a two-column grid with nothing scrolling sideways and every amount on one line', async () => {
    const boxes = await sectionBoxes(tab);
    expect(boxes.payables!.top).toBe(boxes.receivables!.top);
    expect(boxes.receivables!.left).toBeGreaterThan(boxes.payables!.left + boxes.payables!.width - 1);
    expect(boxes.approvals!.left).toBe(boxes.payables!.left);
    expect(boxes.approvals!.top).toBeGreaterThan(boxes.payables!.top);
    expect(await layoutProblems(tab)).toEqual([]);
  });
});

describe('the dashboard tab elsewhere in Teams', () => {
  it('on a 320 px phone in the dark theme: one column, no sideways scrolling, no amount broken or cut off', async () => {
    const { host, tab } = await dashboardInTeams({ width: 320, height: 1180, theme: 'dark', teamId: TEAM_ID });
    const boxes = Object.values(await sectionBoxes(tab));
    expect(boxes).toHaveLength(4);
    expect(new Set(boxes.map((b) => b.left)).size).toBe(1);
    expect(await layoutProblems(tab)).toEqual([]);
    await screenshotForDocs(host, 'dashboard-phone');
  });

  it("as a personal tab (no team) asks for the person's own dashboard, without a team", async () => {
    const { api } = await dashboardInTeams();
    expect(api).toHaveLength(1);
    expect(new URL(api[0]!.url()).search).toBe('');
  });

  it('a person with no linked BILL account is told how to connect instead of approvals', async () => {
    const { tab } = await dashboardInTeams({}, { status: 200, body: { ...DASHBOARD, approvals: null, events: [] } });
    expect(await tab.locator('#approvals').innerText()).toContain('message billbridge "connect" in a personal chat');
    expect(await tab.locator('#events').innerText()).toContain('No BILL events yet.');
  });

  it('names from BILL that look like markup are shown as text, never parsed', async () => {
    const hostile = '<img src=x onerror="document.title=1">';
    const body = {
      ...DASHBOARD,
      org: { name: `<b>${hostile}</b>` },
      approvals: [{ ...DASHBOARD.approvals[0]!, party: hostile }],
      events: [{ at: DASHBOARD.asOf, text: `Vendor ${hostile} was created` }],
    };
    const { tab } = await dashboardInTeams({}, { status: 200, body });
    expect(await tab.locator('h1').innerText()).toBe(`BILL dashboard · <b>${hostile}</b>`);
    expect(await tab.locator('#approvals').innerText()).toContain(`${hostile} · due Mar 14`);
    expect(await tab.locator('#events').innerText()).toContain(`Vendor ${hostile} was created`);
    expect(await tab.locator('main img, main b').count()).toBe(0);
  });

  it('a refusal from the API (403) shows its sentence and no figures', async () => {
    const said = "You're not a member of this team, so its BILL dashboard isn't shown to you.";
    const { tab } = await dashboardInTeams({ teamId: TEAM_ID }, { status: 403, body: { error: said } });
    expect(await tab.locator('main').innerText()).toBe(said);
    expect(await tab.locator('section').count()).toBe(0);
  });

  it('while the organisation is still being read (503 with Retry-After), says so and asks again by itself when told', async () => {
    const building = "billbridge is still reading this organisation's invoices from BILL. Try again in a minute.";
    const api: Request[] = [];
    const prepare = (context: BrowserContext) =>
      context.route('**/api/tab/dashboard**', async (route) => {
        api.push(route.request());
        if (api.length === 1)
          await route.fulfill({
            status: 503,
            headers: { 'Retry-After': '1' },
            contentType: 'application/json',
            body: JSON.stringify({ error: building }),
          });
        else await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(DASHBOARD) });
      });
    const host = await openInTeams(browser, { tabUrl: `${bot.url}/tab`, width: 1024, token: TOKEN, prepare });
    hosts.push(host);
    const tab = await host.tab();
    await tab.getByRole('alert').getByText(building).waitFor();
    await tab.locator('h1').waitFor();
    expect(await tab.locator('h1').innerText()).toBe('BILL dashboard · Demo organisation — simulated data');
    expect(api).toHaveLength(2);
  });

  it('when Teams cannot sign the person in, says so and asks the API nothing', async () => {
    const { tab, api } = await dashboardInTeams({ token: { failure: 'resourceRequiresConsent' } });
    expect(await tab.getByRole('alert').innerText()).toMatch(
      /Teams did not sign you in to billbridge \(resourceRequiresConsent\).*admin to consent/,
    );
    expect(api).toHaveLength(0);
  });
});

describe("the dashboard tab in Teams' themes", () => {
  it('light, dark and high contrast each colour the page; high contrast outlines every panel in the system colours', async () => {
    const looks = [];
    for (const theme of ['default', 'dark', 'contrast'] as const) {
      const { tab } = await dashboardInTeams({ theme, width: 1024 });
      looks.push(await look(tab));
    }
    const [light, dark, contrast] = looks;
    expect(looks.map((l) => l.theme)).toEqual(['default', 'dark', 'contrast']);
    expect(new Set(looks.map((l) => l.background)).size).toBe(3);
    expect(new Set(looks.map((l) => l.bar)).size).toBe(3);
    expect(light!.text).not.toBe(dark!.text);
    expect(light!.border).toMatch(/rgba\(0, 0, 0, 0\)$/);
    expect(dark!.border).toMatch(/rgba\(0, 0, 0, 0\)$/);
    expect(contrast!.border).toMatch(/^2px solid rgb\(/);
    expect(contrast!.border.endsWith(contrast!.text)).toBe(true);
  });

  it('follows the person switching theme while the tab is open', async () => {
    const { host, tab } = await dashboardInTeams({ theme: 'default' });
    const before = await look(tab);
    await host.changeTheme('contrast');
    await expect.poll(async () => (await look(tab)).theme).toBe('contrast');
    expect((await look(tab)).background).not.toBe(before.background);
    expect((await host.messages()).some((m) => m.func === 'registerHandler' && m.args[0] === 'themeChange')).toBe(true);
  });
});

describe('the configuration page of a channel or meeting tab', () => {
  it('lets the person save at once and gives Teams the dashboard page on this server', async () => {
    const host = await openInTeams(browser, { tabUrl: `${bot.url}/tab?config=1`, width: 1024, frameContext: 'settings' });
    hosts.push(host);
    const tab = await host.tab();
    await tab.getByText('Select Save to add the BILL dashboard here.', { exact: false }).waitFor();
    await expect.poll(async () => (await host.messages()).find((m) => m.func === 'settings.setValidityState')?.args).toEqual([true]);
    await host.save();
    await expect.poll(async () => (await host.messages()).some((m) => m.func === 'settings.save.success')).toBe(true);
    const saved = (await host.messages()).find((m) => m.func === 'settings.setSettings');
    expect(saved?.args).toEqual([
      { entityId: 'billbridge-dashboard', contentUrl: `${bot.url}/tab`, suggestedDisplayName: 'BILL dashboard' },
    ]);
    expect((await host.messages()).some((m) => m.func === 'authentication.getAuthToken')).toBe(false);
  });
});

/** Every path of a JSON value with the type at its end ("payables.byDay[].amounts[].text: string"); arrays by their items. */
function paths(value: unknown, at = ''): string[] {
  if (Array.isArray(value)) return value.length === 0 ? [`${at}: []`] : [...new Set(value.flatMap((v) => paths(v, `${at}[]`)))];
  if (value !== null && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => paths(v, at ? `${at}.${k}` : k));
  return [`${at}: ${value === null ? 'null' : typeof value}`];
}

describe('the dashboard tab with a real Teams sign-in and the real API', () => {
  const APP_ID = '5b0e8a64-2c1f-4c8e-9d7a-1f2e3d4c5b6a';
  const WEBHOOK_KEY = 'tab-page-webhook-key-0123456789';
  const DANA = DEFAULT_USER.aadObjectId;
  const ERIN = '22222222-0000-4000-8000-00000000e1e1';
  const { team: TEAM } = teamIds();
  let issuer: OpenIdIssuer;
  let login: LoginStandIn;
  let real: TestBot;
  /** Closed before the bot: Chromium's open connections would keep its server from closing. */
  const realHosts: TeamsHost[] = [];

  const sso = (o: { aadObjectId?: string; expiresIn?: number; notBefore?: number } = {}) =>
    issuer.ssoToken({ tenantId: TENANT, aadObjectId: DANA, aud: APP_ID, ...o });
  const botToken = () => issuer.token({ aud: APP_ID, serviceUrl: real.connector.url });

  /** The tab on the real bot, in Teams, signed in with `token`; resolves once it shows figures or a sentence. */
  async function realTab(token: string, teamId?: string): Promise<Frame> {
    const host = await openInTeams(browser, { tabUrl: `${real.url}/tab`, width: 1024, token, ...(teamId ? { teamId } : {}) });
    realHosts.push(host);
    const tab = await host.tab();
    await tab.locator('h1, [role="alert"]').first().waitFor();
    return tab;
  }

  /** The Due figure of the `bills due` card said in the team's channel: its amounts and its count ("7 bills"). */
  async function billsDueCard(): Promise<{ amounts: string[]; count: string }> {
    const said = channelMessage('bills due', { serviceUrl: real.connector.url });
    expect((await real.send(said, { authorization: `Bearer ${await botToken()}` })).status).toBe(200);
    const [reply] = await real.connector.waitForMessages(1, said.conversation.id);
    const [amounts = '', count = ''] = (factsOf(ConnectorStandIn.card(reply!)).Due ?? '').split(' · ');
    return { amounts: amounts.split(' + '), count };
  }

  async function dueFigure(tab: Frame): Promise<{ amounts: string[]; count: string }> {
    const due = tab.locator('#payables .figure').first();
    return { amounts: await due.locator('.amount').allInnerTexts(), count: await due.locator('.figure-count').innerText() };
  }

  beforeAll(async () => {
    issuer = await OpenIdIssuer.start();
    login = (await LoginStandIn.start()).intercept();
    real = await startBot({
      env: {
        ...issuer.env(APP_ID, TENANT),
        TabSsoKeysUrl: issuer.ssoKeysUrl,
        BILL_WEBHOOK_SECURITY_KEY: WEBHOOK_KEY,
        SECRETS_KEY: randomBytes(32).toString('base64'),
        USER_COMMANDS_PER_MINUTE: '1000',
      },
    });
    const installed = await real.send(installationUpdate('add', { serviceUrl: real.connector.url }), {
      authorization: `Bearer ${await botToken()}`,
    });
    expect(installed.status).toBe(200);
    real.connector.rosters.set(TEAM, new Set([DANA]));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(realHosts.map((h) => h.close()));
    await real.close();
    await login.stop();
    await issuer.stop();
  });

  it('a personal tab in single-organisation mode shows the figures the bills due card shows', async () => {
    const tab = await realTab(await sso());
    expect(await tab.locator('h2').allInnerTexts()).toEqual(['Payables', 'Receivables', 'Approvals waiting for me', 'Recent BILL events']);
    const card = await billsDueCard();
    expect(card.amounts.length).toBeGreaterThan(0);
    expect(await dueFigure(tab)).toEqual(card);
  });

  it("a channel tab of a team the person is a member of (by the team's roster) shows the team's organisation", async () => {
    const tab = await realTab(await sso(), TEAM);
    expect(await tab.locator('h1').innerText()).toMatch(/^BILL dashboard · \S/);
    expect(await dueFigure(tab)).toEqual(await billsDueCard());
    const call = real.connector.calls.filter((c) => c.kind === 'member').at(-1);
    expect(call?.path).toBe(`/v3/conversations/${encodeURIComponent(TEAM)}/members/${DANA}`);
  });

  it("a channel tab opened by someone who is not a member shows the API's 403 sentence and no figures", async () => {
    const tab = await realTab(await sso({ aadObjectId: ERIN }), TEAM);
    expect(await tab.getByRole('alert').innerText()).toBe(
      "You are not a member of this team, so its organisation's figures are not shown to you.",
    );
    expect(await tab.locator('section, .amount').count()).toBe(0);
  });

  it('an expired Teams token shows the sentence asking to sign in again, and no figures', async () => {
    const tab = await realTab(await sso({ notBefore: -7200, expiresIn: -600 }));
    expect(await tab.getByRole('alert').innerText()).toBe('Your Teams sign-in could not be checked. Close the tab and open it again.');
    expect(await tab.locator('section, .amount').count()).toBe(0);
  });

  it("the fixture the layout tests draw has exactly the real API's keys and types at every level", async () => {
    const sandbox = real.app.sandbox!;
    // A webhook event and a linked BILL sign-in with a bill waiting, so that no list of the real answer is empty.
    const raw = JSON.stringify({
      metadata: {
        eventId: randomUUID(),
        subscriptionId: 'sub-made-in-bill',
        organizationId: sandbox.credentials.orgId,
        eventType: 'vendor.created',
        version: '1',
      },
      vendor: { id: '00901ZZZ0000000000a', name: 'Acme Supplies' },
    });
    const signature = createHmac('sha256', WEBHOOK_KEY).update(raw).digest('base64');
    expect((await post(`${real.url}/api/bill/webhooks`, raw, { 'x-bill-sha-signature': signature })).json).toMatchObject({
      status: 'accepted',
    });
    const control = (method: string, path: string, body?: unknown) => sandboxControlOk(sandbox.url, method, path, body);
    const priya = sandbox.org.users.all().find((u) => u.firstName === 'Priya')!;
    const bill = sandbox.org.bills.all().find((b) => !b.archived && b.paymentStatus === 'UNPAID' && b.approvalStatus === 'UNASSIGNED')!;
    await control('POST', `/bills/${bill.id}/approvers`, { userIds: [priya.id] });
    const token = (await control('POST', `/users/${priya.id}/sync-tokens`, {})) as { name: string; value: string };
    await real.app.approvals!.links.put({
      tenantId: TENANT,
      aadObjectId: DANA,
      orgId: sandbox.credentials.orgId,
      billUserId: priya.id,
      token,
      teamsUserId: DEFAULT_USER.id,
    });
    const res = await get(`${real.url}/api/tab/dashboard`, { authorization: `Bearer ${await sso()}` });
    expect(res.status).toBe(200);
    expect(paths(res.json).sort()).toEqual(paths(DASHBOARD).sort());
  });
});
