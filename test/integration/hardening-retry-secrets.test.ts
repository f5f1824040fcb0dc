// A command whose arguments may be a secret (the registry's secretArgs, e.g. "connect <token>") is never echoed back:
// when it fails, its error card's "Try again" carries the command without what was typed after it. Cards are seen by
// everyone in the conversation and kept by Teams.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { ConnectorStandIn } from '../harness/connector.js';
import { channelMessage, groupChatMessage, personalMessage } from '../harness/activities.js';
import { registerSecrets } from '../harness/secretScan.js';
import { DependencyUnavailable } from '../../src/errors.js';

const TYPED = `tok-${randomBytes(12).toString('hex')}`;
registerSecrets(() => [TYPED]);

let bot: TestBot;
beforeAll(async () => {
  bot = await startBot({ env: { SECRETS_KEY: randomBytes(32).toString('base64'), USER_COMMANDS_PER_MINUTE: '10000', LOG_LEVEL: 'info' } });
});
afterAll(async () => {
  await bot.close();
});

/** Every `data` of every action in a card (buttons, and buttons inside containers and action sets). */
function actionData(node: unknown, out: unknown[] = []): unknown[] {
  if (Array.isArray(node)) for (const n of node) actionData(n, out);
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (typeof o.type === 'string' && o.type.startsWith('Action.') && 'data' in o) out.push(o.data);
    for (const v of Object.values(o)) actionData(v, out);
  }
  return out;
}

describe('a failing command with secret arguments', () => {
  it('the error card for "connect <token>" in a personal chat, a channel and a group chat offers Try again without the typed token', async () => {
    const secretCommands = bot.app.registry.list().filter((c) => c.secretArgs);
    expect(secretCommands.map((c) => c.name)).toContain('connect');
    const failures = [new Error('state store lost its connection'), new DependencyUnavailable('state store')];
    const bindings = bot.app.orgBindings;
    const resolve = bindings.resolve.bind(bindings);
    try {
      for (const command of secretCommands) {
        for (const failure of failures) {
          // The store fails while the command runs: what an error card is for.
          bindings.resolve = async () => {
            throw failure;
          };
          const activities = [
            personalMessage(`${command.name} ${TYPED}`, { serviceUrl: bot.connector.url }),
            channelMessage(`${command.name} ${TYPED}`, { serviceUrl: bot.connector.url }),
            groupChatMessage(`${command.name} ${TYPED}`, {
              serviceUrl: bot.connector.url,
              chat: `19:chat-${randomBytes(4).toString('hex')}@thread.v2`,
            }),
          ];
          for (const activity of activities) {
            const from = bot.connector.messages(activity.conversation.id).length;
            expect((await bot.send(activity)).status).toBe(200);
            const replies = await bot.connector.waitForMessages(from + 1, activity.conversation.id);
            const card = ConnectorStandIn.card(replies.at(-1)!);
            const where = `${command.name} in ${activity.conversation.conversationType} (${failure.name})`;
            const data = actionData(card);
            // The card is an error card with a Try again, which runs the bare command.
            expect(data, where).toContainEqual(expect.objectContaining({ verb: 'run', command: command.name }));
            expect(JSON.stringify(data), where).not.toContain(TYPED);
            expect(JSON.stringify(replies.at(-1)!.body), where).not.toContain(TYPED);
          }
        }
      }
    } finally {
      bindings.resolve = resolve;
    }
  });

  it('a mistyped "conect <token>" is answered with a suggestion to run "connect", and the card carries no part of the token', async () => {
    for (const typo of ['conect', 'connct', 'Connect,']) {
      const activity = personalMessage(`${typo} ${TYPED}`, { serviceUrl: bot.connector.url });
      const from = bot.connector.messages(activity.conversation.id).length;
      expect((await bot.send(activity)).status).toBe(200);
      const replies = await bot.connector.waitForMessages(from + 1, activity.conversation.id);
      const body = replies.at(-1)!.body;
      const data = actionData(ConnectorStandIn.card(replies.at(-1)!));
      expect(data, typo).toContainEqual(expect.objectContaining({ verb: 'run', command: 'connect' }));
      expect(JSON.stringify(body), typo).not.toContain(TYPED);
      expect(JSON.stringify(body), typo).not.toContain(TYPED.slice(0, 20));
    }
  });

  it('a command without secret arguments keeps them in its Try again', async () => {
    const bindings = bot.app.orgBindings;
    const resolve = bindings.resolve.bind(bindings);
    bindings.resolve = async () => {
      throw new Error('state store lost its connection');
    };
    try {
      const res = await bot.say('vendor Acme');
      expect(res.status).toBe(200);
      const [reply] = await bot.connector.waitForMessages(1, res.activity.conversation.id);
      expect(actionData(ConnectorStandIn.card(reply!))).toContainEqual(expect.objectContaining({ verb: 'run', command: 'vendor Acme' }));
    } finally {
      bindings.resolve = resolve;
    }
  });
});
