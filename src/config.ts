// Environment (+ .env) -> one typed, validated Config; every error names the variable.
import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { parseSecretsKey } from './infra/state/sealing.js';
import { NamedError } from './errors.js';

const APP_TYPES = ['SingleTenant', 'MultiTenant', 'UserAssignedMSI'] as const;

export class ConfigError extends NamedError {
  constructor(readonly problems: Array<{ variable: string; message: string }>) {
    super('Invalid configuration:\n' + problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n'));
  }
}

/** botbuilder configuration keys we pass through untouched (ConfigurationBotFrameworkAuthentication). */
export const BOT_AUTH_OVERRIDE_KEYS = [
  'ToBotFromChannelOpenIdMetadataUrl',
  'ToBotFromChannelTokenIssuer',
  'ToBotFromEmulatorOpenIdMetadataUrl',
  'ToChannelFromBotLoginUrl',
  'ToChannelFromBotOAuthScope',
  'OAuthUrl',
  'ValidateAuthority',
  'CallerId',
  'ChannelService',
  // Not botbuilder's: the keys the dashboard tab checks Teams sign-in tokens with (src/tab/sso.ts), overridable alike.
  'TabSsoKeysUrl',
] as const;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

type Env = Record<string, string | undefined>;

const DAY_MS = 86_400_000;
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether Intl takes a time zone or locale (it throws, or finds no support, for one it does not know). */
function intlAccepts(check: () => unknown): boolean {
  try {
    return check() !== false;
  } catch {
    return false;
  }
}

/** Reads `.env` (when present) under the real environment: a variable set in the environment wins. */
export function readEnv(envFile = '.env'): Env {
  if (!existsSync(envFile)) return { ...process.env };
  return { ...parseEnv(readFileSync(envFile, 'utf8')), ...process.env };
}

/**
 * Reads every variable into a Config, noting the names read and every problem. A value that cannot be read stands as
 * its default, so the checks between variables still run and all problems are listed at once.
 */
function readConfig(env: Env) {
  const variables: string[] = [];
  const problems: ConfigError['problems'] = [];
  const bad = (variable: string, message: string) => void problems.push({ variable, message });
  /** A value that could not be read requires nothing of the others: its default would name the wrong requirement. */
  const unread = (variable: string) => problems.some((p) => p.variable === variable);
  /** Notes a problem with a variable's value, which then reads as `fallback`. */
  const refuse = <T>(variable: string, message: string, fallback: T): T => {
    bad(variable, message);
    return fallback;
  };
  const raw = (name: string) => {
    variables.push(name);
    return env[name];
  };
  /** Text; unset or blank (`NAME=` in an env file) is the default. */
  const str = (name: string, fallback = '') => raw(name)?.trim() || fallback;
  const int = <F extends number | undefined>(name: string, fallback: F, min: number, max: number): number | F => {
    const s = str(name);
    if (s === '') return fallback;
    if (!/^-?\d+$/.test(s)) return refuse(name, `must be a whole number, got "${s}"`, fallback);
    const n = Number(s);
    return n < min || n > max ? refuse(name, `must be between ${min} and ${max}, got ${n}`, fallback) : n;
  };
  const url = (name: string, fallback = '') => {
    const s = str(name, fallback);
    if (s === '') return '';
    // Echoed to help, without what stands before an "@": credentials in a URL that does not parse are still credentials.
    if (!URL.canParse(s))
      return refuse(name, `must be an absolute http(s) URL, got "${s.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/?#]*@/i, '$1…@')}"`, fallback);
    const parsed = new URL(s);
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
      return refuse(name, `must use http or https, got "${parsed.protocol}"`, fallback);
    if (parsed.search || parsed.hash || parsed.username || parsed.password)
      return refuse(name, 'must not carry a query, fragment or credentials', fallback);
    return s.replace(/\/+$/, '');
  };
  const list = (name: string) =>
    str(name)
      .split(/[,\s]+/)
      .filter(Boolean);
  /** `<count>/<window>` pairs such as 7/1s,8/2s: a limit for each window. */
  const windows = (name: string, fallback: string) => {
    const parts = str(name, fallback)
      .split(/\s*,\s*/)
      .filter(Boolean);
    if (parts.length === 0) bad(name, 'must list at least one window');
    const out: Array<{ limit: number; windowMs: number }> = [];
    for (const part of parts) {
      const m = /^(\d+)\/(\d+)(ms|s|m|h)$/.exec(part);
      if (!m) {
        bad(name, `"${part}" is not <count>/<window> like 7/1s or 1800/3600s`);
        continue;
      }
      const limit = Number(m[1]);
      const windowMs = Number(m[2]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[3] as 'ms' | 's' | 'm' | 'h'];
      // A count or a window of 0 would let every send through (the limiter sees no limit), the opposite of what was meant.
      if (limit < 1 || limit > 1_000_000 || windowMs < 1 || windowMs > DAY_MS)
        bad(name, `"${part}" must count 1 to 1000000 sends in a window of 1 ms to 24 h`);
      else out.push({ limit, windowMs });
    }
    return out;
  };
  // Tenant and admin ids are compared with what Teams sends (GUIDs); a typo would silently lock out or demote.
  const guids = (name: string) => {
    const ids = list(name);
    const wrong = ids.filter((id) => !GUID.test(id)).slice(0, 3);
    if (wrong.length > 0) bad(name, `must list Entra ids (GUIDs); not a GUID: ${wrong.map((b) => `"${b.slice(0, 40)}"`).join(', ')}`);
    return ids;
  };

  const nodeEnv = str('NODE_ENV', 'development');
  const http = { port: int('PORT', 3978, 0, 65535), host: str('HOST') || undefined };
  const logLevelText = (raw('LOG_LEVEL') ?? 'info').trim().toLowerCase();
  const logLevel =
    LOG_LEVELS.find((level) => level === logLevelText) ?? refuse('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`, 'info');

  const appTypeText = str('MicrosoftAppType', 'SingleTenant');
  const appType =
    APP_TYPES.find((t) => t.toLowerCase() === appTypeText.toLowerCase()) ??
    refuse('MicrosoftAppType', `must be one of ${APP_TYPES.join(', ')}, got "${appTypeText}"`, 'SingleTenant');
  /** botbuilder's own auth settings (OpenID metadata, issuer, token endpoint); for tests and sovereign clouds, refused in production. */
  const overrides: Record<string, string> = {};
  for (const key of BOT_AUTH_OVERRIDE_KEYS) if (env[key]?.trim()) overrides[key] = env[key].trim();
  const bot = {
    appId: str('MicrosoftAppId'),
    appPassword: str('MicrosoftAppPassword'),
    appType,
    tenantId: str('MicrosoftAppTenantId'),
    overrides,
  };
  const access = { allowedTenantIds: guids('ALLOWED_TENANT_IDS'), adminAadObjectIds: guids('ADMIN_AAD_OBJECT_IDS') };
  if (bot.appId !== '') {
    if (!/^[0-9a-fA-F-]{36}$/.test(bot.appId)) bad('MicrosoftAppId', "must be the bot registration's application (client) id, a GUID");
    const typed = !unread('MicrosoftAppType');
    if (typed && appType !== 'MultiTenant' && bot.tenantId === '')
      bad('MicrosoftAppTenantId', `is required when MicrosoftAppType is ${appType}`);
    if (typed && appType === 'UserAssignedMSI' && bot.appPassword !== '')
      bad('MicrosoftAppPassword', 'must be empty when MicrosoftAppType is UserAssignedMSI');
    if (typed && appType !== 'UserAssignedMSI' && bot.appPassword === '')
      bad('MicrosoftAppPassword', `is required when MicrosoftAppId is set and MicrosoftAppType is ${appType}`);
    if (access.allowedTenantIds.length === 0)
      bad('ALLOWED_TENANT_IDS', 'is required when MicrosoftAppId is set: list the Entra tenant ids allowed to use the bot');
  } else if (nodeEnv === 'production') {
    bad('MicrosoftAppId', 'is required when NODE_ENV=production (an empty app id turns inbound authentication off)');
  }
  const [override] = Object.keys(overrides);
  if (nodeEnv === 'production' && override !== undefined)
    bad(override, 'Bot Framework auth overrides are for tests only and are refused when NODE_ENV=production');

  const timeZone = str('BOT_TIMEZONE', 'UTC');
  if (!intlAccepts(() => new Intl.DateTimeFormat('en-US', { timeZone })))
    bad('BOT_TIMEZONE', `"${timeZone}" is not an IANA time zone such as UTC or America/New_York`);
  const locale = str('BOT_LOCALE', 'en-US');
  if (!intlAccepts(() => Intl.NumberFormat.supportedLocalesOf([locale]).length > 0))
    bad('BOT_LOCALE', `"${locale}" is not a supported locale such as en-US`);
  const publicHostname = str('PUBLIC_HOSTNAME');
  if (publicHostname !== '' && !/^[a-z0-9.-]+(:\d+)?$/i.test(publicHostname))
    bad('PUBLIC_HOSTNAME', 'must be a bare host name such as bot.example.com (no scheme or path)');
  /** A page of the Teams app package (npm run package); empty defaults to https://PUBLIC_HOSTNAME/. */
  const teamsPage = (name: string) => {
    const page = url(name);
    if (page !== '' && !page.startsWith('https://')) bad(name, 'must be an https URL (Teams shows it on the app details page)');
    return page;
  };
  const teamsApp = {
    developerName: str('TEAMS_APP_DEVELOPER_NAME', 'billbridge'),
    websiteUrl: teamsPage('TEAMS_APP_WEBSITE_URL'),
    privacyUrl: teamsPage('TEAMS_APP_PRIVACY_URL'),
    termsOfUseUrl: teamsPage('TEAMS_APP_TERMS_URL'),
  };
  if (teamsApp.developerName.length > 32) bad('TEAMS_APP_DEVELOPER_NAME', 'must be 1 to 32 characters (Teams manifest developer.name)');

  // The password is kept as typed: spaces may be part of it.
  const user = {
    BILL_DEV_KEY: str('BILL_DEV_KEY'),
    BILL_USERNAME: str('BILL_USERNAME'),
    BILL_PASSWORD: raw('BILL_PASSWORD') ?? '',
    BILL_ORG_ID: str('BILL_ORG_ID'),
  };
  const orgId = user.BILL_ORG_ID;
  const unset = (Object.keys(user) as Array<keyof typeof user>).filter((name) => user[name] === '');
  if (unset.length < 4)
    for (const name of unset)
      bad(name, 'is missing: set all four of BILL_DEV_KEY, BILL_USERNAME, BILL_PASSWORD, BILL_ORG_ID, or none to use the embedded sandbox');
  const baseUrl = url('BILL_BASE_URL', 'https://gateway.stage.bill.com/connect');
  if (baseUrl.endsWith('/v3'))
    bad('BILL_BASE_URL', 'must not end with /v3: paths are appended as /v3/... (e.g. https://gateway.stage.bill.com/connect)');
  const allowedOrgIds = list('BILL_ALLOWED_ORG_IDS');
  if (orgId !== '' && allowedOrgIds.length > 0 && !allowedOrgIds.includes(orgId))
    bad('BILL_ALLOWED_ORG_IDS', 'must include BILL_ORG_ID when both are set');
  // A Spend & Expense token and a webhook key each belong to one organisation: the single variables are BILL_ORG_ID's.
  const servedOrgs = allowedOrgIds.length > 0 ? allowedOrgIds : orgId !== '' ? [orgId] : [];
  /** `orgId:secret,orgId:secret` of organisations served here; a problem names an entry by position, never its value. */
  const orgSecrets = (name: 'BILL_SPEND_API_TOKENS' | 'BILL_WEBHOOK_SECURITY_KEYS', single: string, what: string) => {
    const out: Record<string, string> = {};
    const value = str(name);
    if (value === '') return out;
    if (servedOrgs.length === 0) {
      bad(name, 'needs BILL_ORG_ID or BILL_ALLOWED_ORG_IDS: each entry names the organisation its secret belongs to');
      return out;
    }
    value.split(',').forEach((part, i) => {
      const entry = part.trim();
      const at = entry.indexOf(':');
      const entryOrg = at > 0 ? entry.slice(0, at).trim() : '';
      const secret = at > 0 ? entry.slice(at + 1).trim() : '';
      if (entryOrg === '' || secret === '') bad(name, `entry ${i + 1} is not <BILL organisation id>:<secret>`);
      // Not echoed: an entry written the wrong way round (secret:organisation) has the secret there.
      else if (!servedOrgs.includes(entryOrg))
        bad(
          name,
          `entry ${i + 1} names an organisation that is not in BILL_ALLOWED_ORG_IDS (or BILL_ORG_ID); write <BILL organisation id>:<secret>`,
        );
      else if (out[entryOrg] !== undefined) bad(name, `entry ${i + 1} names organisation "${entryOrg}" a second time`);
      else out[entryOrg] = secret;
    });
    if (single !== '' && out[orgId] !== undefined && out[orgId] !== single)
      bad(name, `names BILL_ORG_ID with another ${what} than ${name.slice(0, -1)}: keep one`);
    return out;
  };
  const spendApiToken = str('BILL_SPEND_API_TOKEN');
  const webhookSecurityKey = str('BILL_WEBHOOK_SECURITY_KEY');
  const bill = {
    baseUrl,
    spendBaseUrl: url('BILL_SPEND_BASE_URL') || baseUrl,
    eventsBaseUrl: url('BILL_EVENTS_BASE_URL') || baseUrl.replace(/\/connect$/, '/connect-events'),
    /** Undefined when none of the four is set: the embedded sandbox is used. */
    credentials:
      unset.length === 0 ? { devKey: user.BILL_DEV_KEY, username: user.BILL_USERNAME, password: user.BILL_PASSWORD, orgId } : undefined,
    spendApiToken,
    /** BILL_SPEND_API_TOKENS: org id -> that organisation's Spend & Expense token (BILL_SPEND_API_TOKEN is BILL_ORG_ID's). */
    spendApiTokens: orgSecrets('BILL_SPEND_API_TOKENS', spendApiToken, 'token'),
    allowedOrgIds,
    webhookSecurityKey,
    /** BILL_WEBHOOK_SECURITY_KEYS: org id -> the key of a subscription made outside billbridge for that organisation. */
    webhookSecurityKeys: orgSecrets('BILL_WEBHOOK_SECURITY_KEYS', webhookSecurityKey, 'key'),
    requestTimeoutMs: int('BILL_TIMEOUT_MS', 20_000, 1_000, 120_000),
  };

  const redisUrl = str('REDIS_URL');
  if (redisUrl !== '' && !/^rediss?:\/\//.test(redisUrl)) bad('REDIS_URL', 'must start with redis:// or rediss://');
  /** 32-byte key (base64 or hex) for secrets stored at rest; empty disables features that need it. */
  const secretsKeyText = str('SECRETS_KEY');
  const secretsKey = secretsKeyText === '' ? undefined : parseSecretsKey(secretsKeyText);
  if (secretsKey && 'problem' in secretsKey) bad('SECRETS_KEY', secretsKey.problem);
  // Who may read /metrics: with a token, a scraper sending it as a bearer token (on the bot's port, and on the metrics
  // port when set); with a port and no token, anyone who can reach that listener, so only a loopback METRICS_HOST
  // may go without a token. Neither: none.
  const metrics = { token: str('METRICS_TOKEN'), port: int('METRICS_PORT', undefined, 0, 65535), host: str('METRICS_HOST', '127.0.0.1') };
  if (metrics.token !== '' && !/^[\x21-\x7e]{16,512}$/.test(metrics.token))
    bad('METRICS_TOKEN', 'must be 16 to 512 printable characters without spaces (openssl rand -base64 32)');
  if (metrics.port !== undefined && metrics.port !== 0 && metrics.port === http.port && !unread('PORT'))
    bad('METRICS_PORT', 'must differ from PORT (it is a separate listener)');
  const loopback = /^(127(\.\d{1,3}){3}|::1|localhost)$/i.test(metrics.host);
  if (metrics.port !== undefined && !loopback && metrics.token === '')
    bad('METRICS_HOST', 'serves /metrics beyond this host: set METRICS_TOKEN too (or bind 127.0.0.1)');

  const billLoginsPerHour = int('LIMIT_BILL_LOGINS_PER_HOUR', 200, 1, 100_000);
  /** The share of BILL logins an hour kept for the bot's own sessions: people's sign-ins never take them. */
  const billLoginsReservedPercent = int('LIMIT_BILL_LOGINS_RESERVED_PERCENT', 25, 0, 90);
  const config = {
    nodeEnv,
    /** package.json's: src/ (tsx, tests) and dist/ (npm start) both sit directly under the package root. */
    version: (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version,
    http,
    logLevel,
    stateDir: str('STATE_DIR', './.data'),
    bot,
    /** The conversation's time zone for "due today" and the locale for numbers and dates. */
    timeZone,
    locale,
    /** Public host name the bot is reached at (manifest validDomains, webhook URL); empty in local mode. */
    publicHostname,
    /** The Teams app package's developer block (npm run package). */
    teamsApp,
    bill,
    sandbox: {
      latencyMs: int('SANDBOX_LATENCY_MS', 0, 0, 60_000),
      invoices: int('SANDBOX_INVOICES', 0, 0, 1_000_000),
      bills: int('SANDBOX_BILLS', 0, 0, 1_000_000),
    },
    limits: {
      billRequestsPerHour: int('LIMIT_BILL_REQUESTS_PER_HOUR', 20_000, 1, 10_000_000),
      billConcurrency: int('LIMIT_BILL_CONCURRENCY', 3, 1, 100),
      billLoginsPerHour,
      spendPerMinute: int('LIMIT_SPEND_PER_MINUTE', 60, 1, 100_000),
      /** Windows for bot sends per conversation thread, e.g. 7 per 1 s. */
      connectorThread: windows('LIMIT_CONNECTOR_THREAD', '7/1s,8/2s,60/30s,1800/3600s'),
      /** How long a command may wait for an upstream slot before it answers "busy". */
      commandWaitMs: int('COMMAND_WAIT_MS', 8_000, 100, 14_000),
      userCommandsPerMinute: int('USER_COMMANDS_PER_MINUTE', 30, 1, 10_000),
      billLoginsReserved: Math.ceil((billLoginsPerHour * billLoginsReservedPercent) / 100),
      linkAttemptsPerHour: int('LINK_ATTEMPTS_PER_HOUR', 5, 1, 1_000),
      /** After a connect attempt BILL refused, that person waits this long before the next one. */
      linkCooldownS: int('LINK_COOLDOWN_S', 60, 0, 86_400),
    },
    cache: {
      listTtlS: int('CACHE_TTL_LIST_S', 60, 0, 86_400),
      pushedTtlS: int('CACHE_TTL_PUSHED_S', 900, 0, 86_400),
      objectTtlS: int('CACHE_TTL_OBJECT_S', 300, 0, 86_400),
      namesTtlS: int('CACHE_TTL_NAMES_S', 3600, 0, 86_400),
      maxEntries: int('CACHE_MAX_ENTRIES', 5_000, 10, 1_000_000),
    },
    graph: {
      baseUrl: url('GRAPH_BASE_URL', 'https://graph.microsoft.com/v1.0'),
      authorityHost: url('GRAPH_AUTHORITY_HOST', 'https://login.microsoftonline.com'),
    },
    access,
    redisUrl,
    secretsKey: secretsKey && 'key' in secretsKey ? secretsKey.key : undefined,
    metrics,
  };
  return { config, problems, variables };
}

export type Config = ReturnType<typeof readConfig>['config'];

/**
 * Every environment variable billbridge reads (the botbuilder auth overrides aside): the names readConfig asks for.
 * A function, so importing config.ts does not read a whole configuration (and package.json) for a list only checks use.
 */
export function configVariables(): readonly string[] {
  return readConfig({}).variables;
}

/** Validates the whole environment at once and throws a ConfigError listing every problem. */
export function loadConfig(env: Env): Config {
  const { config, problems } = readConfig(env);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Every configured secret value, for log scrubbing and the secret-scan tests. */
export function configSecrets(config: Config): string[] {
  return [
    config.bot.appPassword,
    config.bill.credentials?.password,
    config.bill.credentials?.devKey,
    config.bill.spendApiToken,
    config.bill.webhookSecurityKey,
    ...Object.values(config.bill.spendApiTokens),
    ...Object.values(config.bill.webhookSecurityKeys),
    config.metrics.token,
    config.secretsKey?.toString('base64'),
    config.secretsKey?.toString('hex'),
    config.secretsKey?.toString('base64url'),
  ].filter((s): s is string => typeof s === 'string' && s.length >= 4);
}
