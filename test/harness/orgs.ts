// Multi-organisation mode for tests: one BILL sandbox holding two organisations of the same BILL user, and the bot serving both.
import { expect } from 'vitest';
import type { SandboxOptions } from '../../src/sandbox/index.js';
import { seedDemoOrg } from '../../src/sandbox/seed.js';
import { channelMessage, teamIds, type Who } from './activities.js';
import { startBot, type StartOptions, type TestBot } from './bot.js';
import type { CardJson } from './cards.js';
import { ConnectorStandIn } from './connector.js';
import { startTestSandbox, type TestSandbox } from './sandbox.js';

export interface TwoOrgs {
  sandbox: TestSandbox;
  /** The sandbox's demo organisation: the bot's default (BILL_ORG_ID). */
  orgA: string;
  /** A second organisation (seed 'second-org') the same BILL user belongs to, with its own data. */
  orgB: string;
  /** Each organisation's own Spend & Expense API token (tokens are per organisation). */
  tokenA: string;
  tokenB: string;
}

/** Starts the sandbox and seeds the second organisation into it; stop it with `orgs.sandbox.stop()`. */
export async function startTwoOrgSandbox(opts: SandboxOptions = {}): Promise<TwoOrgs> {
  const sandbox = await startTestSandbox(opts);
  const c = sandbox.credentials;
  const b = seedDemoOrg(sandbox.sandbox.model, {
    seed: 'second-org',
    credentials: { username: c.username, password: c.password, devKey: c.devKey },
  });
  return { sandbox, orgA: c.orgId, orgB: b.orgId, tokenA: c.spendApiToken, tokenB: b.spendApiToken };
}

/**
 * The bot in multi-organisation mode over `orgs` (A is its default, both are allowed), with `adminAadObjectId` as its
 * billbridge admin; `opts.env` adds to that (tokens, webhook keys, tenants) or overrides it.
 */
export function startMultiOrgBot(orgs: TwoOrgs, adminAadObjectId: string, opts: StartOptions = {}): Promise<TestBot> {
  const c = orgs.sandbox.credentials;
  return startBot({
    ...opts,
    env: {
      BILL_BASE_URL: orgs.sandbox.baseUrl,
      BILL_DEV_KEY: c.devKey,
      BILL_USERNAME: c.username,
      BILL_PASSWORD: c.password,
      BILL_ORG_ID: orgs.orgA,
      BILL_ALLOWED_ORG_IDS: `${orgs.orgA},${orgs.orgB}`,
      ADMIN_AAD_OBJECT_IDS: adminAadObjectId,
      ...opts.env,
    },
  });
}

/** `text` typed by `from` in the channel of team `team` (see teamIds); resolves with the bot's card. */
export async function askInTeam(bot: TestBot, text: string, team: string, from: Who): Promise<CardJson> {
  const ids = teamIds(team);
  const activity = channelMessage(text, { serviceUrl: bot.connector.url, team: ids.team, channel: ids.channel, from });
  expect((await bot.send(activity)).status).toBe(200);
  const [reply] = await bot.connector.waitForMessages(1, activity.conversation.id);
  return ConnectorStandIn.card(reply!);
}
