// Environment (+ .env) -> one typed, validated Config; every error names the variable.
import { existsSync, readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { parseSecretsKey } from './infra/state/sealing.js';
import { NamedError } from './errors.js';
import { z } from 'zod';

const APP_TYPES = ['SingleTenant', 'MultiTenant', 'UserAssignedMSI'] as const;

export type Config = ReturnType<typeof loadConfig>;

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

// One parser per kind of variable; zod names the variable in each issue (its path).
const text = z.string().optional();

const fail = (ctx: z.RefinementCtx, message: string) => {
  ctx.addIssue({ code: z.ZodIssueCode.custom, message });
  return z.NEVER;
};

/** Text; unset or blank (`NAME=` in an env file) is the default, as `int` takes it. */
const str = (fallback = '') => text.transform((v) => v?.trim() || fallback);

const int = <F extends number | undefined>(fallback: F, min: number, max: number) =>
  text.transform((v, ctx): number | F => {
    const s = v?.trim() ?? '';
    if (s === '') return fallback;
    if (!/^-?\d+$/.test(s)) return fail(ctx, `must be a whole number, got "${s}"`);
    const n = Number(s);
    return n < min || n > max ? fail(ctx, `must be between ${min} and ${max}, got ${n}`) : n;
  });

const url = (fallback: string) =>
  text.transform((v, ctx) => {
    const s = v?.trim() || fallback;
    if (s === '') return '';
    // Echoed to help, without what stands before an "@": credentials in a URL that does not parse are still credentials.
    if (!URL.canParse(s))
      return fail(ctx, `must be an absolute http(s) URL, got "${s.replace(/^([a-z][a-z0-9+.-]*:\/\/)?[^/?#]*@/i, '$1…@')}"`);
    const parsed = new URL(s);
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return fail(ctx, `must use http or https, got "${parsed.protocol}"`);
    if (parsed.search || parsed.hash || parsed.username || parsed.password)
      return fail(ctx, 'must not carry a query, fragment or credentials');
    return s.replace(/\/+$/, '');
  });

const list = () => text.transform((v) => (v ?? '').split(/[,\s]+/).filter(Boolean));

const envSchema = z.object({
  NODE_ENV: str('development'),
  PORT: int(3978, 0, 65535),
  HOST: str(''),
  LOG_LEVEL: text
    .transform((v) => (v ?? 'info').trim().toLowerCase())
    .pipe(z.enum(LOG_LEVELS, { errorMap: () => ({ message: `must be one of ${LOG_LEVELS.join(', ')}` }) })),
  STATE_DIR: str('./.data'),
  MicrosoftAppId: str(''),
  MicrosoftAppPassword: str(''),
  MicrosoftAppType: str(''),
  MicrosoftAppTenantId: str(''),
  BOT_TIMEZONE: str('UTC'),
  BOT_LOCALE: str('en-US'),
  PUBLIC_HOSTNAME: str(''),
  TEAMS_APP_DEVELOPER_NAME: str('billbridge'),
  TEAMS_APP_WEBSITE_URL: url(''),
  TEAMS_APP_PRIVACY_URL: url(''),
  TEAMS_APP_TERMS_URL: url(''),
  BILL_BASE_URL: url('https://gateway.stage.bill.com/connect'),
  BILL_SPEND_BASE_URL: url(''),
  BILL_EVENTS_BASE_URL: url(''),
  BILL_DEV_KEY: str(''),
  BILL_USERNAME: str(''),
  // Kept as typed: spaces may be part of a password.
  BILL_PASSWORD: text.transform((v) => v ?? ''),
  BILL_ORG_ID: str(''),
  BILL_SPEND_API_TOKEN: str(''),
  BILL_SPEND_API_TOKENS: str(''),
  BILL_ALLOWED_ORG_IDS: list(),
  BILL_WEBHOOK_SECURITY_KEY: str(''),
  BILL_WEBHOOK_SECURITY_KEYS: str(''),
  BILL_TIMEOUT_MS: int(20_000, 1_000, 120_000),
  SANDBOX_LATENCY_MS: int(0, 0, 60_000),
  SANDBOX_INVOICES: int(0, 0, 1_000_000),
  SANDBOX_BILLS: int(0, 0, 1_000_000),
  LIMIT_BILL_REQUESTS_PER_HOUR: int(20_000, 1, 10_000_000),
  LIMIT_BILL_CONCURRENCY: int(3, 1, 100),
  LIMIT_BILL_LOGINS_PER_HOUR: int(200, 1, 100_000),
  LIMIT_SPEND_PER_MINUTE: int(60, 1, 100_000),
  /** Windows for bot sends per conversation thread, e.g. 7 per 1 s. */
  LIMIT_CONNECTOR_THREAD: str('7/1s,8/2s,60/30s,1800/3600s'),
  /** How long a command may wait for an upstream slot before it answers "busy". */
  COMMAND_WAIT_MS: int(8_000, 100, 14_000),
  USER_COMMANDS_PER_MINUTE: int(30, 1, 10_000),
  /** The share of BILL logins an hour kept for the bot's own sessions: people's sign-ins never take them. */
  LIMIT_BILL_LOGINS_RESERVED_PERCENT: int(25, 0, 90),
  LINK_ATTEMPTS_PER_HOUR: int(5, 1, 1_000),
  /** After a connect attempt BILL refused, that person waits this long before the next one. */
  LINK_COOLDOWN_S: int(60, 0, 86_400),
  CACHE_TTL_LIST_S: int(60, 0, 86_400),
  CACHE_TTL_PUSHED_S: int(900, 0, 86_400),
  CACHE_TTL_OBJECT_S: int(300, 0, 86_400),
  CACHE_TTL_NAMES_S: int(3600, 0, 86_400),
  CACHE_MAX_ENTRIES: int(5_000, 10, 1_000_000),
  GRAPH_BASE_URL: url('https://graph.microsoft.com/v1.0'),
  GRAPH_AUTHORITY_HOST: url('https://login.microsoftonline.com'),
  ALLOWED_TENANT_IDS: list(),
  ADMIN_AAD_OBJECT_IDS: list(),
  REDIS_URL: str(''),
  /** 32-byte key (base64 or hex) for secrets stored at rest; empty disables features that need it. */
  SECRETS_KEY: str(''),
  // Who may read /metrics: with a token, a scraper sending it as a bearer token (on the bot's port, and on the metrics
  // port when set); with a port and no token, anyone who can reach that listener, so only a loopback METRICS_HOST
  // may go without a token. Neither: none.
  METRICS_TOKEN: str(''),
  METRICS_PORT: int(undefined, 0, 65535),
  METRICS_HOST: str('127.0.0.1'),
});

/** Every environment variable billbridge reads (plus the botbuilder auth overrides). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

const DAY_MS = 86_400_000;

function parseWindows(raw: string, bad: (message: string) => void): Array<{ limit: number; windowMs: number }> {
  const parts = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length === 0) bad('must list at least one window');
  const windows: Array<{ limit: number; windowMs: number }> = [];
  for (const part of parts) {
    const m = /^(\d+)\/(\d+)(ms|s|m|h)$/.exec(part);
    if (!m) {
      bad(`"${part}" is not <count>/<window> like 7/1s or 1800/3600s`);
      continue;
    }
    const limit = Number(m[1]);
    const windowMs = Number(m[2]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[3] as 'ms' | 's' | 'm' | 'h'];
    // A count or a window of 0 would let every send through (the limiter sees no limit), the opposite of what was meant.
    if (limit < 1 || limit > 1_000_000 || windowMs < 1 || windowMs > DAY_MS)
      bad(`"${part}" must count 1 to 1000000 sends in a window of 1 ms to 24 h`);
    else windows.push({ limit, windowMs });
  }
  return windows;
}

/** Whether Intl takes a time zone or locale (it throws, or finds no support, for one it does not know). */
function intlAccepts(check: () => unknown): boolean {
  try {
    return check() !== false;
  } catch {
    return false;
  }
}

/** package.json's version: src/ (tsx, tests) and dist/ (npm start) both sit directly under the package root. */
function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string }).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Reads `.env` (when present) under the real environment: a variable set in the environment wins. */
export function readEnv(envFile = '.env', env: Env = process.env): Env {
  if (!existsSync(envFile)) return { ...env };
  return { ...parseEnv(readFileSync(envFile, 'utf8')), ...env };
}

/** Validates the whole environment at once and throws a ConfigError listing every problem. */
export function loadConfig(env: Env) {
  const problems: Array<{ variable: string; message: string }> = [];
  const bad = (variable: string, message: string) => void problems.push({ variable, message });
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) bad(String(issue.path[0] ?? 'environment'), issue.message);
    throw new ConfigError(problems);
  }
  const e = parsed.data;

  const appType = e.MicrosoftAppType === '' ? 'SingleTenant' : APP_TYPES.find((t) => t.toLowerCase() === e.MicrosoftAppType.toLowerCase());
  if (!appType) bad('MicrosoftAppType', `must be one of ${APP_TYPES.join(', ')}, got "${e.MicrosoftAppType}"`);
  /** botbuilder's own auth settings (OpenID metadata, issuer, token endpoint); for tests and sovereign clouds, refused in production. */
  const overrides: Record<string, string> = {};
  for (const key of BOT_AUTH_OVERRIDE_KEYS) if (env[key]?.trim()) overrides[key] = env[key].trim();
  if (e.MicrosoftAppId !== '') {
    const type = appType ?? 'SingleTenant';
    if (!/^[0-9a-fA-F-]{36}$/.test(e.MicrosoftAppId))
      bad('MicrosoftAppId', "must be the bot registration's application (client) id, a GUID");
    if (type !== 'MultiTenant' && e.MicrosoftAppTenantId === '')
      bad('MicrosoftAppTenantId', `is required when MicrosoftAppType is ${type}`);
    if (type === 'UserAssignedMSI' && e.MicrosoftAppPassword !== '')
      bad('MicrosoftAppPassword', 'must be empty when MicrosoftAppType is UserAssignedMSI');
    if (type !== 'UserAssignedMSI' && e.MicrosoftAppPassword === '')
      bad('MicrosoftAppPassword', `is required when MicrosoftAppId is set and MicrosoftAppType is ${type}`);
    if (e.ALLOWED_TENANT_IDS.length === 0)
      bad('ALLOWED_TENANT_IDS', 'is required when MicrosoftAppId is set: list the Entra tenant ids allowed to use the bot');
  } else if (e.NODE_ENV === 'production') {
    bad('MicrosoftAppId', 'is required when NODE_ENV=production (an empty app id turns inbound authentication off)');
  }
  const [override] = Object.keys(overrides);
  if (e.NODE_ENV === 'production' && override !== undefined)
    bad(override, 'Bot Framework auth overrides are for tests only and are refused when NODE_ENV=production');

  if (!intlAccepts(() => new Intl.DateTimeFormat('en-US', { timeZone: e.BOT_TIMEZONE })))
    bad('BOT_TIMEZONE', `"${e.BOT_TIMEZONE}" is not an IANA time zone such as UTC or America/New_York`);
  if (!intlAccepts(() => Intl.NumberFormat.supportedLocalesOf([e.BOT_LOCALE]).length > 0))
    bad('BOT_LOCALE', `"${e.BOT_LOCALE}" is not a supported locale such as en-US`);
  if (e.PUBLIC_HOSTNAME !== '' && !/^[a-z0-9.-]+(:\d+)?$/i.test(e.PUBLIC_HOSTNAME))
    bad('PUBLIC_HOSTNAME', 'must be a bare host name such as bot.example.com (no scheme or path)');
  for (const name of ['TEAMS_APP_WEBSITE_URL', 'TEAMS_APP_PRIVACY_URL', 'TEAMS_APP_TERMS_URL'] as const) {
    if (e[name] !== '' && !e[name].startsWith('https://')) bad(name, 'must be an https URL (Teams shows it on the app details page)');
  }
  if (e.TEAMS_APP_DEVELOPER_NAME.length === 0 || e.TEAMS_APP_DEVELOPER_NAME.length > 32)
    bad('TEAMS_APP_DEVELOPER_NAME', 'must be 1 to 32 characters (Teams manifest developer.name)');

  const credentialVars = ['BILL_DEV_KEY', 'BILL_USERNAME', 'BILL_PASSWORD', 'BILL_ORG_ID'] as const;
  const unset = credentialVars.filter((name) => e[name] === '');
  if (unset.length < 4)
    for (const name of unset)
      bad(name, 'is missing: set all four of BILL_DEV_KEY, BILL_USERNAME, BILL_PASSWORD, BILL_ORG_ID, or none to use the embedded sandbox');
  /** Undefined when none of the four is set: the embedded sandbox is used. */
  const credentials =
    unset.length === 0 ? { devKey: e.BILL_DEV_KEY, username: e.BILL_USERNAME, password: e.BILL_PASSWORD, orgId: e.BILL_ORG_ID } : undefined;
  if (e.BILL_BASE_URL.endsWith('/v3'))
    bad('BILL_BASE_URL', 'must not end with /v3: paths are appended as /v3/... (e.g. https://gateway.stage.bill.com/connect)');
  if (e.BILL_ORG_ID !== '' && e.BILL_ALLOWED_ORG_IDS.length > 0 && !e.BILL_ALLOWED_ORG_IDS.includes(e.BILL_ORG_ID))
    bad('BILL_ALLOWED_ORG_IDS', 'must include BILL_ORG_ID when both are set');
  // A Spend & Expense token and a webhook key each belong to one organisation: the single variables are BILL_ORG_ID's.
  const servedOrgs = e.BILL_ALLOWED_ORG_IDS.length > 0 ? e.BILL_ALLOWED_ORG_IDS : e.BILL_ORG_ID !== '' ? [e.BILL_ORG_ID] : [];
  /** `orgId:secret,orgId:secret` of organisations served here; a problem names an entry by position, never its value. */
  const orgSecrets = (name: 'BILL_SPEND_API_TOKENS' | 'BILL_WEBHOOK_SECURITY_KEYS', single: string, what: string) => {
    const out: Record<string, string> = {};
    if (e[name] === '') return out;
    if (servedOrgs.length === 0) {
      bad(name, 'needs BILL_ORG_ID or BILL_ALLOWED_ORG_IDS: each entry names the organisation its secret belongs to');
      return out;
    }
    e[name].split(',').forEach((part, i) => {
      const entry = part.trim();
      const at = entry.indexOf(':');
      const orgId = at > 0 ? entry.slice(0, at).trim() : '';
      const secret = at > 0 ? entry.slice(at + 1).trim() : '';
      if (orgId === '' || secret === '') bad(name, `entry ${i + 1} is not <BILL organisation id>:<secret>`);
      // Not echoed: an entry written the wrong way round (secret:organisation) has the secret there.
      else if (!servedOrgs.includes(orgId))
        bad(
          name,
          `entry ${i + 1} names an organisation that is not in BILL_ALLOWED_ORG_IDS (or BILL_ORG_ID); write <BILL organisation id>:<secret>`,
        );
      else if (out[orgId] !== undefined) bad(name, `entry ${i + 1} names organisation "${orgId}" a second time`);
      else out[orgId] = secret;
    });
    if (single !== '' && out[e.BILL_ORG_ID] !== undefined && out[e.BILL_ORG_ID] !== single)
      bad(name, `names BILL_ORG_ID with another ${what} than ${name.slice(0, -1)}: keep one`);
    return out;
  };
  /** BILL_SPEND_API_TOKENS: org id -> that organisation's Spend & Expense token (BILL_SPEND_API_TOKEN is BILL_ORG_ID's). */
  const spendApiTokens = orgSecrets('BILL_SPEND_API_TOKENS', e.BILL_SPEND_API_TOKEN, 'token');
  /** BILL_WEBHOOK_SECURITY_KEYS: org id -> the key of a subscription made outside billbridge for that organisation. */
  const webhookSecurityKeys = orgSecrets('BILL_WEBHOOK_SECURITY_KEYS', e.BILL_WEBHOOK_SECURITY_KEY, 'key');

  if (e.REDIS_URL !== '' && !/^rediss?:\/\//.test(e.REDIS_URL)) bad('REDIS_URL', 'must start with redis:// or rediss://');
  // Tenant and admin ids are compared with what Teams sends (GUIDs); a typo would silently lock out or demote.
  const guid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  for (const name of ['ALLOWED_TENANT_IDS', 'ADMIN_AAD_OBJECT_IDS'] as const) {
    const wrong = e[name].filter((id) => !guid.test(id)).slice(0, 3);
    if (wrong.length > 0) bad(name, `must list Entra ids (GUIDs); not a GUID: ${wrong.map((b) => `"${b.slice(0, 40)}"`).join(', ')}`);
  }
  const connectorThread = parseWindows(e.LIMIT_CONNECTOR_THREAD, (message) => bad('LIMIT_CONNECTOR_THREAD', message));
  const secretsKey = e.SECRETS_KEY === '' ? undefined : parseSecretsKey(e.SECRETS_KEY);
  if (secretsKey && 'problem' in secretsKey) bad('SECRETS_KEY', secretsKey.problem);
  if (e.METRICS_TOKEN !== '' && !/^[\x21-\x7e]{16,512}$/.test(e.METRICS_TOKEN))
    bad('METRICS_TOKEN', 'must be 16 to 512 printable characters without spaces (openssl rand -base64 32)');
  if (e.METRICS_PORT !== undefined && e.METRICS_PORT !== 0 && e.METRICS_PORT === e.PORT)
    bad('METRICS_PORT', 'must differ from PORT (it is a separate listener)');
  const loopback = /^(127(\.\d{1,3}){3}|::1|localhost)$/i.test(e.METRICS_HOST);
  if (e.METRICS_PORT !== undefined && !loopback && e.METRICS_TOKEN === '')
    bad('METRICS_HOST', 'serves /metrics beyond this host: set METRICS_TOKEN too (or bind 127.0.0.1)');

  if (problems.length > 0 || !appType) throw new ConfigError(problems);

  return {
    nodeEnv: e.NODE_ENV,
    version: packageVersion(),
    http: { port: e.PORT, host: e.HOST === '' ? undefined : e.HOST },
    logLevel: e.LOG_LEVEL,
    stateDir: e.STATE_DIR,
    bot: { appId: e.MicrosoftAppId, appPassword: e.MicrosoftAppPassword, appType, tenantId: e.MicrosoftAppTenantId, overrides },
    /** The conversation's time zone for "due today" and the locale for numbers and dates. */
    timeZone: e.BOT_TIMEZONE,
    locale: e.BOT_LOCALE,
    /** Public host name the bot is reached at (manifest validDomains, webhook URL); empty in local mode. */
    publicHostname: e.PUBLIC_HOSTNAME,
    /** The Teams app package's developer block (npm run package); empty URLs default to https://PUBLIC_HOSTNAME/. */
    teamsApp: {
      developerName: e.TEAMS_APP_DEVELOPER_NAME,
      websiteUrl: e.TEAMS_APP_WEBSITE_URL,
      privacyUrl: e.TEAMS_APP_PRIVACY_URL,
      termsOfUseUrl: e.TEAMS_APP_TERMS_URL,
    },
    bill: {
      baseUrl: e.BILL_BASE_URL,
      spendBaseUrl: e.BILL_SPEND_BASE_URL || e.BILL_BASE_URL,
      eventsBaseUrl: e.BILL_EVENTS_BASE_URL || e.BILL_BASE_URL.replace(/\/connect$/, '/connect-events'),
      credentials,
      spendApiToken: e.BILL_SPEND_API_TOKEN,
      spendApiTokens,
      allowedOrgIds: e.BILL_ALLOWED_ORG_IDS,
      webhookSecurityKey: e.BILL_WEBHOOK_SECURITY_KEY,
      webhookSecurityKeys,
      requestTimeoutMs: e.BILL_TIMEOUT_MS,
    },
    sandbox: { latencyMs: e.SANDBOX_LATENCY_MS, invoices: e.SANDBOX_INVOICES, bills: e.SANDBOX_BILLS },
    limits: {
      billRequestsPerHour: e.LIMIT_BILL_REQUESTS_PER_HOUR,
      billConcurrency: e.LIMIT_BILL_CONCURRENCY,
      billLoginsPerHour: e.LIMIT_BILL_LOGINS_PER_HOUR,
      spendPerMinute: e.LIMIT_SPEND_PER_MINUTE,
      connectorThread,
      commandWaitMs: e.COMMAND_WAIT_MS,
      userCommandsPerMinute: e.USER_COMMANDS_PER_MINUTE,
      billLoginsReserved: Math.ceil((e.LIMIT_BILL_LOGINS_PER_HOUR * e.LIMIT_BILL_LOGINS_RESERVED_PERCENT) / 100),
      linkAttemptsPerHour: e.LINK_ATTEMPTS_PER_HOUR,
      linkCooldownS: e.LINK_COOLDOWN_S,
    },
    cache: {
      listTtlS: e.CACHE_TTL_LIST_S,
      pushedTtlS: e.CACHE_TTL_PUSHED_S,
      objectTtlS: e.CACHE_TTL_OBJECT_S,
      namesTtlS: e.CACHE_TTL_NAMES_S,
      maxEntries: e.CACHE_MAX_ENTRIES,
    },
    graph: { baseUrl: e.GRAPH_BASE_URL, authorityHost: e.GRAPH_AUTHORITY_HOST },
    access: { allowedTenantIds: e.ALLOWED_TENANT_IDS, adminAadObjectIds: e.ADMIN_AAD_OBJECT_IDS },
    redisUrl: e.REDIS_URL,
    secretsKey: secretsKey && 'key' in secretsKey ? secretsKey.key : undefined,
    metrics: { token: e.METRICS_TOKEN, port: e.METRICS_PORT, host: e.METRICS_HOST },
  };
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
