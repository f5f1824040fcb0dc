// Starts the real bot (restify + CloudAdapter) on a free port with a connector stand-in and captured logs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, type BillbridgeApp, type BuildOptions } from '../../src/app.js';
import { configSecrets, loadConfig } from '../../src/config.js';
import { channelMessage, type ChannelOpts } from './activities.js';
import { ConnectorStandIn } from './connector.js';
import { LogCapture } from './logs.js';
import { post, type HttpAnswer } from './net.js';
import { LoginStandIn, OpenIdIssuer } from './openid.js';
import { registerSecrets } from './secretScan.js';

export interface TestBot {
  app: BillbridgeApp;
  url: string;
  connector: ConnectorStandIn;
  logs: LogCapture;
  stateDir: string;
  /** POSTs an activity to /api/messages. */
  send(activity: unknown, headers?: Record<string, string>): Promise<HttpAnswer>;
  /** POSTs a channel message "@billbridge <text>" and returns the HTTP answer. */
  say(text: string, opts?: Partial<ChannelOpts>): Promise<HttpAnswer & { activity: ReturnType<typeof channelMessage> }>;
  close(): Promise<void>;
}

export interface StartOptions extends BuildOptions {
  env?: Record<string, string>;
  /** Reuse a connector (several bots, or restarts). */
  connector?: ConnectorStandIn;
  /** Reuse a state directory (restarts). */
  stateDir?: string;
}

function testEnv(stateDir: string, env: Record<string, string> = {}): Record<string, string> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    STATE_DIR: stateDir,
    LOG_LEVEL: 'debug',
    NODE_ENV: 'test',
    ...env,
  };
}

export async function startBot(opts: StartOptions = {}): Promise<TestBot> {
  const stateDir = opts.stateDir ?? mkdtempSync(join(tmpdir(), 'billbridge-test-'));
  const ownsState = !opts.stateDir;
  const connector = opts.connector ?? (await new ConnectorStandIn().start());
  const ownsConnector = !opts.connector;
  const logs = new LogCapture();
  const config = loadConfig(testEnv(stateDir, opts.env));
  const app = await buildApp(config, { logDestination: logs, ...opts });
  // The secret scan looks for these in every captured log line: config secrets, what the app registered at run
  // time, the embedded sandbox's credentials and every sessionId it issued (its /__sandbox/stats list).
  registerSecrets(() => {
    const sandbox = app.sandbox;
    const demo = sandbox?.credentials;
    return [
      ...configSecrets(app.config),
      ...app.secrets.list(),
      demo?.password,
      demo?.devKey,
      demo?.spendApiToken,
      ...(sandbox?.stats().sessionsIssued ?? []),
    ];
  });
  const url = await app.listen();
  const messagesUrl = `${url}/api/messages`;
  return {
    app,
    url,
    connector,
    logs,
    stateDir,
    send: (activity, headers) => post(messagesUrl, activity, headers),
    async say(text, o = {}) {
      const activity = channelMessage(text, { serviceUrl: connector.url, ...o });
      const res = await post(messagesUrl, activity);
      return { ...res, activity };
    },
    async close() {
      await app.close();
      if (ownsConnector) await connector.stop();
      if (ownsState) rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

export interface AuthenticatedBot extends TestBot {
  /** The Bot Framework issuer the bot checks inbound tokens against; it mints them for tests. */
  issuer: OpenIdIssuer;
  /** Stands in for login.microsoftonline.com (the bot's outbound tokens). */
  login: LoginStandIn;
}

/**
 * The bot with botbuilder's production token checks for `appId` in `tenant`, against a local issuer and login
 * stand-in; close() stops all three. Tests of inbound authentication share it so they check the same set-up.
 */
export async function startAuthenticatedBot(appId: string, tenant: string, opts: StartOptions = {}): Promise<AuthenticatedBot> {
  const issuer = await OpenIdIssuer.start();
  const login = (await LoginStandIn.start()).intercept();
  let bot: TestBot;
  try {
    bot = await startBot({ ...opts, env: { ...issuer.env(appId, tenant), ...opts.env } });
  } catch (err) {
    await login.stop();
    await issuer.stop();
    throw err;
  }
  return {
    ...bot,
    issuer,
    login,
    async close() {
      await bot.close();
      await login.stop();
      await issuer.stop();
    },
  };
}
