// With a real app registration the bot reads each team it joins from Microsoft Graph: one token, the limiter, Retry-After.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { installationUpdate, TENANT, teamIds } from '../harness/activities.js';
import { GraphStandIn } from '../harness/graph.js';
import { LoginStandIn, OpenIdIssuer } from '../harness/openid.js';
import { NS } from '../../src/infra/state/types.js';
import { targetKey } from '../../src/bindings/bindings.js';
import type { InstallRecord } from '../../src/bindings/installations.js';
import { conversationStatus } from '../../src/features/admin/status.js';
import type { Limiter, Throttle, Upstream } from '../../src/infra/limits/types.js';
import { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { loadConfig } from '../../src/config.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { systemClock } from '../../src/infra/clock.js';
import { GraphApiError, GraphTeams } from '../../src/graph/teams.js';

const APP_ID = '5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716';
const PASSWORD = 'graph-install-client-secret';

let issuer: OpenIdIssuer;
let login: LoginStandIn;
let graph: GraphStandIn;
let bot: TestBot;

beforeAll(async () => {
  issuer = await OpenIdIssuer.start();
  login = (await LoginStandIn.start()).intercept();
  graph = await new GraphStandIn().start();
  graph.clientId = APP_ID;
  graph.clientSecret = PASSWORD;
  bot = await startBot({ env: { ...issuer.env(APP_ID, TENANT, PASSWORD), ...graph.env() } });
});
afterAll(async () => {
  await bot.close();
  await graph.stop();
  await login.stop();
  await issuer.stop();
});

async function install(name: string): Promise<void> {
  const token = await issuer.token({ aud: APP_ID, serviceUrl: bot.connector.url });
  const res = await bot.send(installationUpdate('add', { serviceUrl: bot.connector.url, name }), { authorization: `Bearer ${token}` });
  expect(res.status).toBe(200);
}

const record = (name: string) =>
  bot.app.state.get<InstallRecord>(NS.conversations, targetKey({ tenantId: TENANT, kind: 'team', targetId: teamIds(name).team }));

describe('a team adds billbridge (app registration, Graph reachable)', () => {
  it('reads the team by its Entra group id with a client-credentials token and keeps its name', async () => {
    const ids = teamIds('receivables');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Accounts Receivable', description: 'AR and collections', tenantId: TENANT });
    await install('receivables');
    const tokenCalls = graph.calls.filter((c) => c.kind === 'token');
    expect(tokenCalls).toHaveLength(1);
    expect(tokenCalls[0]).toMatchObject({
      tenantId: TENANT,
      form: { grant_type: 'client_credentials', client_id: APP_ID, client_secret: PASSWORD, scope: 'https://graph.microsoft.com/.default' },
    });
    const teamCalls = graph.calls.filter((c) => c.kind === 'team');
    expect(teamCalls.map((c) => [c.teamId, c.status])).toEqual([[ids.aadGroupId, 200]]);
    expect(await record('receivables')).toMatchObject({
      name: 'Accounts Receivable',
      aadGroupId: ids.aadGroupId,
      graph: { displayName: 'Accounts Receivable', description: 'AR and collections', isArchived: false, tenantId: TENANT },
    });
  });

  it('reuses the token for the next team and serves status from the cache', async () => {
    const ids = teamIds('treasury');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Treasury', tenantId: TENANT, isArchived: true });
    const before = graph.calls.length;
    await install('treasury');
    const status = await conversationStatus(bot.app.features.status, {
      kind: 'channel',
      tenantId: TENANT,
      teamId: ids.team,
      aadGroupId: undefined,
      channelId: ids.channel,
      conversationId: ids.channel,
      serviceUrl: bot.connector.url,
    });
    expect(status.graph).toMatch(/^Treasury \(archived\) · as of /);
    expect(status.install).toMatchObject({ aadGroupId: ids.aadGroupId });
    expect(graph.calls.slice(before).map((c) => c.kind)).toEqual(['team']);
  });

  it('waits out a 429 with Retry-After and retries exactly once', async () => {
    const ids = teamIds('payroll');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Payroll', tenantId: TENANT });
    graph.failNext('team', 1, {
      status: 429,
      headers: { 'Retry-After': '1' },
      body: { error: { code: 'TooManyRequests', message: 'Please retry again later.', innerError: { status: '429' } } },
    });
    await install('payroll');
    const calls = graph.calls.filter((c) => c.kind === 'team' && c.teamId === ids.aadGroupId);
    expect(calls.map((c) => c.status)).toEqual([429, 200]);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(950);
    // The limiter heard about it, so other calls to that team wait too.
    const teamBudget = bot.app.limiter.snapshot().find((b) => b.budget === 'graph.team');
    expect(teamBudget?.lastThrottleKind).toBe('retryAfter');
    expect(await record('payroll')).toMatchObject({ name: 'Payroll', graph: { displayName: 'Payroll' } });
  });

  it("records the install and welcomes even when Graph refuses, and status names Graph's error code", async () => {
    const ids = teamIds('unknown');
    // No such team in the Graph stand-in: 404 itemNotFound-style error.
    await install('unknown');
    await bot.connector.waitForMessages(1, ids.team);
    expect(await record('unknown')).toMatchObject({ name: 'unknown', aadGroupId: ids.aadGroupId });
    expect((await record('unknown'))!.graph).toBeUndefined();
    const status = await conversationStatus(bot.app.features.status, {
      kind: 'channel',
      tenantId: TENANT,
      teamId: ids.team,
      aadGroupId: undefined,
      channelId: ids.channel,
      conversationId: ids.channel,
      serviceUrl: bot.connector.url,
    });
    expect(status.graph).toBe('failed: NotFound (notFound, HTTP 404)');
  });

  it('gets a new token once when Graph says the cached one is no longer valid', async () => {
    const ids = teamIds('audit');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Audit', tenantId: TENANT });
    graph.revokeTokens();
    const before = graph.calls.length;
    await install('audit');
    expect(graph.calls.slice(before).map((c) => `${c.kind}:${c.status}`)).toEqual(['team:401', 'token:200', 'team:200']);
  });

  it('welcomes in the channel chosen in the install dialog when it is not the one the event came through', async () => {
    const ids = teamIds('collections');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Collections', tenantId: TENANT });
    const activity = installationUpdate('add', { serviceUrl: bot.connector.url, name: 'collections' });
    activity.channelData.settings.selectedChannel.id = ids.channel;
    const token = await issuer.token({ aud: APP_ID, serviceUrl: bot.connector.url });
    const before = bot.connector.calls.length;
    expect((await bot.send(activity, { authorization: `Bearer ${token}` })).status).toBe(200);
    const created = await bot.connector.waitFor(
      (calls) => calls.slice(before).find((c) => c.kind === 'createConversation'),
      10_000,
      'a new conversation in the selected channel',
    );
    expect(created.status).toBe(201);
    expect(created.headers.authorization).toMatch(/^Bearer \S+$/);
    expect(created.body).toMatchObject({ isGroup: true, channelData: { channel: { id: ids.channel } } });
    const card = created.body?.activity?.attachments?.find((a) => a.contentType === 'application/vnd.microsoft.card.adaptive')?.content;
    expect(JSON.stringify(card)).toContain('billbridge joined collections');
    // Not a second welcome where the event came from.
    expect(bot.connector.messages(ids.team)).toHaveLength(0);
    expect(bot.connector.calls.slice(before).filter((c) => c.kind === 'createConversation')).toHaveLength(1);
  });

  it('falls back to the channel the event came through when Teams refuses the selected one', async () => {
    const ids = teamIds('disputes');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Disputes', tenantId: TENANT });
    const stop = bot.connector.script((call) =>
      call.kind === 'createConversation'
        ? {
            status: 403,
            body: { error: { code: 'BotNotInConversationRoster', message: 'The bot is not part of the conversation roster.' } },
          }
        : undefined,
    );
    try {
      const activity = installationUpdate('add', { serviceUrl: bot.connector.url, name: 'disputes' });
      activity.channelData.settings.selectedChannel.id = ids.channel;
      const token = await issuer.token({ aud: APP_ID, serviceUrl: bot.connector.url });
      expect((await bot.send(activity, { authorization: `Bearer ${token}` })).status).toBe(200);
      const [welcome] = await bot.connector.waitForMessages(1, ids.team);
      expect(JSON.stringify(welcome!.body?.attachments?.[0]?.content)).toContain('billbridge joined disputes');
      expect(bot.logs.text()).toContain('welcome to the selected channel failed');
    } finally {
      stop();
    }
  });

  it('never writes the client secret or a Graph token to its log', () => {
    const log = bot.logs.text();
    expect(log).not.toContain(PASSWORD);
    for (const c of graph.calls) if (c.authorization) expect(log).not.toContain(c.authorization.replace(/^Bearer /, ''));
  });
});

describe('local mode (no app id)', () => {
  it('never calls Graph, and status says so', async () => {
    const local = await startBot({ env: graph.env() });
    try {
      const before = graph.calls.length;
      await local.send(installationUpdate('add', { serviceUrl: local.connector.url, name: 'local' }));
      await local.connector.waitForMessages(1, teamIds('local').team);
      expect(graph.calls.length).toBe(before);
      const ids = teamIds('local');
      const status = await conversationStatus(local.app.features.status, {
        kind: 'channel',
        tenantId: TENANT,
        teamId: ids.team,
        aadGroupId: ids.aadGroupId,
        channelId: ids.channel,
        conversationId: ids.channel,
        serviceUrl: local.connector.url,
      });
      expect(status.graph).toBe('skipped — local mode: no MicrosoftAppId, so Graph is not called');
    } finally {
      await local.close();
    }
  });
});

describe('the Graph client on its own', () => {
  /** The real limiter, recording what it is asked to run and told about throttling. */
  function recordingLimiter(config: ReturnType<typeof loadConfig>) {
    const log = createLogger({ level: 'silent', secrets: new SecretRegistry() });
    const inner = new SharedLimiter({ config, clock: systemClock, log });
    const runs: Upstream[] = [];
    const throttles: Array<{ upstream: Upstream; throttle: Throttle }> = [];
    const limiter: Limiter = {
      run: (up, o, fn) => {
        runs.push(up);
        return inner.run(up, o, fn);
      },
      throttled: (up, t) => {
        throttles.push({ upstream: up, throttle: t });
        inner.throttled(up, t);
      },
      snapshot: () => inner.snapshot(),
      blockedUntil: (up) => inner.blockedUntil(up),
      close: () => inner.close(),
    };
    return { limiter, runs, throttles, log };
  }

  function client(sleeps: number[] = [], env: Record<string, string> = {}) {
    const config = loadConfig({ ...issuer.env(APP_ID, TENANT, PASSWORD), ...graph.env(), ...env });
    const rec = recordingLimiter(config);
    const teams = new GraphTeams({
      config,
      limiter: rec.limiter,
      clock: systemClock,
      log: rec.log,
      secrets: new SecretRegistry(),
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
    return { teams, ...rec };
  }

  it('asks for every token and team through the limiter, under the identity and Graph budgets of that tenant and team', async () => {
    const ids = teamIds('direct');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Direct', tenantId: TENANT });
    const { teams, runs, limiter } = client();
    try {
      await teams.getTeam(TENANT, ids.aadGroupId);
      expect(runs).toEqual([
        { service: 'identity', tenantId: TENANT },
        { service: 'graph', tenantId: TENANT, teamId: ids.aadGroupId },
      ]);
    } finally {
      teams.close();
      await limiter.close();
    }
  });

  it('on 429 reports Retry-After to the limiter, waits that long, and retries once', async () => {
    const ids = teamIds('direct429');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Direct 429', tenantId: TENANT });
    graph.failNext('team', 1, {
      status: 429,
      headers: { 'Retry-After': '0.25' },
      body: { error: { code: 'TooManyRequests', message: 'Please retry again later.' } },
    });
    const sleeps: number[] = [];
    const { teams, runs, throttles, limiter } = client(sleeps);
    try {
      const team = await teams.getTeam(TENANT, ids.aadGroupId);
      expect(team.displayName).toBe('Direct 429');
      expect(sleeps).toEqual([250]);
      expect(throttles).toEqual([
        { upstream: { service: 'graph', tenantId: TENANT, teamId: ids.aadGroupId }, throttle: { kind: 'retryAfter', ms: 250 } },
      ]);
      expect(runs.filter((r) => r.service === 'graph')).toHaveLength(2);
    } finally {
      teams.close();
      await limiter.close();
    }
  });

  it('keeps answering past CACHE_MAX_ENTRIES teams: the oldest cached team makes room', async () => {
    const ids = Array.from({ length: 11 }, (_, i) => teamIds(`many-${i}`));
    ids.forEach((t, i) => graph.addTeam({ id: t.aadGroupId, displayName: `Team ${i}`, tenantId: TENANT }));
    const { teams, limiter } = client([], { CACHE_MAX_ENTRIES: '10' });
    const teamCalls = (t: { aadGroupId: string }) => graph.calls.filter((c) => c.kind === 'team' && c.teamId === t.aadGroupId).length;
    try {
      for (const t of ids) await teams.getTeam(TENANT, t.aadGroupId);
      await teams.getTeam(TENANT, ids[10]!.aadGroupId);
      expect(teamCalls(ids[10]!)).toBe(1);
      expect((await teams.getTeam(TENANT, ids[0]!.aadGroupId)).displayName).toBe('Team 0');
      expect(teamCalls(ids[0]!)).toBe(2);
    } finally {
      teams.close();
      await limiter.close();
    }
  });

  it('gives up with a typed error when Graph keeps throttling longer than a person can wait', async () => {
    const ids = teamIds('slow');
    graph.addTeam({ id: ids.aadGroupId, displayName: 'Slow', tenantId: TENANT });
    graph.failNext('team', 1, {
      status: 429,
      headers: { 'Retry-After': '120' },
      body: { error: { code: 'TooManyRequests', message: 'Please retry again later.' } },
    });
    const sleeps: number[] = [];
    const { teams, limiter } = client(sleeps);
    try {
      const err = await teams.getTeam(TENANT, ids.aadGroupId).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GraphApiError);
      expect(err).toMatchObject({ category: 'throttled', code: 'TooManyRequests', status: 429, retryAfterMs: 120_000 });
      expect(sleeps).toEqual([]);
    } finally {
      teams.close();
      await limiter.close();
    }
  });

  it('maps a refused client secret to an auth error naming the AADSTS code, without the secret', async () => {
    const config = loadConfig({ ...issuer.env(APP_ID, TENANT, 'a-wrong-client-secret'), ...graph.env() });
    const rec = recordingLimiter(config);
    const teams = new GraphTeams({ config, limiter: rec.limiter, clock: systemClock, log: rec.log, secrets: new SecretRegistry() });
    try {
      const err = await teams.getTeam(TENANT, teamIds('x').aadGroupId).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'GraphApiError', category: 'auth', code: 'invalid_client', status: 401 });
      expect((err as Error).message).toContain('AADSTS7000215');
      expect((err as Error).message).not.toContain('a-wrong-client-secret');
    } finally {
      teams.close();
      await rec.limiter.close();
    }
  });

  it('refuses a Teams thread id without calling Graph', async () => {
    const { teams, runs, limiter } = client();
    try {
      await expect(teams.getTeam(TENANT, teamIds('x').team)).rejects.toMatchObject({ category: 'invalidRequest' });
      expect(runs).toEqual([]);
    } finally {
      teams.close();
      await limiter.close();
    }
  });
});
