// Environment (+ .env) -> one typed, validated Config; every error names the variable.
import { existsSync, readFileSync } from 'node:fs';
import { parseSecretsKey as parseSecretsKeyText } from './infra/state/sealing.js';
import { parse as parseDotenv } from 'dotenv';
import { z } from 'zod';

type AppType = 'SingleTenant' | 'MultiTenant' | 'UserAssignedMSI';
type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

interface BotAuthConfig {
  appId: string;
  appPassword: string;
  appType: AppType;
  tenantId: string;
  /** botbuilder's own auth settings (OpenID metadata, issuer, token endpoint); for tests and sovereign clouds, refused in production. */
  overrides: Record<string, string>;
}

interface BillCredentials {
  devKey: string;
  username: string;
  password: string;
  orgId: string;
}

export interface Config {
  nodeEnv: string;
  version: string;
  http: { port: number; host: string | undefined };
  logLevel: LogLevel;
  stateDir: string;
  bot: BotAuthConfig;
  /** The conversation's time zone for "due today" and the locale for numbers and dates. */
  timeZone: string;
  locale: string;
  /** Public host name the bot is reached at (manifest validDomains, webhook URL); empty in local mode. */
  publicHostname: string;
  /** The Teams app package's developer block (npm run package); empty URLs default to https://PUBLIC_HOSTNAME/. */
  teamsApp: { developerName: string; websiteUrl: string; privacyUrl: string; termsOfUseUrl: string };
  bill: {
    baseUrl: string;
    spendBaseUrl: string;
    eventsBaseUrl: string;
    /** Undefined when none of the four credentials is set: the embedded sandbox is used. */
    credentials: BillCredentials | undefined;
    spendApiToken: string;
    /** BILL_SPEND_API_TOKENS: org id -> that organisation's Spend & Expense token (BILL_SPEND_API_TOKEN is BILL_ORG_ID's). */
    spendApiTokens: Record<string, string>;
    allowedOrgIds: string[];
    webhookSecurityKey: string;
    /** BILL_WEBHOOK_SECURITY_KEYS: org id -> the security key of a subscription made outside billbridge for that organisation. */
    webhookSecurityKeys: Record<string, string>;
    requestTimeoutMs: number;
  };
  sandbox: { latencyMs: number; invoices: number; bills: number };
  limits: {
    billRequestsPerHour: number;
    billConcurrency: number;
    billLoginsPerHour: number;
    spendPerMinute: number;
    graphAppPerSecond: number;
    graphTenantPerSecond: number;
    graphTeamPerSecond: number;
    /** Windows for bot sends per conversation thread, e.g. 7 per 1 s. */
    connectorThread: Array<{ limit: number; windowMs: number }>;
    /** How long a command may wait for an upstream slot before it answers "busy". */
    commandWaitMs: number;
    userCommandsPerMinute: number;
    /**
     * BILL logins an hour kept for the bot's own sessions (LIMIT_BILL_LOGINS_RESERVED_PERCENT of the hourly limit,
     * rounded up): people's sign-ins (connect, approvals as themselves) never take them.
     */
    billLoginsReserved: number;
    /** Connect attempts (BILL sign-ins with a typed token) one person may make an hour. */
    linkAttemptsPerHour: number;
    /** After a connect attempt BILL refused, that person waits this long before the next one. */
    linkCooldownS: number;
  };
  cache: { listTtlS: number; pushedTtlS: number; objectTtlS: number; namesTtlS: number; maxEntries: number };
  graph: { baseUrl: string; authorityHost: string };
  access: { allowedTenantIds: string[]; adminAadObjectIds: string[] };
  redisUrl: string;
  /** 32-byte key (base64 or hex) for secrets stored at rest; empty disables features that need it. */
  secretsKey: Buffer | undefined;
  /**
   * Who may read /metrics: with a token, a scraper sending it as a bearer token (on the bot's port, and on the
   * metrics port when set); with a port, anyone who can reach that listener (127.0.0.1 unless METRICS_HOST).
   * With neither, no metrics are served.
   */
  metrics: { token: string; port: number | undefined; host: string };
}

export interface ConfigProblem {
  variable: string;
  message: string;
}

export class ConfigError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    super('Invalid configuration:\n' + problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n'));
    this.name = 'ConfigError';
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

const DEFAULT_BILL_BASE_URL = 'https://gateway.stage.bill.com/connect';

type Env = Record<string, string | undefined>;

const str = (fallback = '') =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined ? fallback : v.trim()));

const int = (fallback: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return fallback;
      const s = v.trim();
      if (!/^-?\d+$/.test(s)) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be a whole number, got "${s}"` });
        return z.NEVER;
      }
      const n = Number(s);
      if (n < min || n > max) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be between ${min} and ${max}, got ${n}` });
        return z.NEVER;
      }
      return n;
    });

const url = (fallback: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const s = v === undefined || v.trim() === '' ? fallback : v.trim();
      if (s === '') return '';
      let parsed: URL;
      try {
        parsed = new URL(s);
      } catch {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must be an absolute http(s) URL, got "${s}"` });
        return z.NEVER;
      }
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `must use http or https, got "${parsed.protocol}"` });
        return z.NEVER;
      }
      if (parsed.search || parsed.hash || parsed.username || parsed.password) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must not carry a query, fragment or credentials' });
        return z.NEVER;
      }
      return s.replace(/\/+$/, '');
    });

const list = () =>
  z
    .string()
    .optional()
    .transform((v) =>
      (v ?? '')
        .split(/[,\s]+/)
        .map((s) => s.trim())
        .filter(Boolean),
    );

const envSchema = z.object({
  NODE_ENV: str('development'),
  PORT: int(3978, 0, 65535),
  HOST: str(''),
  LOG_LEVEL: z
    .string()
    .optional()
    .transform((v) => (v ?? 'info').trim().toLowerCase())
    .pipe(
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
        errorMap: () => ({ message: 'must be one of fatal, error, warn, info, debug, trace, silent' }),
      }),
    ),
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
  BILL_BASE_URL: url(DEFAULT_BILL_BASE_URL),
  BILL_SPEND_BASE_URL: url(''),
  BILL_EVENTS_BASE_URL: url(''),
  BILL_DEV_KEY: str(''),
  BILL_USERNAME: str(''),
  BILL_PASSWORD: z
    .string()
    .optional()
    .transform((v) => v ?? ''),
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
  LIMIT_GRAPH_APP_PER_SECOND: int(1500, 1, 100_000),
  LIMIT_GRAPH_TENANT_PER_SECOND: int(30, 1, 100_000),
  LIMIT_GRAPH_TEAM_PER_SECOND: int(4, 1, 100_000),
  LIMIT_CONNECTOR_THREAD: str('7/1s,8/2s,60/30s,1800/3600s'),
  COMMAND_WAIT_MS: int(8_000, 100, 14_000),
  USER_COMMANDS_PER_MINUTE: int(30, 1, 10_000),
  LIMIT_BILL_LOGINS_RESERVED_PERCENT: int(25, 0, 90),
  LINK_ATTEMPTS_PER_HOUR: int(5, 1, 1_000),
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
  SECRETS_KEY: str(''),
  METRICS_TOKEN: str(''),
  METRICS_PORT: str(''),
  METRICS_HOST: str('127.0.0.1'),
});

/** Every environment variable billbridge reads (plus the botbuilder auth overrides). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(envSchema.shape);

function parseAppType(raw: string, problems: ConfigProblem[]): AppType {
  if (raw === '') return 'SingleTenant';
  const types: AppType[] = ['SingleTenant', 'MultiTenant', 'UserAssignedMSI'];
  const hit = types.find((t) => t.toLowerCase() === raw.toLowerCase());
  if (!hit) problems.push({ variable: 'MicrosoftAppType', message: `must be one of ${types.join(', ')}, got "${raw}"` });
  return hit ?? 'SingleTenant';
}

function parseWindows(raw: string, problems: ConfigProblem[]): Array<{ limit: number; windowMs: number }> {
  const windows: Array<{ limit: number; windowMs: number }> = [];
  for (const part of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^(\d+)\/(\d+)(ms|s|m|h)$/.exec(part);
    if (!m) {
      problems.push({ variable: 'LIMIT_CONNECTOR_THREAD', message: `"${part}" is not <count>/<window> like 7/1s or 1800/3600s` });
      continue;
    }
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[3] as 'ms' | 's' | 'm' | 'h'];
    windows.push({ limit: Number(m[1]), windowMs: Number(m[2]) * unit });
  }
  if (windows.length === 0 && problems.every((p) => p.variable !== 'LIMIT_CONNECTOR_THREAD')) {
    problems.push({ variable: 'LIMIT_CONNECTOR_THREAD', message: 'must list at least one window' });
  }
  return windows;
}

/**
 * `orgId:secret,orgId:secret` (BILL_SPEND_API_TOKENS, BILL_WEBHOOK_SECURITY_KEYS): each secret belongs to one
 * organisation, which must be one this deployment serves. Problems name the entry by position, never its value.
 */
function parseOrgSecrets(variable: string, raw: string, servedOrgs: string[], problems: ConfigProblem[]): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === '') return out;
  if (servedOrgs.length === 0) {
    problems.push({
      variable,
      message: 'needs BILL_ORG_ID or BILL_ALLOWED_ORG_IDS: each entry names the organisation its secret belongs to',
    });
    return out;
  }
  raw.split(',').forEach((part, i) => {
    const entry = part.trim();
    const at = entry.indexOf(':');
    const orgId = at > 0 ? entry.slice(0, at).trim() : '';
    const secret = at > 0 ? entry.slice(at + 1).trim() : '';
    if (orgId === '' || secret === '') {
      problems.push({ variable, message: `entry ${i + 1} is not <BILL organisation id>:<secret>` });
    } else if (!servedOrgs.includes(orgId)) {
      problems.push({
        variable,
        message: `entry ${i + 1} names organisation "${orgId.slice(0, 40)}", which is not in BILL_ALLOWED_ORG_IDS (or BILL_ORG_ID)`,
      });
    } else if (out[orgId] !== undefined) {
      problems.push({ variable, message: `entry ${i + 1} names organisation "${orgId}" a second time` });
    } else {
      out[orgId] = secret;
    }
  });
  return out;
}

function parseSecretsKey(raw: string, problems: ConfigProblem[]): Buffer | undefined {
  if (raw === '') return undefined;
  const parsed = parseSecretsKeyText(raw);
  if ('problem' in parsed) {
    problems.push({ variable: 'SECRETS_KEY', message: parsed.problem });
    return undefined;
  }
  return parsed.key;
}

function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

function isValidLocale(locale: string): boolean {
  try {
    return Intl.NumberFormat.supportedLocalesOf([locale]).length > 0;
  } catch {
    return false;
  }
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: string };
    if (pkg.version) return pkg.version;
  } catch {
    // dist/ layout: package.json sits one level higher
  }
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Reads `.env` (when present) under the real environment: a variable set in the environment wins. */
export function readEnv(envFile = '.env', env: Env = process.env): Env {
  if (!existsSync(envFile)) return { ...env };
  const fromFile = parseDotenv(readFileSync(envFile));
  return { ...fromFile, ...env };
}

/** Validates the whole environment at once and throws a ConfigError listing every problem. */
export function loadConfig(env: Env): Config {
  const problems: ConfigProblem[] = [];
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      problems.push({ variable: String(issue.path[0] ?? 'environment'), message: issue.message });
    }
    throw new ConfigError(problems);
  }
  const e = parsed.data;

  const appType = parseAppType(e.MicrosoftAppType, problems);
  const overrides: Record<string, string> = {};
  for (const key of BOT_AUTH_OVERRIDE_KEYS) {
    const v = env[key]?.trim();
    if (v) overrides[key] = v;
  }
  if (e.MicrosoftAppId !== '') {
    if (!/^[0-9a-fA-F-]{36}$/.test(e.MicrosoftAppId)) {
      problems.push({ variable: 'MicrosoftAppId', message: "must be the bot registration's application (client) id, a GUID" });
    }
    if (appType !== 'MultiTenant' && e.MicrosoftAppTenantId === '') {
      problems.push({ variable: 'MicrosoftAppTenantId', message: `is required when MicrosoftAppType is ${appType}` });
    }
    if (appType === 'UserAssignedMSI' && e.MicrosoftAppPassword !== '') {
      problems.push({ variable: 'MicrosoftAppPassword', message: 'must be empty when MicrosoftAppType is UserAssignedMSI' });
    }
    if (appType !== 'UserAssignedMSI' && e.MicrosoftAppPassword === '') {
      problems.push({
        variable: 'MicrosoftAppPassword',
        message: `is required when MicrosoftAppId is set and MicrosoftAppType is ${appType}`,
      });
    }
    if (e.ALLOWED_TENANT_IDS.length === 0) {
      problems.push({
        variable: 'ALLOWED_TENANT_IDS',
        message: 'is required when MicrosoftAppId is set: list the Entra tenant ids allowed to use the bot',
      });
    }
  } else if (e.NODE_ENV === 'production') {
    problems.push({
      variable: 'MicrosoftAppId',
      message: 'is required when NODE_ENV=production (an empty app id turns inbound authentication off)',
    });
  }
  const [override] = Object.keys(overrides);
  if (e.NODE_ENV === 'production' && override !== undefined) {
    problems.push({
      variable: override,
      message: 'Bot Framework auth overrides are for tests only and are refused when NODE_ENV=production',
    });
  }

  if (!isValidTimeZone(e.BOT_TIMEZONE))
    problems.push({ variable: 'BOT_TIMEZONE', message: `"${e.BOT_TIMEZONE}" is not an IANA time zone such as UTC or America/New_York` });
  if (!isValidLocale(e.BOT_LOCALE))
    problems.push({ variable: 'BOT_LOCALE', message: `"${e.BOT_LOCALE}" is not a supported locale such as en-US` });
  if (e.PUBLIC_HOSTNAME !== '' && !/^[a-z0-9.-]+(:\d+)?$/i.test(e.PUBLIC_HOSTNAME)) {
    problems.push({ variable: 'PUBLIC_HOSTNAME', message: 'must be a bare host name such as bot.example.com (no scheme or path)' });
  }
  for (const name of ['TEAMS_APP_WEBSITE_URL', 'TEAMS_APP_PRIVACY_URL', 'TEAMS_APP_TERMS_URL'] as const) {
    if (e[name] !== '' && !e[name].startsWith('https://'))
      problems.push({ variable: name, message: 'must be an https URL (Teams shows it on the app details page)' });
  }
  if (e.TEAMS_APP_DEVELOPER_NAME.length === 0 || e.TEAMS_APP_DEVELOPER_NAME.length > 32) {
    problems.push({ variable: 'TEAMS_APP_DEVELOPER_NAME', message: 'must be 1 to 32 characters (Teams manifest developer.name)' });
  }

  const credentialVars = {
    BILL_DEV_KEY: e.BILL_DEV_KEY,
    BILL_USERNAME: e.BILL_USERNAME,
    BILL_PASSWORD: e.BILL_PASSWORD,
    BILL_ORG_ID: e.BILL_ORG_ID,
  };
  const setVars = Object.entries(credentialVars).filter(([, v]) => v !== '');
  let credentials: BillCredentials | undefined;
  if (setVars.length > 0 && setVars.length < 4) {
    for (const [name, v] of Object.entries(credentialVars)) {
      if (v === '')
        problems.push({
          variable: name,
          message:
            'is missing: set all four of BILL_DEV_KEY, BILL_USERNAME, BILL_PASSWORD, BILL_ORG_ID, or none to use the embedded sandbox',
        });
    }
  } else if (setVars.length === 4) {
    credentials = { devKey: e.BILL_DEV_KEY, username: e.BILL_USERNAME, password: e.BILL_PASSWORD, orgId: e.BILL_ORG_ID };
  }
  if (e.BILL_BASE_URL.endsWith('/v3')) {
    problems.push({
      variable: 'BILL_BASE_URL',
      message: 'must not end with /v3: paths are appended as /v3/... (e.g. https://gateway.stage.bill.com/connect)',
    });
  }
  if (e.BILL_ORG_ID !== '' && e.BILL_ALLOWED_ORG_IDS.length > 0 && !e.BILL_ALLOWED_ORG_IDS.includes(e.BILL_ORG_ID)) {
    problems.push({ variable: 'BILL_ALLOWED_ORG_IDS', message: 'must include BILL_ORG_ID when both are set' });
  }
  // A Spend & Expense token and a webhook key each belong to one organisation: the single variables are BILL_ORG_ID's.
  const servedOrgs = e.BILL_ALLOWED_ORG_IDS.length > 0 ? e.BILL_ALLOWED_ORG_IDS : e.BILL_ORG_ID !== '' ? [e.BILL_ORG_ID] : [];
  const spendApiTokens = parseOrgSecrets('BILL_SPEND_API_TOKENS', e.BILL_SPEND_API_TOKENS, servedOrgs, problems);
  const webhookSecurityKeys = parseOrgSecrets('BILL_WEBHOOK_SECURITY_KEYS', e.BILL_WEBHOOK_SECURITY_KEYS, servedOrgs, problems);
  if (
    e.BILL_SPEND_API_TOKEN !== '' &&
    spendApiTokens[e.BILL_ORG_ID] !== undefined &&
    spendApiTokens[e.BILL_ORG_ID] !== e.BILL_SPEND_API_TOKEN
  ) {
    problems.push({
      variable: 'BILL_SPEND_API_TOKENS',
      message: 'names BILL_ORG_ID with another token than BILL_SPEND_API_TOKEN: keep one',
    });
  }
  if (
    e.BILL_WEBHOOK_SECURITY_KEY !== '' &&
    webhookSecurityKeys[e.BILL_ORG_ID] !== undefined &&
    webhookSecurityKeys[e.BILL_ORG_ID] !== e.BILL_WEBHOOK_SECURITY_KEY
  ) {
    problems.push({
      variable: 'BILL_WEBHOOK_SECURITY_KEYS',
      message: 'names BILL_ORG_ID with another key than BILL_WEBHOOK_SECURITY_KEY: keep one',
    });
  }
  const eventsBaseUrl = e.BILL_EVENTS_BASE_URL || e.BILL_BASE_URL.replace(/\/connect$/, '/connect-events');

  if (e.REDIS_URL !== '' && !/^rediss?:\/\//.test(e.REDIS_URL)) {
    problems.push({ variable: 'REDIS_URL', message: 'must start with redis:// or rediss://' });
  }
  // Tenant and admin ids are compared with what Teams sends (GUIDs); a typo would silently lock out or demote.
  const guid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  for (const name of ['ALLOWED_TENANT_IDS', 'ADMIN_AAD_OBJECT_IDS'] as const) {
    const bad = e[name].filter((id) => !guid.test(id));
    if (bad.length > 0) {
      problems.push({
        variable: name,
        message: `must list Entra ids (GUIDs); not a GUID: ${bad
          .slice(0, 3)
          .map((b) => `"${b.slice(0, 40)}"`)
          .join(', ')}`,
      });
    }
  }
  const connectorThread = parseWindows(e.LIMIT_CONNECTOR_THREAD, problems);
  const secretsKey = parseSecretsKey(e.SECRETS_KEY, problems);
  if (e.METRICS_TOKEN !== '' && !/^[\x21-\x7e]{16,512}$/.test(e.METRICS_TOKEN)) {
    problems.push({
      variable: 'METRICS_TOKEN',
      message: 'must be 16 to 512 printable characters without spaces (openssl rand -base64 32)',
    });
  }
  let metricsPort: number | undefined;
  if (e.METRICS_PORT !== '') {
    metricsPort = /^\d{1,5}$/.test(e.METRICS_PORT) ? Number(e.METRICS_PORT) : NaN;
    if (!(metricsPort >= 0 && metricsPort <= 65535))
      problems.push({ variable: 'METRICS_PORT', message: `must be a port number 0-65535 or empty, got "${e.METRICS_PORT}"` });
    else if (metricsPort !== 0 && metricsPort === e.PORT)
      problems.push({ variable: 'METRICS_PORT', message: 'must differ from PORT (it is a separate listener)' });
  }

  if (problems.length > 0) throw new ConfigError(problems);

  return {
    nodeEnv: e.NODE_ENV,
    version: packageVersion(),
    http: { port: e.PORT, host: e.HOST === '' ? undefined : e.HOST },
    logLevel: e.LOG_LEVEL,
    stateDir: e.STATE_DIR,
    bot: {
      appId: e.MicrosoftAppId,
      appPassword: e.MicrosoftAppPassword,
      appType,
      tenantId: e.MicrosoftAppTenantId,
      overrides,
    },
    timeZone: e.BOT_TIMEZONE,
    locale: e.BOT_LOCALE,
    publicHostname: e.PUBLIC_HOSTNAME,
    teamsApp: {
      developerName: e.TEAMS_APP_DEVELOPER_NAME,
      websiteUrl: e.TEAMS_APP_WEBSITE_URL,
      privacyUrl: e.TEAMS_APP_PRIVACY_URL,
      termsOfUseUrl: e.TEAMS_APP_TERMS_URL,
    },
    bill: {
      baseUrl: e.BILL_BASE_URL,
      spendBaseUrl: e.BILL_SPEND_BASE_URL || e.BILL_BASE_URL,
      eventsBaseUrl,
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
      graphAppPerSecond: e.LIMIT_GRAPH_APP_PER_SECOND,
      graphTenantPerSecond: e.LIMIT_GRAPH_TENANT_PER_SECOND,
      graphTeamPerSecond: e.LIMIT_GRAPH_TEAM_PER_SECOND,
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
    secretsKey,
    metrics: { token: e.METRICS_TOKEN, port: metricsPort, host: e.METRICS_HOST || '127.0.0.1' },
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
