// Composition root: builds every part once and wires them; the only place that knows them all.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Server as NodeServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import type { DestinationStream } from 'pino';
import { systemClock, type Clock } from './infra/clock.js';
import { configSecrets, type Config } from './config.js';
import { errorMessage } from './errors.js';
import { createLogger, SecretRegistry, type Logger } from './infra/log.js';
import { SharedLimiter } from './infra/limits/limiter.js';
import { registerLimiterMetrics } from './infra/limits/metrics.js';
import { Mirror } from './mirror/mirror.js';
import { registerAnswerMetrics } from './mirror/answers.js';
import { createMetricsServer } from './http/metrics.js';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { SqliteStateStore } from './infra/state/sqliteStore.js';
import { NS, type StateStore } from './infra/state/types.js';
import { accessPolicy } from './features/access.js';
import { billbridgeBot } from './teams/bot.js';
import { createRegistry, type FeatureDeps } from './features/index.js';
import { Dispatcher } from './features/dispatch.js';
import { ComposeSearch } from './features/search/search.js';
import { textLookup } from './features/lookup/lookup.js';
import { CardMessages } from './teams/cardMessages.js';
import type { FinanceSettings } from './features/finance.js';
import { BillbridgeAdapter } from './teams/adapter.js';
import { AuditTrail } from './infra/audit.js';
import { limiterUserCommandRate, memoryUserCommandRate } from './teams/userRate.js';
import { UpstreamCallCounter } from './infra/upstreamCalls.js';
import { OrgBindings } from './bindings/bindings.js';
import { Installations } from './bindings/installations.js';
import { createGraphTeams } from './graph/teams.js';
import { BillGateway } from './bill/gateway.js';
import { createHttpServer } from './http/server.js';
import { Approvals, approvalCardActions } from './features/approvals/service.js';
import { approvalDigestJob } from './features/approvals/digest.js';
import { UserLinks } from './features/approvals/userLinks.js';
import { createNotifications } from './notify/index.js';
import { botFrameworkSender, teamRoster } from './teams/proactive.js';
import { digestCard, notificationCard, REFRESH_VERB } from './features/notifications/cards.js';
import { refreshNotification } from './features/notifications/refresh.js';
import { SANDBOX_NOTE } from './cards/words.js';
import { webhookRoute } from './http/webhooks.js';
import { memoryLinkAttempts, redisLinkAttempts } from './features/approvals/linkAttempts.js';
import { tabSso } from './tab/sso.js';
import { notingEvents } from './tab/events.js';
import { tabApiRoute } from './http/tabApi.js';
import { networkCardActions, networkInvites, type NetworkInvites } from './features/network/invite.js';
import type { RunningSandbox } from './sandbox/index.js';

export interface BuildOptions {
  /** Log destination (tests capture lines here); stdout by default. */
  logDestination?: DestinationStream;
  clock?: Clock;
}

export type BillbridgeApp = Awaited<ReturnType<typeof buildApp>>;

/** Cluster mode (REDIS_URL): what every instance shares through Redis. Its modules load only then: one instance does not carry them. */
async function connectCluster(config: Config, clock: Clock, log: Logger) {
  const [{ RateLimiterRedis }, { RedisConnection }, { RedisStateStore }, { RedisBudgetStore }, { RedisSessionLedger }] = await Promise.all([
    import('rate-limiter-flexible'),
    import('./infra/state/redisClient.js'),
    import('./infra/state/redisStore.js'),
    import('./infra/limits/redisStore.js'),
    import('./bill/sharedSessions.js'),
  ]);
  const redis = new RedisConnection({ url: config.redisUrl, log });
  // A moment for the first connection, so start-up reads (webhook keys, outbox) find it; unreachable: /readyz says so.
  await redis.waitReady(2_000);
  /** A rate limit shared by the fleet; refuses (rather than allows) while Redis is away. */
  const rateLimiter = (keyPrefix: string, points: number, duration: number) =>
    new RateLimiterRedis({
      storeClient: redis.client,
      points,
      duration,
      keyPrefix: `${redis.keyPrefix}${keyPrefix}`,
      rejectIfRedisNotReady: true,
    });
  const { linkAttemptsPerHour, linkCooldownS, userCommandsPerMinute } = config.limits;
  return {
    redis,
    state: new RedisStateStore(redis, clock),
    budgets: new RedisBudgetStore({ redis, log }),
    sessionLedger: new RedisSessionLedger({ redis, clock, log, secretsKey: config.secretsKey }),
    linkAttempts: redisLinkAttempts(
      rateLimiter('link-attempts', linkAttemptsPerHour, 3_600),
      linkCooldownS > 0 ? rateLimiter('link-cooldown', 1, linkCooldownS) : undefined,
    ),
    userRate: limiterUserCommandRate(rateLimiter('user-commands', userCommandsPerMinute, 60)),
  };
}

/** Listens (port 0: a free port) and resolves with the base URL a client on this machine reaches it at. */
async function listening(server: NodeServer, port: number | undefined, host: string | undefined): Promise<string> {
  // Rejects with the listener's 'error' (a port already taken).
  await once(server.listen(port, host), 'listening');
  const { address, family, port: bound } = server.address() as AddressInfo;
  return `http://${address === '::' || address === '0.0.0.0' ? 'localhost' : family === 'IPv6' ? `[${address}]` : address}:${bound}`;
}

/** Stops accepting connections and resolves once the in-flight requests are answered. */
const stopped = (server: NodeServer) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });

export async function buildApp(config: Config, opts: BuildOptions = {}) {
  // undici (BILL, Graph and Bot Connector calls) parses HTTP with llhttp compiled to WebAssembly. V8's optimising tier
  // compiles llhttp's one large parser function with 30-40 MB of compiler memory at once; its baseline tier parses
  // fast enough. Peak RSS while the mirror is built: 188 -> 147 MB in the bench's 512 MB-container pass. Set before
  // the first request, when undici compiles the module.
  setFlagsFromString('--liftoff-only');
  const clock = opts.clock ?? systemClock;
  const secrets = new SecretRegistry(configSecrets(config));
  const log = createLogger({ level: config.logLevel, secrets, destination: opts.logDestination });
  const cluster = config.redisUrl ? await connectCluster(config, clock, log) : undefined;
  // One instance: STATE_DIR is opened (and locked) first, so a second instance on it stops before starting anything.
  const state: StateStore = cluster?.state ?? new SqliteStateStore(config.stateDir, clock);
  // Per-person connect attempts and commands: counted for the fleet in cluster mode, else in this process.
  const { linkAttemptsPerHour, linkCooldownS, userCommandsPerMinute } = config.limits;
  const linkAttempts = cluster?.linkAttempts ?? memoryLinkAttempts(linkAttemptsPerHour, linkCooldownS, clock);
  const userRate = cluster?.userRate ?? memoryUserCommandRate(userCommandsPerMinute, clock);
  // Without BILL credentials the embedded sandbox stands in for BILL, and every BILL base URL points at it.
  let billUser = config.bill.credentials;
  let sandbox: RunningSandbox | undefined;
  if (!billUser) {
    sandbox = await (await import('./sandbox/index.js')).startSandbox({ clock, ...config.sandbox });
    billUser = sandbox.credentials;
    const { baseUrl, spendBaseUrl, eventsBaseUrl } = sandbox;
    config = { ...config, bill: { ...config.bill, baseUrl, spendBaseUrl, eventsBaseUrl } };
    log.info({ url: baseUrl, orgId: billUser.orgId }, `BILL sandbox at ${baseUrl}: demo organisation — simulated data`);
  }
  // Every upstream call a turn makes is counted for its audit record, and none starts after the turn's deadline.
  const upstreamCalls = new UpstreamCallCounter(clock);
  const limiter = new SharedLimiter({ config, clock, log, store: cluster?.budgets, turns: upstreamCalls });
  // GET /metrics: this app's own registry (never prom-client's global one); process metrics outside tests (many apps per process).
  const metrics = new Registry();
  if (config.nodeEnv !== 'test') collectDefaultMetrics({ register: metrics });
  // Organisation, tenant and team ids appear in metrics only as one-way names (see budgetKeyLabel).
  registerLimiterMetrics(metrics, limiter, config.metrics.token || randomBytes(32));
  const audit = new AuditTrail({ store: state, clock, log, scrub: (text) => secrets.scrub(text) });
  const access = accessPolicy(config);
  // Single-org: every team uses BILL_ORG_ID (the sandbox's demo org without credentials); multi-org: links only.
  const orgBindings = new OrgBindings({ config, access, state, clock, defaultOrgId: billUser.orgId });
  const installs = new Installations(state, orgBindings, clock);
  // Undefined in local mode (no app id): status says Graph is skipped.
  const graph = createGraphTeams({ config, limiter, clock, log, secrets });
  const bill = new BillGateway({
    backend: sandbox ? 'sandbox' : 'bill',
    bill: config.bill,
    user: { devKey: billUser.devKey, username: billUser.username, password: billUser.password },
    // BILL_SPEND_API_TOKEN is BILL_ORG_ID's (config refuses a BILL_SPEND_API_TOKENS entry for it that differs).
    spendApiTokens: sandbox
      ? { [billUser.orgId]: sandbox.credentials.spendApiToken }
      : { ...(config.bill.spendApiToken ? { [billUser.orgId]: config.bill.spendApiToken } : {}), ...config.bill.spendApiTokens },
    sessionLedger: cluster?.sessionLedger,
    turns: upstreamCalls,
    limiter,
    clock,
    log,
    secrets,
  });
  const mirror = new Mirror({
    bill,
    state,
    clock,
    log,
    maxAnswers: config.cache.maxEntries,
    namesMaxAgeMs: config.cache.namesTtlS * 1000,
    redis: cluster?.redis,
  });
  registerAnswerMetrics(metrics, mirror.answers);

  // How cards are shown: the deployment's formats, and "demo organisation — simulated data" when the sandbox stands in for BILL.
  const { locale, timeZone, version } = config;
  const fmt = { locale, timeZone };
  const note = sandbox ? SANDBOX_NOTE : undefined;
  const shown = { ...fmt, note };

  // Approvals and network invitations act as the person, with their own BILL token sealed under SECRETS_KEY. Without
  // the key there is no safe place for those tokens, so both are off and their commands say so.
  const { secretsKey } = config;
  let approvals: Approvals | undefined;
  let invites: NetworkInvites | undefined;
  if (secretsKey) {
    const links = new UserLinks({ store: state, secretsKey, log, clock });
    const asPerson = { links, secretsKey, bill, orgs: orgBindings, audit, clock, fmt, note };
    approvals = new Approvals({ ...asPerson, store: state, attempts: linkAttempts, vendors: mirror, waitMs: config.limits.commandWaitMs });
    invites = networkInvites({ ...asPerson, mirror, state, keepStatusS: config.cache.objectTtlS });
  } else {
    log.info("approvals are off: SECRETS_KEY is not set, so approvers' BILL tokens cannot be stored encrypted");
    if (config.nodeEnv === 'production')
      log.warn(
        'SECRETS_KEY is not set: with NODE_ENV=production webhook subscriptions cannot be set up (their keys would be stored unencrypted) and approvals are off',
      );
  }

  // Every Bot Connector call of a turn (and of proactive sends) goes through the connector.thread budget.
  const adapter = new BillbridgeAdapter(config, log, limiter, upstreamCalls);
  // BILL webhooks -> durable outbox -> proactive cards (and digests) sent with stored conversation references; the
  // buttons each card carries are recorded in the state store, where the bot's clicks look them up.
  const cardMessages = new CardMessages(state, clock);
  const sender = botFrameworkSender(adapter, config.bot.appId, log, cardMessages);
  const { webhookSecurityKey, webhookSecurityKeys } = config.bill;
  const notify = createNotifications({
    state,
    clock,
    log,
    secrets,
    bill,
    mirror,
    resolveOrg: (scope) => orgBindings.resolve(scope),
    servesOrg: (orgId) => (config.bill.allowedOrgIds.length > 0 ? config.bill.allowedOrgIds.includes(orgId) : orgId === billUser.orgId),
    // BILL_WEBHOOK_SECURITY_KEY belongs to BILL_ORG_ID, or to the embedded sandbox's demo org.
    envKeys: webhookSecurityKey ? { ...webhookSecurityKeys, [billUser.orgId]: webhookSecurityKey } : webhookSecurityKeys,
    audit,
    sender,
    presenter: { event: (ev) => notificationCard(ev, shown), digest: (content) => digestCard(content, shown) },
    settings: config,
  });

  // Each feature gets the parts it declares (features/index.ts).
  const finance: FinanceSettings = {
    ...shown,
    waitMs: config.limits.commandWaitMs,
    cache: config.cache,
    pushFed: (orgId, entity) => notify.push.fed(orgId, entity),
  };
  let unopenableSecrets = 0;
  const features: FeatureDeps = {
    help: { note, version },
    link: { orgBindings, access, audit },
    status: {
      orgBindings,
      installs,
      graph,
      bot: config.bot,
      access,
      limiter,
      mirror,
      bill,
      audit,
      notify,
      clock,
      settings: { ...shown, version, cache: config.cache },
      unopenableSecrets: () => unopenableSecrets,
    },
    payables: { mirror, bill, settings: finance },
    receivables: { mirror, settings: finance },
    parties: { mirror, bill, settings: finance, invites },
    network: { mirror, bill, settings: finance, invites },
    payments: { mirror, bill, settings: finance },
    spend: { mirror, bill, settings: finance },
    notifications: {
      notify,
      installs,
      access,
      audit,
      settings: {
        ...shown,
        appId: config.bot.appId,
        publicHostname: config.publicHostname,
        envWebhookKey: config.bill.webhookSecurityKey !== '',
      },
    },
    approvals: { approvals, orgBindings, audit },
  };
  const registry = createRegistry(features);
  const lookup = textLookup({ mirror, settings: finance });
  const dispatcher = new Dispatcher({ registry, orgBindings, clock, locale, timeZone, log, lookup });
  const refresh = refreshNotification({ notify, mirror, orgs: orgBindings, settings: { ...shown, objectTtlS: config.cache.objectTtlS } });
  const cardActions = { [REFRESH_VERB]: refresh, ...approvalCardActions(approvals), ...networkCardActions(invites) };
  // Search from the compose box: the org's mirror, and the registry's bill/invoice/vendor/customer cards for what it finds.
  const search = new ComposeSearch({ mirror, commands: registry, orgs: orgBindings, settings: finance, clock });
  // A person's request, a Teams turn or the dashboard tab's, passes the same access policy and per-person rate, and is audited alike.
  const fromPeople = { access, orgBindings, rate: userRate, state, clock, log, audit, upstreamCalls };
  const bot = billbridgeBot({
    ...fromPeople,
    dispatcher,
    install: { installs, orgBindings, registry, graph, sandbox: sandbox !== undefined, version, appId: config.bot.appId },
    cardMessages,
    cardActions,
    search,
    lookup,
  });
  const approvalDigest = approvalDigestJob({ approvals, state, timeZone, sender, clock, log });
  // The dashboard tab: Teams sign-in checked against Microsoft's keys, a team's figures only for its members.
  const tabApi = tabApiRoute({
    ...fromPeople,
    sso: tabSso({ appId: config.bot.appId, publicHostname: config.publicHostname, keysUrl: config.bot.overrides.TabSsoKeysUrl }),
    installs,
    isMember: teamRoster(adapter, config.bot.appId, clock),
    payables: features.payables,
    receivables: features.receivables,
    approvals,
  });
  const serveMetrics = async () => ({ contentType: metrics.contentType, body: await metrics.metrics() });
  const server = createHttpServer({
    log,
    clock,
    messages: adapter.messagesFor(bot),
    // Redis unreachable at start: not ready. Lost later: still ready (a drained fleet helps nobody); commands answer
    // "temporarily unavailable" and nothing reaches BILL until it is back.
    readiness: () => ({ state: state.isReady(), bill: bill.ready(), ...(cluster ? { redis: cluster.redis.hasBeenReady() } : {}) }),
    requireBearer: config.bot.appId !== '',
    metrics: serveMetrics,
    metricsToken: config.metrics.token,
    routes: [webhookRoute(notingEvents(notify.receiver, state, clock, log), log, clock), tabApi],
  });

  const metricsServer = config.metrics.port === undefined ? undefined : createMetricsServer(serveMetrics, config.metrics.token, log);

  let metricsUrl: string | undefined;

  let closing: Promise<void> | undefined;
  return {
    config,
    log,
    secrets,
    state,
    limiter,
    clock,
    registry,
    features,
    orgBindings,
    mirror,
    approvals,
    /** Commands run by tests without a Teams turn. */
    dispatcher,
    /** The Bot Framework adapter (tests read how many connector clients it keeps). */
    adapter,
    audit,
    bill,
    /** The embedded BILL sandbox when no BILL credentials are configured (tests read its stats and change its data). */
    sandbox,
    notify,
    /** Approvers' daily digests; tests call tick() with a fake clock. */
    approvalDigest,
    /** The METRICS_PORT listener's base URL once listening; undefined without METRICS_PORT. */
    get metricsUrl() {
      return metricsUrl;
    },
    /** Starts listening on config.http and resolves with the base URL. */
    async listen() {
      const url = await listening(server.server, config.http.port, config.http.host);
      if (metricsServer) {
        metricsUrl = await listening(metricsServer, config.metrics.port, config.metrics.host);
        log.info({ url: metricsUrl, token: config.metrics.token !== '' }, 'metrics listening');
      }
      log.info({ url, backend: bill.backend }, 'billbridge listening');
      // Webhook keys join the log scrubber; a changed SECRETS_KEY is said now, not found out when BILL disables a subscription.
      unopenableSecrets = await Promise.all([
        notify.keys.registerAll(),
        approvals ? approvals.links.unopenable() : state.entries(NS.userLinks).then((e) => e.length),
      ]).then(
        ([a, b]) => a + b,
        (err: unknown) => {
          log.warn({ err: errorMessage(err) }, 'stored secrets could not be checked against SECRETS_KEY');
          return 0;
        },
      );
      if (unopenableSecrets > 0)
        log.warn(
          { unopenable: unopenableSecrets },
          `${unopenableSecrets} stored secrets cannot be opened with SECRETS_KEY (was it changed?): webhook keys among them stop verifying BILL's events, approvers among them must connect again`,
        );
      // Sends what a previous run accepted but did not deliver, then keeps the outbox and digests moving.
      notify.start();
      if (approvals) approvalDigest.start();
      return url;
    },
    /** Stops accepting requests, lets in-flight turns finish, closes every part. */
    close() {
      closing ??= (async () => {
        await stopped(server.server);
        if (metricsServer?.listening) await stopped(metricsServer);
        await notify.stop();
        await approvalDigest.stop();
        graph?.close();
        // Log out of BILL (through the limiter) before the sandbox and the limiter go away.
        await bill.close();
        await sandbox?.stop();
        await limiter.close();
        await mirror.flush();
        await state.close();
        await cluster?.redis.close();
        log.flush();
      })();
      return closing;
    },
  };
}
