// `npm run webhooks -- setup --url https://<bot>/api/bill/webhooks | list | delete <id>`: the BILL webhook
// subscription that feeds billbridge, managed from a shell with the bot's own configuration (.env), BILL client,
// limiter and state store, so the key lands where the bot reads it. Admins in Teams can do the same with `webhooks`.
import { userInfo } from 'node:os';
import { request } from 'undici';
import { systemClock } from '../src/infra/clock.js';
import { ConfigError, configSecrets, loadConfig, readEnv, type Config } from '../src/config.js';
import { errorMessage, BillApiError } from '../src/errors.js';
import { createLogger, SecretRegistry } from '../src/infra/log.js';
import { SharedLimiter } from '../src/infra/limits/limiter.js';
import { BillGateway } from '../src/bill/gateway.js';
import { SqliteStateStore } from '../src/infra/state/sqliteStore.js';
import { RedisConnection } from '../src/infra/state/redisClient.js';
import { RedisStateStore } from '../src/infra/state/redisStore.js';
import type { StateStore } from '../src/infra/state/types.js';
import { AuditTrail } from '../src/infra/audit.js';
import { visible } from '../src/infra/visible.js';
import { WebhookKeys } from '../src/notify/keys.js';
import { commandLine, type CommandLine } from './args.js';
import { MAX_BILL_SUBSCRIPTIONS, WEBHOOK_PATH, webhookSetup, WebhookSetupError } from '../src/notify/setup.js';

const HELP = `billbridge webhooks — the BILL webhook subscription that sends events to billbridge.

Usage: npm run webhooks -- setup --url https://<your bot>${WEBHOOK_PATH} [--org <BILL organisation id>]
       npm run webhooks -- list [--org <id>]
       npm run webhooks -- delete <subscription id> [--org <id>]

  setup    creates BILL's subscription (POST {BILL_EVENTS_BASE_URL}/v3/subscriptions with an X-Idempotent-Key) for
           every event billbridge posts, or brings an existing one for that URL up to date; the security key BILL
           returns once is stored in the bot's state (sealed with SECRETS_KEY when set) and never printed.
           --url defaults to https://PUBLIC_HOSTNAME${WEBHOOK_PATH}. BILL allows ${MAX_BILL_SUBSCRIPTIONS} subscriptions per organisation.
  list     shows the organisation's subscriptions and whether billbridge holds each one's key.
  delete   deletes a subscription in BILL and the key billbridge kept for it.

Reads the same configuration as the bot (.env and the environment): BILL credentials, STATE_DIR or REDIS_URL,
SECRETS_KEY. With the file store (no REDIS_URL) run it while the bot is stopped, or use the admin command
"webhooks setup <url>" in Teams: a running bot keeps its state in memory and would not see the new key.`;

/** Messages carry BILL's words (a subscription's name, an error's text): shown with their control characters escaped. */
function fail(message: string, code = 1): never {
  process.stderr.write(`billbridge webhooks: ${visible(message)}\n`);
  process.exit(code);
}

/** A bot listening on this machine with the file store would overwrite (and never read) what we store. */
async function runningBot(config: Config): Promise<string | undefined> {
  if (config.redisUrl) return undefined;
  const host = config.http.host ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.http.port}/healthz`;
  try {
    const res = await request(url, { headersTimeout: 1_000, bodyTimeout: 1_000 });
    await res.body.dump();
    return res.statusCode < 500 ? url : undefined;
  } catch {
    return undefined;
  }
}

async function openState(config: Config, log: ReturnType<typeof createLogger>): Promise<{ state: StateStore; close: () => Promise<void> }> {
  if (!config.redisUrl) {
    let state: SqliteStateStore;
    try {
      state = new SqliteStateStore(config.stateDir, systemClock);
    } catch (err) {
      // Another billbridge holds STATE_DIR (a running bot), or the database cannot be opened: say which and stop.
      fail(errorMessage(err));
    }
    return { state, close: () => state.close() };
  }
  const redis = new RedisConnection({ url: config.redisUrl, log });
  const state = new RedisStateStore(redis, systemClock);
  const deadline = Date.now() + 5_000;
  while (!redis.ready() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (!redis.ready()) {
    await redis.close();
    fail(`Redis at ${redis.location} did not answer within 5 s`);
  }
  return {
    state,
    close: async () => {
      await state.close();
      await redis.close();
    },
  };
}

async function main(): Promise<void> {
  const cli: CommandLine = commandLine(
    'billbridge webhooks',
    HELP,
    { url: { type: 'string' }, org: { type: 'string' } },
    { allowPositionals: true },
  );
  const { positionals } = cli;
  const values = cli.values as { url?: string; org?: string };
  if (positionals.length === 0) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  const [verb, ...rest] = positionals;
  if (verb !== 'setup' && verb !== 'list' && verb !== 'delete') cli.fail(`unknown action "${String(verb).slice(0, 30)}"`);
  if (verb === 'delete' ? rest.length !== 1 : rest.length !== 0)
    cli.fail(verb === 'delete' ? 'delete takes one subscription id' : `${verb} takes no positional arguments`);

  let config: Config;
  try {
    config = loadConfig(readEnv());
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  const credentials = config.bill.credentials;
  if (!credentials) {
    fail(
      'BILL credentials are not set, so the bot runs against its embedded sandbox, which lives inside the bot process. Use the admin command "webhooks setup <url>" in Teams (or npm run chat) instead.',
    );
  }
  const orgId = values.org ?? credentials.orgId;
  if (config.bill.allowedOrgIds.length > 0 && !config.bill.allowedOrgIds.includes(orgId))
    fail(`organisation ${orgId} is not in BILL_ALLOWED_ORG_IDS`);
  if (verb !== 'list') {
    const bot = await runningBot(config);
    if (bot)
      fail(
        `a billbridge is answering at ${bot} with the file store: it would not see a key stored now. Stop it first, or use the admin command "webhooks ${verb}" in Teams.`,
      );
  }

  const secrets = new SecretRegistry(configSecrets(config));
  const log = createLogger({ level: config.logLevel === 'silent' ? 'silent' : 'warn', secrets, destination: process.stderr });
  const limiter = new SharedLimiter({ config, clock: systemClock, log });
  const bill = new BillGateway({
    backend: 'bill',
    bill: config.bill,
    user: { devKey: credentials.devKey, username: credentials.username, password: credentials.password },
    spendApiTokens: {},
    limiter,
    clock: systemClock,
    log,
    secrets,
  });
  const { state, close } = await openState(config, log);
  const keys = new WebhookKeys({
    state,
    clock: systemClock,
    log,
    secrets,
    secretsKey: config.secretsKey,
    refuseUnsealed: config.nodeEnv === 'production',
  });
  const setup = webhookSetup({ bill, keys, log, state, clock: systemClock });
  const audit = new AuditTrail({ store: state, clock: systemClock, log, scrub: (t) => secrets.scrub(t) });
  const actor = { userId: `cli:${userInfo().username}` };
  // Subscription names and URLs are BILL's: a name's ESC [ 2J must not clear the operator's screen.
  const out = (line: string) => process.stdout.write(`${visible(line)}\n`);
  try {
    if (verb === 'list') {
      const subs = await setup.list(orgId);
      out(`Organisation ${orgId}: ${subs.length} of ${MAX_BILL_SUBSCRIPTIONS} webhook subscriptions`);
      for (const s of subs) {
        out(
          `  ${s.id}  ${s.enabled ? 'enabled ' : 'DISABLED'}  ${s.notificationUrl}  (${s.events.length} events, ${s.keyStored ? 'key stored' : 'no key in billbridge'})  "${s.name}"`,
        );
      }
      if (config.bill.webhookSecurityKey)
        out('BILL_WEBHOOK_SECURITY_KEY is set: events signed with it are accepted whatever their subscription.');
    } else if (verb === 'setup') {
      const url = values.url ?? (config.publicHostname ? `https://${config.publicHostname}${WEBHOOK_PATH}` : undefined);
      if (!url) cli.fail('setup needs --url (or PUBLIC_HOSTNAME)');
      const result = await setup.setup(orgId, url);
      await audit.admin({
        ...actor,
        action: 'webhook.setup',
        orgId,
        result: 'ok',
        detail: { subscriptionId: result.subscription.id, outcome: result.action, via: 'cli' },
      });
      const what = { created: 'Created', updated: 'Updated', rotated: 'Re-keyed', unchanged: 'Already set up:' }[result.action];
      out(
        `${what} subscription ${result.subscription.id} -> ${result.subscription.notificationUrl} (${result.subscription.events.length} events).`,
      );
      out(
        config.secretsKey
          ? 'Its security key is stored sealed with SECRETS_KEY.'
          : 'Its security key is stored unencrypted in the state store: set SECRETS_KEY to seal keys at rest.',
      );
    } else {
      const [id] = rest;
      if (id === undefined) cli.fail('delete takes one subscription id');
      await setup.remove(orgId, id);
      await audit.admin({ ...actor, action: 'webhook.delete', orgId, result: 'ok', detail: { subscriptionId: id, via: 'cli' } });
      out(`Deleted subscription ${id}.`);
    }
  } catch (err) {
    await audit
      .admin({
        ...actor,
        action: `webhook.${verb}`,
        orgId,
        result: err instanceof WebhookSetupError ? 'refused' : 'error',
        detail: { via: 'cli' },
      })
      .catch(() => undefined);
    if (err instanceof WebhookSetupError) fail(err.message);
    if (err instanceof BillApiError)
      fail(
        `BILL refused: ${err.code ?? err.category} (HTTP ${err.status})${err.entries[0]?.message ? `: ${secrets.scrub(err.entries[0].message).slice(0, 200)}` : ''}`,
      );
    fail(secrets.scrub(errorMessage(err)));
  } finally {
    await bill.close().catch(() => undefined);
    await limiter.close();
    await close();
  }
}

main().catch((err: unknown) => fail(`failed: ${errorMessage(err)}`));
