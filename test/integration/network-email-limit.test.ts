// BILL sends at most 5 emails a minute from the endpoints that send them (network invitations): billbridge keeps that
// budget in the shared limiter, so a sixth invitation within the minute never reaches BILL and the person who clicked
// is told when to try again. The real bot over HTTP, the embedded sandbox, the connector stand-in.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { DEFAULT_USER, channelMessage, executeInvoke, personalMessage } from '../harness/activities.js';
import { sandboxControlOk } from '../harness/sandbox.js';
import { registerSecrets } from '../harness/secretScan.js';
import { expectValidCard, factsOf, textOf } from '../harness/finance.js';
import { APPROVAL_VERBS, CONNECT_INPUTS } from '../../src/features/approvals/cards.js';

let bot: TestBot;
const tokens: string[] = [];
const sandbox = () => bot.app.sandbox!;

async function click(
  data: Record<string, unknown>,
  base: Parameters<typeof executeInvoke>[1] = channelMessage('', { serviceUrl: bot.connector.url }),
) {
  const res = await bot.send(executeInvoke(data, base, { from: DEFAULT_USER, replyToId: 'card-1' }));
  expect(res.status).toBe(200);
  const card = res.json?.value as Record<string, unknown>;
  expectValidCard(card);
  return card;
}

beforeAll(async () => {
  bot = await startBot({ env: { SECRETS_KEY: randomBytes(32).toString('base64') } });
  registerSecrets(() => tokens);
  const dana = sandbox()
    .org.users.all()
    .find((u) => u.role === 'ADMINISTRATOR')!;
  const token = await sandboxControlOk(sandbox().url, 'POST', `/users/${dana.id}/sync-tokens`, {});
  tokens.push(String(token?.value));
  const linked = await click(
    { verb: APPROVAL_VERBS.connect, [CONNECT_INPUTS.tokenName]: String(token?.name), [CONNECT_INPUTS.tokenValue]: String(token?.value) },
    personalMessage('', { serviceUrl: bot.connector.url, from: DEFAULT_USER }),
  );
  expect(textOf(linked)).toContain('Connected to BILL');
});
afterAll(async () => {
  await bot.close();
});

describe('the 5-a-minute email budget', () => {
  it('sends five email invitations in a minute, and answers the sixth with when to try again, sending nothing', async () => {
    const network = new Set(
      sandbox()
        .model.network.all()
        .map((b) => b.name.toLowerCase()),
    );
    // Six vendors outside the BILL network, with an email in BILL, not connected: each click is an email invitation.
    const six = sandbox()
      .org.vendors.all()
      .filter((v) => !v.archived && v.email && !network.has(v.name.toLowerCase()))
      .slice(0, 6);
    expect(six).toHaveLength(6);
    for (const v of six) {
      v.networkStatus = 'NOT_CONNECTED';
      sandbox().org.vendors.put(v);
    }
    const orgId = sandbox().credentials.orgId;
    const invites = bot.app.features.parties.invites!;
    const emailsBefore = sandbox().org.networkEmails.length;
    const answers = [];
    for (const v of six) answers.push(await click(invites.button(orgId, { kind: 'vendor', id: v.id }).data as Record<string, unknown>));
    for (const card of answers.slice(0, 5)) expect(factsOf(card)['BILL network']).toBe('invited, waiting for them to accept');
    const sixth = textOf(answers[5]!);
    expect(sixth).toContain('BILL email limit reached');
    expect(sixth).toMatch(/try again at \d{1,2}:\d{2}.* \(in \d+ s\)/);
    expect(sandbox().org.networkEmails.length - emailsBefore).toBe(5);
    expect(
      sandbox()
        .requests()
        .filter((r) => r.route === 'POST /v3/network/invitation/vendor/{id}/email'),
    ).toHaveLength(5);
    expect(six[5]!.networkStatus).toBe('NOT_CONNECTED');
  });
});
