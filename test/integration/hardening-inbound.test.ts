// Unauthenticated traffic is refused before it costs the bot anything that Teams' turns need: a forged or missing
// token never waits in (or delays) the turn queue.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { headersOnly, postFrom } from '../harness/net.js';
import { startAuthenticatedBot, type AuthenticatedBot } from '../harness/bot.js';
import { channelMessage, TENANT } from '../harness/activities.js';
import type { OpenIdIssuer } from '../harness/openid.js';

const APP_ID = '5b0e8a64-2c1f-4c8e-9d7a-1f2e3d4c5b6a';

let issuer: OpenIdIssuer;
let bot: AuthenticatedBot;

beforeAll(async () => {
  bot = await startAuthenticatedBot(APP_ID, TENANT);
  ({ issuer } = bot);
});
afterAll(async () => {
  await bot.close();
});

const valid = () => issuer.token({ aud: APP_ID, serviceUrl: bot.connector.url });
const forged = () => issuer.token({ aud: APP_ID, serviceUrl: bot.connector.url, signWith: 'unpublished', kid: issuer.kid });

function help(authorization: string | undefined) {
  const activity = channelMessage('help', { serviceUrl: bot.connector.url });
  return { activity, answer: bot.send(activity, authorization === undefined ? {} : { authorization }) };
}

/** The answer, or a rejection naming what was still pending after `ms` (a bound on waiting, not a sleep). */
function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

describe('/api/messages refuses unauthenticated requests before the turn queue', () => {
  it("while Teams' turns are held in the queue, forged and missing tokens are answered 401 at once and never queue", async () => {
    const pacer = bot.app.adapter.pacer;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const next = vi.spyOn(pacer, 'next').mockImplementation(() => held);
    try {
      const teams = help(`Bearer ${await valid()}`);
      await vi.waitFor(() => expect(next).toHaveBeenCalledTimes(1));

      for (const authorization of [
        `Bearer ${await forged()}`,
        undefined,
        'Bearer not-a-jwt',
        `Basic ${Buffer.from('a:b').toString('base64')}`,
      ]) {
        const res = await within(
          3_000,
          `a request with authorization ${authorization?.slice(0, 12) ?? 'none'}`,
          help(authorization).answer,
        );
        expect(res.status).toBe(401);
        expect(res.json).toEqual({ error: 'Unauthorized' });
      }
      // Only the authenticated turn ever asked the pacer for a slot.
      expect(next).toHaveBeenCalledTimes(1);

      release();
      expect((await teams.answer).status).toBe(200);
      await bot.connector.waitForMessages(1, teams.activity.conversation.id);
    } finally {
      release();
      next.mockRestore();
    }
  });

  it('a flood of 300 forged requests puts nothing in the queue ahead of an authenticated turn', async () => {
    const pacer = bot.app.adapter.pacer;
    const next = vi.spyOn(pacer, 'next');
    try {
      const token = await forged();
      // The flood comes from another address than Teams' connector (127.0.0.1).
      const flood = Array.from({ length: 300 }, () =>
        postFrom('127.0.0.4', `${bot.url}/api/messages`, channelMessage('help', { serviceUrl: bot.connector.url }), {
          authorization: `Bearer ${token}`,
        }),
      );
      const teams = help(`Bearer ${await valid()}`);
      const statuses = await Promise.all(flood.map((p) => p.then((r) => r.status)));
      // Refused for the token, or (once the sender's byte budget is spent) before its body is read.
      expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
      expect((await teams.answer).status).toBe(200);
      await bot.connector.waitForMessages(1, teams.activity.conversation.id);
      expect(next).toHaveBeenCalledTimes(1);
    } finally {
      next.mockRestore();
    }
  });

  it('a request without a bearer token is refused before its body is read', async () => {
    // Headers promise 200 KB that never come: only an answer given without reading the body arrives.
    const res = await within(
      3_000,
      'a tokenless request with an unsent body',
      headersOnly(`${bot.url}/api/messages`, { 'content-type': 'application/json', 'content-length': String(200 * 1024) }),
    );
    expect(res).toEqual({ status: 401, body: { error: 'Unauthorized' } });
  });

  it("a sender of forged tokens gets 429 after its byte budget, before its body is read, while Teams' turns get through", async () => {
    const attacker = '127.0.0.5';
    const token = await forged();
    let sent = 0;
    let status = 0;
    while (status !== 429 && sent < 600) {
      status = (
        await postFrom(attacker, `${bot.url}/api/messages`, channelMessage('help', { serviceUrl: bot.connector.url }), {
          authorization: `Bearer ${token}`,
        })
      ).status;
      sent++;
      if (status !== 429) expect(status).toBe(401);
    }
    expect(status, `${sent} forged posts and never a 429`).toBe(429);
    expect(sent).toBeLessThan(400);
    const probe = await within(
      3_000,
      'a forged post with an unsent body',
      headersOnly(
        `${bot.url}/api/messages`,
        { 'content-type': 'application/json', 'content-length': String(200 * 1024), authorization: `Bearer ${token}` },
        { localAddress: attacker },
      ),
    );
    expect(probe.status).toBe(429);
    const teams = help(`Bearer ${await valid()}`);
    expect((await teams.answer).status).toBe(200);
    await bot.connector.waitForMessages(1, teams.activity.conversation.id);
  });
});
