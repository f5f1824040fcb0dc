// Every configuration variable refuses bad values by name, and the real entry point stops before it listens.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BOT_AUTH_OVERRIDE_KEYS, configVariables, ConfigError, loadConfig } from '../../src/config.js';

type Env = Record<string, string>;

const TENANT = 'aaaaaaaa-0000-4000-8000-000000000001';
const APP_ID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
/** A valid app registration (single tenant), to which one variable at a time is made wrong. */
const AUTHED: Env = {
  MicrosoftAppId: APP_ID,
  MicrosoftAppPassword: 'app-password-value',
  MicrosoftAppTenantId: TENANT,
  ALLOWED_TENANT_IDS: TENANT,
};
const BILL: Env = {
  BILL_DEV_KEY: 'dev-key-value',
  BILL_USERNAME: 'ap@example.com',
  BILL_PASSWORD: 'bill-password-value',
  BILL_ORG_ID: '00801ABCDEFGHIJKLMNO',
};
const without = (env: Env, name: string): Env => Object.fromEntries(Object.entries(env).filter(([k]) => k !== name));

/**
 * For every variable: environments in which it is wrong (each must be refused naming it), or why any value is
 * accepted. A variable added to config.ts without a row here fails the first test.
 */
const INVALID: Record<string, Env[] | { anyValue: string }> = {
  NODE_ENV: { anyValue: 'a label; production adds checks (see MicrosoftAppId and the auth overrides)' },
  PORT: [{ PORT: 'eighty' }, { PORT: '70000' }, { PORT: '-1' }, { PORT: '80.5' }],
  HOST: { anyValue: 'the listen address; a wrong one fails at listen with the OS error' },
  LOG_LEVEL: [{ LOG_LEVEL: 'verbose' }],
  STATE_DIR: { anyValue: 'a directory, created on start' },
  MicrosoftAppId: [{ ...AUTHED, MicrosoftAppId: 'billbridge-bot' }, { NODE_ENV: 'production' }],
  MicrosoftAppPassword: [without(AUTHED, 'MicrosoftAppPassword'), { ...AUTHED, MicrosoftAppType: 'UserAssignedMSI' }],
  MicrosoftAppType: [{ ...AUTHED, MicrosoftAppType: 'Anonymous' }],
  MicrosoftAppTenantId: [without(AUTHED, 'MicrosoftAppTenantId')],
  BOT_TIMEZONE: [{ BOT_TIMEZONE: 'Mars/Olympus_Mons' }],
  BOT_LOCALE: [{ BOT_LOCALE: 'not a locale' }],
  PUBLIC_HOSTNAME: [{ PUBLIC_HOSTNAME: 'https://bot.example.com/api' }],
  TEAMS_APP_DEVELOPER_NAME: [{ TEAMS_APP_DEVELOPER_NAME: 'x'.repeat(33) }],
  TEAMS_APP_WEBSITE_URL: [{ TEAMS_APP_WEBSITE_URL: 'http://example.com' }, { TEAMS_APP_WEBSITE_URL: 'example.com' }],
  TEAMS_APP_PRIVACY_URL: [{ TEAMS_APP_PRIVACY_URL: 'http://example.com/privacy' }],
  TEAMS_APP_TERMS_URL: [{ TEAMS_APP_TERMS_URL: 'ftp://example.com/terms' }],
  BILL_BASE_URL: [
    { BILL_BASE_URL: 'https://gateway.stage.bill.com/connect/v3' },
    { BILL_BASE_URL: 'gateway.stage.bill.com' },
    { BILL_BASE_URL: 'https://user:pw@gateway.stage.bill.com/connect' },
  ],
  BILL_SPEND_BASE_URL: [{ BILL_SPEND_BASE_URL: 'not a url' }],
  BILL_EVENTS_BASE_URL: [{ BILL_EVENTS_BASE_URL: 'https://gateway.stage.bill.com/connect-events?x=1' }],
  BILL_DEV_KEY: [without(BILL, 'BILL_DEV_KEY')],
  BILL_USERNAME: [without(BILL, 'BILL_USERNAME')],
  BILL_PASSWORD: [without(BILL, 'BILL_PASSWORD')],
  BILL_ORG_ID: [without(BILL, 'BILL_ORG_ID')],
  BILL_SPEND_API_TOKEN: { anyValue: 'an opaque token issued by BILL' },
  BILL_ALLOWED_ORG_IDS: [{ ...BILL, BILL_ALLOWED_ORG_IDS: '00802ZZZZZZZZZZZZZZZ' }],
  BILL_WEBHOOK_SECURITY_KEY: { anyValue: 'an opaque key issued by BILL' },
  BILL_SPEND_API_TOKENS: [
    { ...BILL, BILL_SPEND_API_TOKENS: 'no-colon-here' },
    { ...BILL, BILL_SPEND_API_TOKENS: '00802ZZZZZZZZZZZZZZZ:token' },
    { BILL_SPEND_API_TOKENS: '00801ABCDEFGHIJKLMNO:token' },
  ],
  BILL_WEBHOOK_SECURITY_KEYS: [
    { ...BILL, BILL_WEBHOOK_SECURITY_KEYS: '00801ABCDEFGHIJKLMNO:' },
    { ...BILL, BILL_WEBHOOK_SECURITY_KEYS: '00802ZZZZZZZZZZZZZZZ:key' },
  ],
  BILL_TIMEOUT_MS: [{ BILL_TIMEOUT_MS: '10' }, { BILL_TIMEOUT_MS: '20s' }],
  SANDBOX_LATENCY_MS: [{ SANDBOX_LATENCY_MS: '-5' }],
  SANDBOX_INVOICES: [{ SANDBOX_INVOICES: '1.5' }],
  SANDBOX_BILLS: [{ SANDBOX_BILLS: '2000000' }],
  LIMIT_BILL_REQUESTS_PER_HOUR: [{ LIMIT_BILL_REQUESTS_PER_HOUR: '0' }],
  LIMIT_BILL_CONCURRENCY: [{ LIMIT_BILL_CONCURRENCY: '101' }],
  LIMIT_BILL_LOGINS_PER_HOUR: [{ LIMIT_BILL_LOGINS_PER_HOUR: 'many' }],
  LIMIT_SPEND_PER_MINUTE: [{ LIMIT_SPEND_PER_MINUTE: '0' }],
  LIMIT_CONNECTOR_THREAD: [
    { LIMIT_CONNECTOR_THREAD: '7 per second' },
    { LIMIT_CONNECTOR_THREAD: '7/1s,8/2d' },
    // A count or a window of 0 let every send through (the opposite of a limit); a window past a day is not one Teams has.
    { LIMIT_CONNECTOR_THREAD: '0/1s' },
    { LIMIT_CONNECTOR_THREAD: '7/1s,8/0s' },
    { LIMIT_CONNECTOR_THREAD: '1/99999999999999h' },
  ],
  COMMAND_WAIT_MS: [{ COMMAND_WAIT_MS: '20000' }],
  USER_COMMANDS_PER_MINUTE: [{ USER_COMMANDS_PER_MINUTE: '0' }],
  LIMIT_BILL_LOGINS_RESERVED_PERCENT: [{ LIMIT_BILL_LOGINS_RESERVED_PERCENT: '-1' }, { LIMIT_BILL_LOGINS_RESERVED_PERCENT: '100' }],
  LINK_ATTEMPTS_PER_HOUR: [{ LINK_ATTEMPTS_PER_HOUR: '0' }],
  LINK_COOLDOWN_S: [{ LINK_COOLDOWN_S: 'soon' }],
  CACHE_TTL_LIST_S: [{ CACHE_TTL_LIST_S: '-1' }],
  CACHE_TTL_PUSHED_S: [{ CACHE_TTL_PUSHED_S: 'soon' }, { CACHE_TTL_PUSHED_S: '86401' }],
  CACHE_TTL_OBJECT_S: [{ CACHE_TTL_OBJECT_S: '86401' }],
  CACHE_TTL_NAMES_S: [{ CACHE_TTL_NAMES_S: '1h' }],
  CACHE_MAX_ENTRIES: [{ CACHE_MAX_ENTRIES: '5' }],
  GRAPH_BASE_URL: [{ GRAPH_BASE_URL: 'graph.microsoft.com/v1.0' }],
  GRAPH_AUTHORITY_HOST: [{ GRAPH_AUTHORITY_HOST: 'ftp://login.microsoftonline.com' }],
  ALLOWED_TENANT_IDS: [without(AUTHED, 'ALLOWED_TENANT_IDS'), { ...AUTHED, ALLOWED_TENANT_IDS: 'contoso.onmicrosoft.com' }],
  ADMIN_AAD_OBJECT_IDS: [{ ADMIN_AAD_OBJECT_IDS: 'dana@contoso.com' }],
  REDIS_URL: [{ REDIS_URL: 'localhost:6379' }],
  SECRETS_KEY: [{ SECRETS_KEY: 'too-short' }],
  METRICS_TOKEN: [{ METRICS_TOKEN: 'too-short' }, { METRICS_TOKEN: 'a token with spaces in it' }],
  METRICS_PORT: [{ METRICS_PORT: 'nine' }, { METRICS_PORT: '70000' }, { PORT: '9100', METRICS_PORT: '9100' }],
  // Any address; one beyond this host (not loopback) serves /metrics to the network, so it needs METRICS_TOKEN.
  METRICS_HOST: [
    { METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' },
    { METRICS_PORT: '9464', METRICS_HOST: '::' },
    { METRICS_PORT: '0', METRICS_HOST: '10.0.0.7' },
  ],
};

function problemsOf(env: Env): Array<{ variable: string; message: string }> {
  try {
    loadConfig({ STATE_DIR: './.data', ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  return [];
}

describe('loadConfig', () => {
  it('has a row for every variable it reads', () => {
    expect(Object.keys(INVALID).sort()).toEqual([...configVariables()].sort());
  });

  const rows = Object.entries(INVALID).flatMap(([name, row]) => (Array.isArray(row) ? row.map((env, i) => [name, i, env] as const) : []));
  it.each(rows)('refuses a bad %s (case %i) with a ConfigError naming it', (name, _i, env) => {
    let error: unknown;
    try {
      loadConfig({ STATE_DIR: './.data', ...env });
    } catch (err) {
      error = err;
    }
    expect(error, `accepted ${JSON.stringify(env)}`).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((p) => p.variable)).toContain(name);
    expect((error as ConfigError).message).toContain(`${name}: `);
    // The message says what is expected, never just "invalid".
    expect(problems.find((p) => p.variable === name)!.message.length).toBeGreaterThan(10);
  });

  const free = Object.entries(INVALID)
    .filter(([, row]) => !Array.isArray(row))
    .map(([name]) => name);
  it.each(free)('%s takes any text', (name) => {
    expect(problemsOf({ [name]: 'Ünïcødé value / with spaces' })).toEqual([]);
  });

  it.each([...BOT_AUTH_OVERRIDE_KEYS])('refuses the botbuilder auth override %s when NODE_ENV=production', (key) => {
    const problems = problemsOf({ ...AUTHED, NODE_ENV: 'production', [key]: 'http://127.0.0.1:1/override' });
    expect(problems.map((p) => p.variable)).toEqual([key]);
  });

  it('accepts the auth overrides outside production, for tests', () => {
    const config = loadConfig({
      ...AUTHED,
      STATE_DIR: './.data',
      ToBotFromChannelOpenIdMetadataUrl: 'http://127.0.0.1:1/v1/.well-known/openidconfiguration',
    });
    expect(config.bot.overrides).toEqual({ ToBotFromChannelOpenIdMetadataUrl: 'http://127.0.0.1:1/v1/.well-known/openidconfiguration' });
  });

  it('lists every problem at once, not just the first', () => {
    const problems = problemsOf({
      ...AUTHED,
      MicrosoftAppTenantId: '',
      ALLOWED_TENANT_IDS: '',
      BOT_TIMEZONE: 'Nowhere/Land',
      REDIS_URL: 'localhost',
    });
    expect(problems.map((p) => p.variable).sort()).toEqual(['ALLOWED_TENANT_IDS', 'BOT_TIMEZONE', 'MicrosoftAppTenantId', 'REDIS_URL']);
  });

  it('lists a value that cannot be read beside the other problems, and still refuses to start', () => {
    const problems = problemsOf({ ...AUTHED, PORT: 'eighty', LOG_LEVEL: 'loud', ALLOWED_TENANT_IDS: '', BOT_TIMEZONE: 'Nowhere/Land' });
    expect(problems.map((p) => p.variable).sort()).toEqual(['ALLOWED_TENANT_IDS', 'BOT_TIMEZONE', 'LOG_LEVEL', 'PORT']);
  });

  it('a value that cannot be read is the only problem named, not what its default would require of the others', () => {
    const { MicrosoftAppTenantId: _tenant, ...multiTenant } = AUTHED;
    expect(problemsOf({ ...multiTenant, MicrosoftAppType: 'Multi-Tenant' })).toEqual([
      { variable: 'MicrosoftAppType', message: 'must be one of SingleTenant, MultiTenant, UserAssignedMSI, got "Multi-Tenant"' },
    ]);
    expect(problemsOf({ PORT: '3978x', METRICS_PORT: '3978' }).map((p) => p.variable)).toEqual(['PORT']);
  });

  it.each(['BILL_SPEND_API_TOKENS', 'BILL_WEBHOOK_SECURITY_KEYS'])(
    '%s written the wrong way round (secret:organisation) is refused without echoing the secret',
    (name) => {
      const secret = 'Zq9SecretWrittenFirst0123456789';
      const problems = problemsOf({ ...BILL, [name]: `${secret}:${BILL.BILL_ORG_ID}` });
      expect(problems.map((p) => p.variable)).toEqual([name]);
      expect(problems[0]!.message).toMatch(/entry 1/);
      expect(JSON.stringify(problems)).not.toContain('Zq9Secret');
    },
  );

  it.each([
    'BILL_BASE_URL',
    'BILL_SPEND_BASE_URL',
    'BILL_EVENTS_BASE_URL',
    'GRAPH_BASE_URL',
    'GRAPH_AUTHORITY_HOST',
    'TEAMS_APP_WEBSITE_URL',
  ])('%s holding a password in a URL that does not parse is refused without echoing the password', (name) => {
    for (const value of ['https://user:Zq9Password@gate way.example.com/', 'https://user:Zq9Password@[::1', 'user:Zq9Password@host name']) {
      const problems = problemsOf({ [name]: value });
      expect(problems.map((p) => p.variable)).toEqual([name]);
      expect(JSON.stringify(problems), value).not.toContain('Zq9Password');
    }
  });

  it('METRICS_HOST beyond this host is accepted with METRICS_TOKEN, and a loopback one without it', () => {
    const token = 'a-metrics-token-of-32-characters';
    expect(problemsOf({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0', METRICS_TOKEN: token })).toEqual([]);
    for (const host of ['127.0.0.1', '127.0.0.53', '::1', 'localhost', ''])
      expect(problemsOf({ METRICS_PORT: '9464', METRICS_HOST: host }), host).toEqual([]);
    // Without METRICS_PORT there is no listener to bind.
    expect(problemsOf({ METRICS_HOST: '0.0.0.0' })).toEqual([]);
  });

  it.each(['NODE_ENV', 'STATE_DIR', 'BOT_TIMEZONE', 'BOT_LOCALE', 'TEAMS_APP_DEVELOPER_NAME', 'LIMIT_CONNECTOR_THREAD', 'METRICS_HOST'])(
    'an empty %s (NAME= in an env file) means its default, as when it is not set',
    (name) => {
      expect(loadConfig({ STATE_DIR: './.data', [name]: ' ' })).toEqual(loadConfig({ STATE_DIR: './.data' }));
      expect(loadConfig({ [name]: '', ...(name === 'STATE_DIR' ? {} : { STATE_DIR: './.data' }) })).toEqual(
        loadConfig({ STATE_DIR: './.data' }),
      );
    },
  );

  it('a production deployment with an app id, its tenants and BILL credentials is accepted', () => {
    const config = loadConfig({
      ...AUTHED,
      ...BILL,
      NODE_ENV: 'production',
      STATE_DIR: './.data',
      ADMIN_AAD_OBJECT_IDS: '11111111-0000-4000-8000-00000000d0d0',
    });
    expect(config.bot.appId).toBe(APP_ID);
    expect(config.access.allowedTenantIds).toEqual([TENANT]);
    expect(config.bill.credentials?.orgId).toBe(BILL.BILL_ORG_ID);
  });
});

describe('the real entry point (tsx src/index.ts) with a bad environment', () => {
  const repo = resolve(import.meta.dirname, '../..');
  // An empty working directory: a developer's own .env must not change what is tested.
  const cwd = mkdtempSync(join(tmpdir(), 'billbridge-config-'));
  afterAll(() => rmSync(cwd, { recursive: true, force: true }));

  function start(env: Env): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((done, fail) => {
      // The project's own tsx (what `npx tsx` runs), started outside the repository so no .env is read.
      const child = spawn(join(repo, 'node_modules/.bin/tsx'), [join(repo, 'src/index.ts')], {
        cwd,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? cwd,
          PORT: '0',
          HOST: '127.0.0.1',
          STATE_DIR: join(cwd, 'state'),
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        fail(new Error(`still running after 45 s (it should have refused to start): ${stdout}`));
      }, 45_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        done({ code, stdout, stderr });
      });
    });
  }

  it('exits 1 naming each bad variable, and never listens', async () => {
    const malformed: Env = {
      PORT: 'eighty',
      LOG_LEVEL: 'loud',
      BILL_TIMEOUT_MS: '5',
      GRAPH_BASE_URL: 'graph',
      USER_COMMANDS_PER_MINUTE: '0',
    };
    const inconsistent: Env = {
      MicrosoftAppId: APP_ID,
      MicrosoftAppPassword: 'app-password-value',
      MicrosoftAppTenantId: TENANT,
      BOT_TIMEZONE: 'Nowhere/Land',
      SECRETS_KEY: 'short',
    };
    const production: Env = { NODE_ENV: 'production' };
    const runs = await Promise.all([start(malformed), start(inconsistent), start(production)]);
    const expected = [Object.keys(malformed), ['ALLOWED_TENANT_IDS', 'BOT_TIMEZONE', 'SECRETS_KEY'], ['MicrosoftAppId']];
    runs.forEach((run, i) => {
      expect(run.code, run.stderr).toBe(1);
      expect(run.stdout).not.toContain('listening');
      for (const name of expected[i]!) expect(run.stderr).toContain(`${name}: `);
      // The value of a secret is never echoed.
      expect(run.stderr).not.toContain('app-password-value');
    });
  }, 60_000);
});
