// The Bot Framework adapter: CloudAdapter with botbuilder's own JWT checks and quiet 401s (a failed turn is routes.ts's).
import {
  CallerIdConstants,
  CloudAdapter,
  ConfigurationBotFrameworkAuthentication,
  type Activity,
  type ConfigurationBotFrameworkAuthenticationOptions,
  type Request as BotRequest,
  type Response as BotResponse,
} from 'botbuilder';
import {
  AuthenticationConstants,
  AuthenticationError,
  GovernmentConstants,
  type AuthenticateRequestResult,
  type ClaimsIdentity,
  type ConnectorClient,
  type ConnectorFactory,
  type UserTokenClient,
} from 'botframework-connector';
import { dropOldest } from '../infra/bounded.js';
import type { Config } from '../config.js';
import type { Logger } from '../infra/log.js';
import { errorMessage, errorName } from '../errors.js';
import type { Limiter } from '../infra/limits/types.js';
import type { UpstreamCallCounter } from '../infra/upstreamCalls.js';
import { isObject, type TurnLogic } from './routes.js';
import { connectorHttpClient } from './connectorLimits.js';

export function botAuthOptions(config: Config): ConfigurationBotFrameworkAuthenticationOptions {
  const overrides = config.bot.overrides;
  // The cloud's own values for the settings that switch ConfigurationBotFrameworkAuthentication to "parameterized" mode.
  // Once one is set, botbuilder takes every one of them as given and leaves the unset ones undefined (no issuer check
  // value, no login URL, no caller id): overrides (tests, sovereign clouds) go on top of these, so only they change.
  const gov = overrides.ChannelService === GovernmentConstants.ChannelService;
  const c = gov ? GovernmentConstants : AuthenticationConstants;
  const defaults: Record<string, string> = {
    ToChannelFromBotLoginUrl: c.ToChannelFromBotLoginUrl,
    ToChannelFromBotOAuthScope: c.ToChannelFromBotOAuthScope,
    ToBotFromChannelTokenIssuer: c.ToBotFromChannelTokenIssuer,
    OAuthUrl: c.OAuthUrl,
    ToBotFromChannelOpenIdMetadataUrl: c.ToBotFromChannelOpenIdMetadataUrl,
    ToBotFromEmulatorOpenIdMetadataUrl: c.ToBotFromEmulatorOpenIdMetadataUrl,
    CallerId: gov ? CallerIdConstants.USGovChannel : CallerIdConstants.PublicAzureChannel,
  };
  const parameterized = Object.keys(defaults).some((k) => overrides[k]);
  // Local mode (no app id): botbuilder treats an empty app id as "authentication disabled" only for MultiTenant.
  const local = config.bot.appId === '';
  return {
    ...(parameterized ? { ...defaults, ...overrides } : overrides),
    MicrosoftAppId: config.bot.appId,
    MicrosoftAppPassword: local ? '' : config.bot.appPassword,
    MicrosoftAppType: local ? 'MultiTenant' : config.bot.appType,
    MicrosoftAppTenantId: local ? undefined : config.bot.tenantId,
  };
}

// Bot Connector and user token clients kept between turns: ~10% of the CPU per command (bench overhead, help) is
// what CloudAdapter spends building both anew for every activity, so they are kept per app id, service URL and audience.
/** Service URLs a deployment talks to are a handful (one per Teams region); this bounds a flood of odd ones. */
const MAX_KEPT_CLIENTS = 64;

/** The app id botbuilder's own factories use for a caller (the token's audience, else its appid claim). */
function appIdOf(identity: ClaimsIdentity | undefined): string {
  return (
    identity?.getClaimValue(AuthenticationConstants.AudienceClaim) ?? identity?.getClaimValue(AuthenticationConstants.AppIdClaim) ?? ''
  );
}

type KeptClients<T> = Map<string, Promise<T>>;

/** The client kept under `key`, else a new one, kept: least recently used first out; a failed creation is not kept. */
function keptClient<T>(kept: KeptClients<T>, key: string, make: () => Promise<T>): Promise<T> {
  const client = kept.get(key) ?? make();
  kept.delete(key);
  kept.set(key, client);
  client.catch(() => {
    if (kept.get(key) === client) kept.delete(key);
  });
  if (kept.size > MAX_KEPT_CLIENTS) dropOldest(kept);
  return client;
}

/** botbuilder's authentication as is, except that inbound turns' connector clients and user token clients are kept. */
export class KeepingAuthentication extends ConfigurationBotFrameworkAuthentication {
  private readonly connectors: KeptClients<ConnectorClient> = new Map();
  private readonly tokens: KeptClients<UserTokenClient> = new Map();

  get connectorCount(): number {
    return this.connectors.size;
  }

  override async authenticateRequest(activity: Activity, authHeader: string): Promise<AuthenticateRequestResult> {
    const auth = await super.authenticateRequest(activity, authHeader);
    const inner = auth.connectorFactory;
    if (!inner) return auth;
    const appId = appIdOf(auth.claimsIdentity);
    // botbuilder's factory's clients, handed out once per app id, service URL and audience.
    // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- botbuilder only calls create(): no class per activity
    const connectorFactory: ConnectorFactory = {
      create: (serviceUrl, audience) =>
        keptClient(this.connectors, `${appId}\n${serviceUrl}\n${audience ?? ''}`, () => inner.create(serviceUrl, audience)),
    };
    return { ...auth, connectorFactory };
  }

  override createUserTokenClient(claimsIdentity: ClaimsIdentity): Promise<UserTokenClient> {
    return keptClient(this.tokens, appIdOf(claimsIdentity), () => super.createUserTokenClient(claimsIdentity));
  }
}

// Starts authenticated turns at most `perTick` per turn of the event loop, in arrival order. Started all at once, a
// burst (a busy channel, Teams redelivering after an outage) keeps the one thread busy for seconds while BILL's answers
// sit unread and its three slots per organisation stay empty (bench, 1,000 commands at once: slots 71–74% used at 16
// per loop turn, 94–95% at 2). At ordinary rates nothing waits.
export function turnPacer(perTick = 2) {
  const waiting: Array<() => void> = [];
  let startedThisTick = 0;
  let scheduled = false;
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      const batch = waiting.splice(0, perTick);
      startedThisTick = batch.length;
      for (const start of batch) start();
      if (waiting.length > 0 || startedThisTick > 0) schedule();
    });
  };
  return {
    next(): Promise<void> {
      if (waiting.length === 0 && startedThisTick < perTick) {
        startedThisTick++;
        schedule();
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        waiting.push(resolve);
        schedule();
      });
    },
  };
}

/** Teams ids are well under these; the bot keys state on ids, so an oversized one would be kept as long as its records. */
const MAX_ID_LENGTH = 1024;
const MAX_NAME_LENGTH = 256;

/** Ids travel in URLs and headers (x-ms-conversation-id): no control characters, no lone surrogates. */
function isCleanId(v: unknown): v is string {
  return (
    typeof v === 'string' &&
    v.length <= MAX_ID_LENGTH &&
    // eslint-disable-next-line no-control-regex -- finding control characters is what this check is for
    !/[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(v)
  );
}

const optional = (v: unknown, check: (x: unknown) => boolean): boolean => v === undefined || v === null || check(v);
const isString = (x: unknown): boolean => typeof x === 'string';
const isShortString = (x: unknown): boolean => typeof x === 'string' && x.length <= MAX_NAME_LENGTH;

/** What is wrong with the fields botbuilder relies on without checking (a missing conversation throws deep inside); undefined when sound. */
export function activityEnvelopeProblem(body: Record<string, unknown>): string | undefined {
  for (const field of ['type', 'channelId'] as const) {
    if (!isShortString(body[field]) || body[field] === '') return `${field} must be a short non-empty string`;
  }
  if (typeof body.serviceUrl !== 'string' || body.serviceUrl.length > 2048) return 'serviceUrl must be a URL string';
  if (!URL.canParse(body.serviceUrl)) return 'serviceUrl must be an absolute URL';
  const { protocol } = new URL(body.serviceUrl);
  if (protocol !== 'https:' && protocol !== 'http:') return 'serviceUrl must be http or https';
  const conversation = body.conversation;
  // The connector sends the conversation id as the x-ms-conversation-id header: printable ASCII only (as Teams' are).
  if (!isObject(conversation) || !isCleanId(conversation.id) || !/^[\x20-\x7e]+$/.test(conversation.id))
    return 'conversation.id must be a non-empty id';
  if (!optional(conversation.isGroup, (x) => typeof x === 'boolean')) return 'conversation.isGroup must be a boolean';
  for (const field of ['conversationType', 'tenantId', 'name'] as const) {
    if (!optional(conversation[field], isString)) return `conversation.${field} must be a string`;
  }
  for (const party of ['from', 'recipient'] as const) {
    const v = body[party];
    if (v === undefined) continue;
    if (!isObject(v) || (v.id !== undefined && !isCleanId(v.id))) return `${party} must be an object with a string id`;
    for (const field of ['name', 'aadObjectId'] as const) {
      if (!optional(v[field], isShortString)) return `${party}.${field} must be a short string`;
    }
  }
  for (const field of ['id', 'replyToId', 'timestamp', 'localTimestamp', 'expiration', 'name', 'locale'] as const) {
    if (!optional(body[field], isCleanId)) return `${field} must be a string of reasonable length`;
  }
  if (!optional(body.text, isString)) return 'text must be a string';
  if (body.type === 'invoke' && (typeof body.name !== 'string' || body.name === '')) return 'an invoke activity needs a name';
  // botbuilder reads (and prints) value.action.type of a card action without checking it is there.
  const action = isObject(body.value) ? body.value.action : undefined;
  if (body.type === 'invoke' && body.name === 'adaptiveCard/action' && !(isObject(action) && typeof action.type === 'string'))
    return 'adaptiveCard/action needs value.action.type';
  for (const list of ['entities', 'attachments', 'membersAdded', 'membersRemoved'] as const) {
    if (!optional(body[list], (x) => Array.isArray(x) && x.every(isObject))) return `${list} must be a list of objects`;
  }
  return undefined;
}

/**
 * An authentication error as an answer: jsonwebtoken's errors come through as plain errors (CloudAdapter: 500). Every
 * refusal is a 401; only failing to load the OpenID metadata or keys (AuthenticationError 500, network) is ours: 503.
 */
export function classifyAuthError(err: unknown): { status: 401 | 503; reason: string } {
  const reason = errorMessage(err).replace(/\s+/g, ' ').slice(0, 200);
  if (err instanceof AuthenticationError && err.statusCode >= 500) return { status: 503, reason };
  if (err instanceof Error && (err.name === 'FetchError' || err.name === 'AbortError')) return { status: 503, reason };
  return { status: 401, reason };
}

/** CloudAdapter that authenticates first and answers a failure itself (401, fixed body: botbuilder's echoes token claims). */
export class BillbridgeAdapter extends CloudAdapter {
  /** Starts authenticated turns a few per loop turn (tests read and hold it). */
  readonly pacer = turnPacer();
  /** Requests whose Bot Framework token verified (the server's byte budget for unauthenticated senders reads it). */
  private readonly authenticated = new WeakSet<object>();
  /** Connector clients kept for inbound turns (tests count them). */
  readonly clients: KeepingAuthentication;

  constructor(
    config: Config,
    private readonly log: Logger,
    limiter: Limiter,
    /** Each authenticated turn runs in its scope, which counts the turn's upstream calls. */
    private readonly upstreamCalls: Pick<UpstreamCallCounter, 'run'>,
  ) {
    if (config.bot.appId === '') {
      log.warn(
        'LOCAL MODE: MicrosoftAppId is empty, so inbound Bot Framework authentication is OFF and anyone who can reach /api/messages can talk to the bot. Never expose this instance.',
      );
    }
    const clients = new KeepingAuthentication(botAuthOptions(config), undefined, undefined, undefined, {
      httpClient: connectorHttpClient({ limiter, log }),
    });
    super(clients);
    this.clients = clients;
  }

  /** What the HTTP server's /api/messages route calls: one activity to `bot`, and whether its token verified. */
  messagesFor(bot: TurnLogic) {
    return {
      process: async (req: BotRequest, res: BotResponse) => {
        const { status, body } = await this.receive(req, bot);
        res.status(status);
        if (body !== undefined) res.send(body);
        res.end();
      },
      authenticated: (req: object) => this.authenticated.has(req),
    };
  }

  /** One POST to /api/messages: its envelope, its token, then its turn; the HTTP answer it gets. */
  private async receive(req: BotRequest, bot: TurnLogic): Promise<{ status: number; body?: unknown }> {
    const body = req.body as unknown;
    if (!isObject(body)) return { status: 400, body: { error: 'Body must be a Bot Framework activity' } };
    const problem = activityEnvelopeProblem(body);
    if (problem) {
      this.log.info({ problem }, 'request refused: not a Bot Framework activity');
      return { status: 400, body: { error: `Invalid activity: ${problem}` } };
    }
    const activity = body as unknown as Activity;
    const authHeader = typeof req.headers.authorization === 'string' ? req.headers.authorization : '';

    let auth: AuthenticateRequestResult;
    try {
      auth = await this.botFrameworkAuthentication.authenticateRequest(activity, authHeader);
    } catch (err) {
      const failure = classifyAuthError(err);
      if (failure.status === 503) {
        this.log.error({ reason: failure.reason }, 'cannot check Bot Framework tokens: OpenID metadata or signing keys unavailable');
        return { status: 503, body: { error: 'Service unavailable' } };
      }
      this.log.info(
        { reason: failure.reason, hasAuthorization: authHeader !== '', activityType: activity.type.slice(0, 40) },
        'request refused: Bot Framework authentication failed',
      );
      return { status: 401, body: { error: 'Unauthorized' } };
    }

    this.authenticated.add(req);
    // Only now does the request wait for a turn: a forged token never takes a place in that queue ahead of Teams' own.
    await this.pacer.next();
    try {
      const invokeResponse = await this.upstreamCalls.run(() => this.processActivity(auth, activity, bot));
      return { status: invokeResponse?.status ?? 200, body: invokeResponse?.body as unknown };
    } catch (err) {
      // The route table answers failures inside the turn; this is what escapes it.
      this.log.error(
        { err: errorMessage(err), errName: errorName(err), activityType: activity.type.slice(0, 40) },
        'turn failed outside the bot',
      );
      return { status: 500, body: { error: 'Internal error' } };
    }
  }
}
