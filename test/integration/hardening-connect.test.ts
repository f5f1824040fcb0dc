// What people type into `connect` (words after it, the connect form's token) is never taught to the log scrubber and
// never spends more of BILL's sign-in budget than one person's share: the real bot over HTTP, the embedded sandbox.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_VERBS, CONNECT_INPUTS } from '../../src/features/approvals/cards.js';
import { startBot, type TestBot } from '../harness/bot.js';
import { channelMessage, executeInvoke, personalMessage, type Who } from '../harness/activities.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { sandboxControlOk, startTestSandbox, type TestSandbox } from '../harness/sandbox.js';
import { TestRedis } from '../harness/redis.js';
import { registerSecrets } from '../harness/secretScan.js';
import { ManualClock } from '../../src/infra/clock.js';

type Card = ReturnType<typeof ConnectorStandIn.card>;

const MALLORY: Required<Who> = { id: '29:user-mallory', name: 'Mallory Stone', aadObjectId: '55555555-0000-4000-8000-0000000000e5' };
const person = (n: number): Required<Who> => ({
  id: `29:user-p${n}`,
  name: `Person ${n}`,
  aadObjectId: `66666666-0000-4000-8000-${n.toString(16).padStart(12, '0')}`,
});

/** Values the tests typed: none may show up in any log line (the secret scan checks them after the file). */
const typed: string[] = [];
registerSecrets(() => typed);

function texts(card: Card): string[] {
  const out: string[] = [];
  const walk = (n: unknown) => {
    if (!n || typeof n !== 'object') return;
    if (Array.isArray(n)) {
      n.forEach(walk);
      return;
    }
    const o = n as Card;
    if (o.type === 'TextBlock') out.push(String(o.text).replace(/\\(.)/g, '$1'));
    Object.values(o).forEach(walk);
  };
  walk(card.body);
  return out;
}

/** A message in the person's personal chat; resolves with the reply card. */
async function personal(bot: TestBot, who: Who, text: string): Promise<Card> {
  const activity = personalMessage(text, { serviceUrl: bot.connector.url, from: who });
  const before = bot.connector.messages(activity.conversation.id).length;
  const res = await bot.send(activity);
  expect(res.status).toBeLessThan(300);
  const msgs = await bot.connector.waitForMessages(before + 1, activity.conversation.id);
  return ConnectorStandIn.card(msgs[before]!);
}

/** "@billbridge <text>" in a channel; resolves with the reply card. */
async function inChannel(bot: TestBot, who: Who, text: string): Promise<Card> {
  const activity = channelMessage(text, { serviceUrl: bot.connector.url, from: who });
  const before = bot.connector.messages(activity.conversation.id).length;
  const res = await bot.send(activity);
  expect(res.status).toBeLessThan(300);
  const msgs = await bot.connector.waitForMessages(before + 1, activity.conversation.id);
  return ConnectorStandIn.card(msgs[before]!);
}

/** The connect form submitted (Action.Execute, as the card sends it) from a personal chat or a channel. */
async function submitConnect(
  bot: TestBot,
  who: Who,
  token: { name: string; value: string },
  where: 'personal' | 'channel' = 'personal',
): Promise<Card> {
  const base =
    where === 'personal'
      ? personalMessage('', { serviceUrl: bot.connector.url, from: who })
      : channelMessage('', { serviceUrl: bot.connector.url, from: who });
  const res = await bot.send(
    executeInvoke(
      { verb: APPROVAL_VERBS.connect, [CONNECT_INPUTS.tokenName]: token.name, [CONNECT_INPUTS.tokenValue]: token.value },
      base,
      { from: who, replyToId: 'connect-form' },
    ),
  );
  expect(res.status).toBe(200);
  return res.json?.value as Card;
}

/** Sign-in attempts the sandbox has seen (accepted, refused, or over its own hourly limit). */
function signIns(bot: TestBot): number {
  const s = bot.app.sandbox!.stats();
  return s.logins + s.loginFailures + s.limitErrors.logins;
}

/**
 * Has the bot still written, since `from`, the line "unknown card action" at level info with verb "info"? A click
 * on a card button named "info" makes it: the word in the level and in a field, both uncensored.
 */
async function logsTheWordInfo(bot: TestBot, who: Who): Promise<boolean> {
  const from = bot.logs.lines.length;
  const base = personalMessage('', { serviceUrl: bot.connector.url, from: who });
  const res = await bot.send(executeInvoke({ verb: 'info' }, base, { from: who, replyToId: 'some-card' }));
  expect(res.status).toBe(200);
  const after = bot.logs.lines.slice(from);
  return after.some((l) => l.includes('"level":"info"') && l.includes('"verb":"info"') && l.includes('unknown card action'));
}

describe('values people type are never taught to the log scrubber', () => {
  let bot: TestBot;
  beforeAll(async () => {
    bot = await startBot({
      env: { SECRETS_KEY: randomBytes(32).toString('base64'), LINK_COOLDOWN_S: '0', USER_COMMANDS_PER_MINUTE: '100' },
    });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('a hostile "connect <value>" typed in a channel leaves the bot answering, logging, and the word "info" intact', async () => {
    // A lone surrogate (no URL-encoded form), regex syntax, a long word, and "info": each broke or bent the scrubber.
    const hostile = `\ud800(${'a'.repeat(300)}|[*+?${randomBytes(6).toString('hex')}`;
    typed.push(hostile.slice(1));
    await inChannel(bot, MALLORY, `connect ${hostile}`);
    await inChannel(bot, MALLORY, 'connect info');
    expect(bot.app.secrets.list()).not.toContain('info');
    expect(bot.app.secrets.list().some((s) => s.includes('aaaa'))).toBe(false);
    const help = await inChannel(bot, MALLORY, 'help');
    expect(texts(help).join(' ')).toContain('connect');
    expect(await logsTheWordInfo(bot, MALLORY)).toBe(true);
    expect(bot.logs.records().some((r) => r.level === '[REDACTED]')).toBe(false);
  });

  it('a token glued to "connect" ("connect:<token>", "connect=<token>") is not repeated on the card in a channel or a personal chat', async () => {
    // A zero-width space the parser drops glues the token to the name too.
    for (const glue of [':', '=', ',', ';', '-', '/', '\u200b', '']) {
      const value = `tok${randomBytes(10).toString('hex')}`;
      typed.push(value);
      const cards = [await inChannel(bot, MALLORY, `connect${glue}${value}`), await personal(bot, MALLORY, `Connect${glue}${value}`)];
      for (const card of cards) {
        expect(JSON.stringify(card), JSON.stringify(glue)).not.toContain(value);
        expect(texts(card).join(' ')).toContain('connect …');
      }
    }
  });

  it('"approvals connect <token>" (connect typed after another command) repeats the token on no card and in no audit record', async () => {
    for (const line of ['approvals connect', 'approvals connect now', 'approvals']) {
      const value = `tok${randomBytes(10).toString('hex')}`;
      typed.push(value);
      const cards = [await inChannel(bot, MALLORY, `${line} ${value}`), await personal(bot, MALLORY, `${line} ${value}`)];
      for (const card of cards) expect(JSON.stringify(card), line).not.toContain(value);
      expect(readFileSync(bot.app.audit.location, 'utf8'), line).not.toContain(value);
    }
  });

  it('a connect form with a 60,000-character token in a personal chat is refused at once; the bot keeps logging and answering', async () => {
    const huge = randomBytes(45_000).toString('base64');
    expect(huge.length).toBe(60_000);
    typed.push(huge, huge.slice(0, 64));
    const before = signIns(bot);
    const card = await submitConnect(bot, MALLORY, { name: 'mallory-token', value: huge });
    expect(texts(card).join(' ')).toContain('Enter both the token name and the token');
    expect(signIns(bot)).toBe(before);
    expect(bot.app.secrets.list().some((s) => s.length > 10_000)).toBe(false);
    // The same as a message: "connect <60,000 characters>" in the personal chat.
    const typedLong = await personal(bot, MALLORY, `connect ${huge}`);
    expect(texts(typedLong).length).toBeGreaterThan(0);
    expect(JSON.stringify(typedLong)).not.toContain(huge.slice(0, 64));
    const status = await personal(bot, MALLORY, 'status');
    expect(texts(status).join(' ')).toContain('BILL');
    expect(await logsTheWordInfo(bot, MALLORY)).toBe(true);
    expect(bot.logs.text()).not.toContain(huge.slice(0, 64));
  });

  it('a connect form whose token is "info", or a person\'s object id, censors neither word in later log lines or audit records', async () => {
    await submitConnect(bot, MALLORY, { name: 'mallory-token', value: 'info' });
    await submitConnect(bot, MALLORY, { name: 'mallory-token', value: MALLORY.aadObjectId });
    expect(bot.app.secrets.list()).not.toContain('info');
    expect(bot.app.secrets.list()).not.toContain(MALLORY.aadObjectId);
    const help = await personal(bot, MALLORY, 'help');
    expect(texts(help).join(' ')).toContain('connect');
    expect(await logsTheWordInfo(bot, MALLORY)).toBe(true);
    const audit = readFileSync(bot.app.audit.location, 'utf8');
    expect(audit).toContain(MALLORY.aadObjectId);
  });

  it('a connect form submitted in a channel is refused before its token is looked at: nothing registered, no sign-in', async () => {
    const token = { name: 'chan-token', value: `channel-secret-${randomBytes(8).toString('hex')}` };
    typed.push(token.value);
    const before = signIns(bot);
    const secretsBefore = bot.app.secrets.list().length;
    const card = await submitConnect(bot, MALLORY, token, 'channel');
    expect(texts(card)[0]).toBe('Connect in a personal chat');
    expect(signIns(bot)).toBe(before);
    expect(bot.app.secrets.list().length).toBe(secretsBefore);
    expect(bot.app.secrets.list()).not.toContain(token.value);
  });
});

describe("one person cannot spend the deployment's BILL sign-in budget", () => {
  it('ten bogus connect submissions in a row reach BILL once, then a card says when to try again', async () => {
    const bot = await startBot({ env: { SECRETS_KEY: randomBytes(32).toString('base64'), LINK_COOLDOWN_S: '60' } });
    try {
      const before = signIns(bot);
      const cards: Card[] = [];
      for (let i = 0; i < 10; i++) {
        const value = `bogus-${i}-${randomBytes(8).toString('hex')}`;
        typed.push(value);
        cards.push(await submitConnect(bot, MALLORY, { name: 'mallory-token', value }));
      }
      expect(signIns(bot) - before).toBe(1);
      expect(texts(cards[0]!).join(' ')).toContain('BILL did not accept that token');
      for (const card of cards.slice(1)) expect(texts(card).join(' ')).toMatch(/try again (in|at)/i);
      // Someone else is not held up by Mallory's wait.
      const other = await submitConnect(bot, person(1), { name: 'p1-token', value: `bogus-p1-${randomBytes(8).toString('hex')}` });
      expect(texts(other).join(' ')).toContain('BILL did not accept that token');
    } finally {
      await bot.close();
    }
  });

  it('without a cooldown, a person still reaches BILL at most LINK_ATTEMPTS_PER_HOUR times an hour', async () => {
    const bot = await startBot({
      env: { SECRETS_KEY: randomBytes(32).toString('base64'), LINK_COOLDOWN_S: '0', LINK_ATTEMPTS_PER_HOUR: '3' },
    });
    try {
      const before = signIns(bot);
      const cards: Card[] = [];
      for (let i = 0; i < 10; i++) {
        const value = `bogus-cap-${i}-${randomBytes(8).toString('hex')}`;
        typed.push(value);
        cards.push(await submitConnect(bot, MALLORY, { name: 'mallory-token', value }));
      }
      expect(signIns(bot) - before).toBe(3);
      expect(texts(cards[9]!).join(' ')).toMatch(/try again (in|at)/i);
    } finally {
      await bot.close();
    }
  });

  it("many people submitting bogus tokens cannot take the bot's reserved logins: the bot signs in again afterwards", async () => {
    const bot = await startBot({
      env: {
        SECRETS_KEY: randomBytes(32).toString('base64'),
        LINK_COOLDOWN_S: '0',
        LINK_ATTEMPTS_PER_HOUR: '5',
        LIMIT_BILL_LOGINS_PER_HOUR: '12',
        LIMIT_BILL_LOGINS_RESERVED_PERCENT: '25',
      },
    });
    try {
      // The bot's own session exists before the crowd arrives.
      const first = await inChannel(bot, MALLORY, 'bills');
      expect(texts(first).join(' ')).not.toMatch(/try again/i);
      const before = signIns(bot);
      for (let p = 1; p <= 4; p++) {
        for (let i = 0; i < 5; i++) {
          const value = `bogus-crowd-${p}-${i}-${randomBytes(8).toString('hex')}`;
          typed.push(value);
          await submitConnect(bot, person(p), { name: `p${p}-token`, value });
        }
      }
      // People shared at most 12 less the bot's 25% (3) logins; the bot had used one of the 12 already.
      expect(signIns(bot) - before).toBeLessThanOrEqual(9);
      // BILL ends the bot's session; the bot's next call signs in again within the reserve.
      await sandboxControlOk(bot.app.sandbox!.url, 'POST', '/sessions/expire');
      const loginsBefore = bot.app.sandbox!.stats().logins;
      const org = bot.app.sandbox!.credentials.orgId;
      expect((await bot.app.bill.org(org).whoami()).organizationId).toBe(org);
      expect(bot.app.sandbox!.stats().logins).toBe(loginsBefore + 1);
      // And a command that needs BILL still answers in the channel.
      const again = await inChannel(bot, MALLORY, 'bills');
      expect(texts(again).join(' ')).not.toMatch(/try again|sign-in limit|too many/i);
    } finally {
      await bot.close();
    }
  });
});

describe('a linked token BILL no longer accepts', () => {
  it('a member who deleted their linked token in BILL and types "approvals" all hour long signs in to BILL at most once', async () => {
    const clock = new ManualClock(Date.parse('2026-03-02T09:00:00Z'));
    const bot = await startBot({ clock, env: { SECRETS_KEY: randomBytes(32).toString('base64'), USER_COMMANDS_PER_MINUTE: '1000' } });
    try {
      const sandbox = bot.app.sandbox!;
      const user = sandbox.org.users.all().find((u) => u.firstName === 'Priya')!;
      const token = (await sandboxControlOk(sandbox.url, 'POST', `/users/${user.id}/sync-tokens`, {})) as { name: string; value: string };
      typed.push(token.value);
      expect(texts(await submitConnect(bot, MALLORY, token))[0]).toBe('Connected to BILL');
      const saved = structuredClone(sandbox.org.users.get(user.id)!.syncTokens);
      await sandboxControlOk(sandbox.url, 'DELETE', `/users/${user.id}/sync-tokens/${encodeURIComponent(token.name)}`);
      await sandboxControlOk(sandbox.url, 'POST', '/sessions/expire');
      const before = signIns(bot);
      // Once a minute for an hour: each try would be a refused sign-in from the people's shared budget.
      for (let i = 0; i < 60; i++) {
        const card = await personal(bot, MALLORY, 'approvals');
        expect(texts(card)[0]).toBe('BILL no longer accepts your sign-in');
        clock.advance(59_000);
      }
      expect(signIns(bot) - before).toBeLessThanOrEqual(1);
      // The same token, back in BILL (an administrator restored the user): connect checks it afresh, and approvals work again.
      sandbox.org.users.get(user.id)!.syncTokens = saved;
      expect(texts(await submitConnect(bot, MALLORY, token))[0]).toBe('Connected to BILL');
      expect(texts(await personal(bot, MALLORY, 'approvals'))[0]).not.toBe('BILL no longer accepts your sign-in');
    } finally {
      await bot.close();
    }
  });
});

describe('a fleet on one Redis (cluster mode)', () => {
  let redis: TestRedis;
  let sb: TestSandbox;
  let connector: ConnectorStandIn;
  let a: TestBot;
  let b: TestBot;
  beforeAll(async () => {
    [redis, sb, connector] = await Promise.all([TestRedis.start(), startTestSandbox(), new ConnectorStandIn().start()]);
    const c = sb.credentials;
    const env = {
      REDIS_URL: redis.url,
      BILL_BASE_URL: sb.sandbox.baseUrl,
      BILL_SPEND_BASE_URL: sb.sandbox.spendBaseUrl,
      BILL_EVENTS_BASE_URL: sb.sandbox.eventsBaseUrl,
      BILL_DEV_KEY: c.devKey,
      BILL_USERNAME: c.username,
      BILL_PASSWORD: c.password,
      BILL_ORG_ID: c.orgId,
      SECRETS_KEY: randomBytes(32).toString('base64'),
      LINK_COOLDOWN_S: '60',
      LINK_ATTEMPTS_PER_HOUR: '5',
      LIMIT_BILL_LOGINS_PER_HOUR: '12',
      LIMIT_BILL_LOGINS_RESERVED_PERCENT: '25',
    };
    [a, b] = await Promise.all([startBot({ env, connector }), startBot({ env, connector })]);
    registerSecrets(() => [c.password, c.devKey]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await Promise.all([connector.stop(), sb.stop(), redis.close()]);
  });
  const fleetSignIns = async () => {
    const s = await sb.stats();
    return s.logins + s.loginFailures + s.limitErrors.logins;
  };

  it('shares the cooldown: bogus submissions alternating between instances reach BILL once', async () => {
    const before = await fleetSignIns();
    const cards: Card[] = [];
    for (let i = 0; i < 6; i++) {
      const value = `bogus-fleet-${i}-${randomBytes(8).toString('hex')}`;
      typed.push(value);
      cards.push(await submitConnect(i % 2 === 0 ? a : b, MALLORY, { name: 'mallory-token', value }));
    }
    expect((await fleetSignIns()) - before).toBe(1);
    for (const card of cards.slice(1)) expect(texts(card).join(' ')).toMatch(/try again at/i);
  });

  it("shares the people's share of the logins: a crowd on both instances leaves the bot its reserve", async () => {
    // The bot's own session first (one login of the 12).
    expect((await a.app.bill.org(sb.credentials.orgId).whoami()).organizationId).toBe(sb.credentials.orgId);
    // Twelve people, one bogus token each, half on each instance: alone, each instance would let its six through.
    const before = (await sb.stats()).loginFailures;
    const cards: Card[] = [];
    for (let p = 10; p < 22; p++) {
      const value = `bogus-fleet-crowd-${p}-${randomBytes(8).toString('hex')}`;
      typed.push(value);
      cards.push(await submitConnect(p % 2 === 0 ? a : b, person(p), { name: `p${p}-token`, value }));
    }
    // Together with Mallory's attempt above they stayed within the people's share this hour, 12 less 25% (3) = 9
    // sign-ins (every refused sign-in here was a person's); the rest were told to wait.
    const after = (await sb.stats()).loginFailures;
    expect(after).toBe(9);
    expect(cards.filter((c) => texts(c).join(' ').includes('BILL sign-in limit reached'))).toHaveLength(12 - (after - before));
    await sb.control('POST', '/sessions/expire');
    const loginsBefore = (await sb.stats()).logins;
    expect((await b.app.bill.org(sb.credentials.orgId).whoami()).organizationId).toBe(sb.credentials.orgId);
    expect((await sb.stats()).logins).toBe(loginsBefore + 1);
  });
});
