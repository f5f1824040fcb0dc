// Hostile input on /api/messages: random and mutated Teams activities, deep JSON, huge strings, prototype pollution.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBot, type TestBot } from '../harness/bot.js';
import { channelMessage, executeInvoke, installationUpdate, personalMessage, TENANT } from '../harness/activities.js';
import { collectGarbage, deepArrays, deepObjects, fuzzSeed, mutate, randomJson, Rng } from '../harness/fuzz.js';
import { get, post, type HttpAnswer } from '../harness/net.js';
import { LoginStandIn, OpenIdIssuer } from '../harness/openid.js';
import { MESSAGE_BODY_LIMIT } from '../../src/http/server.js';
import { activityEnvelopeProblem } from '../../src/teams/adapter.js';

const SEED = fuzzSeed(8_2024_11);
const APP_ID = '4e3d2c1b-0a9f-4e8d-b7c6-a5b4c3d2e1f0';

let open: TestBot;
let authed: TestBot;
let issuer: OpenIdIssuer;
let login: LoginStandIn;

beforeAll(async () => {
  issuer = await OpenIdIssuer.start();
  login = (await LoginStandIn.start()).intercept();
  // Local mode (no app id): every request reaches the bot, so the fuzz exercises the bot's own code.
  open = await startBot({ env: { LOG_LEVEL: 'warn' } });
  authed = await startBot({ env: { ...issuer.env(APP_ID, TENANT), LOG_LEVEL: 'warn' } });
});
afterAll(async () => {
  await open.close();
  await authed.close();
  await login.stop();
  await issuer.stop();
});

type Body = Record<string, unknown> | string;

interface Shot {
  status: number;
  /** The request, kept (shortened) only when the answer was a 5xx, to report it. */
  request?: string;
  text?: string;
  /** The body made it past the envelope check (an object that looks like an activity). */
  wellFormed: boolean;
  invoke: boolean;
}

/**
 * Makes and sends `n` requests with at most `width` in flight. Requests are made one at a time and dropped once
 * answered, so the heap figures measure the bot, not the test holding thousands of bodies.
 */
async function fire(url: string, n: number, make: () => { body: Body; headers?: Record<string, string> }, width = 16): Promise<Shot[]> {
  const shots = new Array<Shot>(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        const { body, headers } = make();
        const res: HttpAnswer = await post(url, body, headers);
        const object = typeof body === 'object';
        shots[i] = {
          status: res.status,
          wellFormed: object && !activityEnvelopeProblem(body),
          invoke: object && body.type === 'invoke' && typeof body.name === 'string',
          ...(res.status >= 500 ? { request: (object ? JSON.stringify(body) : body).slice(0, 300), text: res.text.slice(0, 120) } : {}),
        };
      }
    }),
  );
  return shots;
}

function statusCounts(answers: Array<{ status: number }>): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

const INVALID_SERVICE_URLS = ['', 'not a url', 'ftp://127.0.0.1/', 'javascript:alert(1)', 42, null];

/** One hostile request for a bot whose connector stand-in is at `serviceUrl`. */
function hostile(rng: Rng, serviceUrl: string): Body {
  // A channel and a person per request: Teams' per-thread send limits and the per-person command limit would
  // otherwise turn most of the run into waiting or "one moment" cards instead of bot code.
  const n = rng.int(0, 2 ** 31);
  const from = { id: `29:fuzz-${n}`, name: 'Fuzz', aadObjectId: `f0000000-0000-4000-8000-${String(n).padStart(12, '0')}` };
  const where = { serviceUrl, channel: `19:fuzz-${n}@thread.tacv2`, from };
  const message = (text: string) => channelMessage(text, where);
  const bases: Array<() => Record<string, unknown>> = [
    () => message(rng.pick(['help', 'bills due', 'invoice 1042', 'hlep', '', 'status'])),
    () => personalMessage(rng.pick(['help', 'connect', 'link 00801ABC']), { serviceUrl, from }),
    () =>
      executeInvoke(
        { verb: rng.pick(['run', 'approve', 'deny', 'nope']), command: 'help', page: rng.pick([0, -1, 1e9, 'x']) },
        message(''),
      ),
    () => installationUpdate(rng.pick(['add', 'remove'] as const), { serviceUrl, name: `fuzz${n}`, from }),
    () => ({
      ...message('help'),
      type: rng.pick(['conversationUpdate', 'messageReaction', 'event', 'typing', 'endOfConversation', 'x'.repeat(300)]),
    }),
  ];
  const roll = rng.next();
  if (roll < 0.45) {
    // Mutations keep serviceUrl: the bot would otherwise post to whatever host the input names.
    let activity = rng.pick(bases)();
    for (let n = rng.int(1, 4); n > 0; n--) activity = mutate(rng, activity, ['serviceUrl']);
    if (rng.chance(0.05)) activity.serviceUrl = rng.pick(INVALID_SERVICE_URLS);
    return activity;
  }
  if (roll < 0.6) return { type: rng.pick(['message', 'invoke', '']), ...(randomJson(rng, 4) as object), serviceUrl };
  if (roll < 0.7) {
    const activity = message('help');
    const size = rng.int(1_000, MESSAGE_BODY_LIMIT - 4_000);
    const field = rng.pick(['text', 'id', 'name', 'locale']);
    if (field === 'name') activity.from = { ...activity.from, name: 'N'.repeat(size) };
    else Object.assign(activity, { [field]: rng.pick(['x', '\u00e9', '<at>', '9']).repeat(size) });
    return activity;
  }
  if (roll < 0.8) {
    // Deep nesting in the places the bot reads.
    const field = rng.pick(['value', 'entities', 'channelData', 'attachments']);
    const depth = rng.int(1_000, 10_000);
    const base = JSON.stringify(message('help'));
    return `${base.slice(0, -1)},"${field}":${rng.chance(0.5) ? deepArrays(depth) : deepObjects(Math.min(depth, 5_000))}}`;
  }
  if (roll < 0.9) {
    const key = rng.pick(['__proto__', 'constructor', 'prototype']);
    const payload = key === 'constructor' ? '{"prototype":{"polluted":"yes"}}' : '{"polluted":"yes","isAdmin":true}';
    const base = JSON.stringify(message('help'));
    const depth = rng.int(0, 3);
    const nested = '{"a":'.repeat(depth) + `{"${key}":${payload}}` + '}'.repeat(depth);
    return `${base.slice(0, -1)},"${key}":${payload},"channelData":{"tenant":{"id":"${TENANT}"},"${key}":${payload}},"value":${nested}}`;
  }
  // Not JSON at all, or JSON cut short.
  const raw = JSON.stringify(message('help'));
  return rng.pick([
    raw.slice(0, rng.int(1, raw.length - 1)),
    String.fromCharCode(...Array.from({ length: rng.int(1, 300) }, () => rng.int(0, 0xffff))),
    '{"type":"message","text":"\\ud800"}',
    'null',
    '[]',
    '"message"',
  ]);
}

describe(`fuzzing /api/messages (seed ${SEED}; set FUZZ_SEED=${SEED} to replay)`, () => {
  it('answers 2,500 hostile requests without a 5xx, leaves Object.prototype alone, keeps its memory bounded and keeps serving', async () => {
    const url = `${open.url}/api/messages`;
    const protoKeys = Object.getOwnPropertyNames(Object.prototype).sort();
    const rng = new Rng(SEED);
    const make = () => ({ body: hostile(rng, open.connector.url) });

    // Warm-up (JIT, lazy modules, first state files), then a baseline after a full GC.
    const warm = await fire(url, 300, make);
    open.connector.calls.length = 0;
    collectGarbage();
    const before = process.memoryUsage().heapUsed;

    const answers = await fire(url, 2_200, make);
    const all = [...warm, ...answers];
    // 501 is botbuilder's protocol answer to a named invoke the bot does not implement; anything else >= 500 is a bug.
    const serverErrors = all.filter((a) => a.status >= 500 && !(a.status === 501 && a.invoke));
    expect(serverErrors, JSON.stringify(statusCounts(all))).toEqual([]);
    // No crash hidden behind a 200 either: no route's turn failed, nothing escaped the route table.
    const crashes = open.logs.records().filter((r) => r.msg === 'unhandled error in turn' || r.msg === 'turn failed outside the bot');
    expect(crashes.map((r) => `${r.msg}: ${String(r.err)} ${String(r.stack).split('\n').slice(1, 6).join(' <- ')}`)).toEqual([]);

    open.connector.calls.length = 0;
    collectGarbage();
    const growthMb = (process.memoryUsage().heapUsed - before) / 2 ** 20;
    console.info(
      `fuzz seed ${SEED}: ${all.length} requests, statuses ${JSON.stringify(statusCounts(all))}, heap growth ${growthMb.toFixed(1)} MB`,
    );
    expect(growthMb).toBeLessThan(24);

    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(protoKeys);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();

    expect((await get(`${open.url}/healthz`)).json).toEqual({ status: 'ok' });
    const res = await open.say('help');
    expect(res.status).toBe(200);
    await open.connector.waitForMessages(1, res.activity.conversation.id);
  }, 90_000);

  it('takes 10,000 nested arrays and 100,000 nested arrays (within 256 KB) without a 5xx, then answers normally', async () => {
    const base = JSON.stringify(channelMessage('help', { serviceUrl: open.connector.url }));
    for (const depth of [10_000, 100_000]) {
      const body = `${base.slice(0, -1)},"value":${deepArrays(depth)}}`;
      expect(Buffer.byteLength(body)).toBeLessThan(MESSAGE_BODY_LIMIT);
      const res = await post(`${open.url}/api/messages`, body);
      expect(res.status, res.text.slice(0, 200)).toBeLessThan(500);
    }
    const res = await open.say('help');
    await open.connector.waitForMessages(1, res.activity.conversation.id);
  });

  it('drops __proto__, constructor and prototype keys at every depth and still answers the message', async () => {
    const activity = channelMessage('help', { serviceUrl: open.connector.url });
    const raw =
      JSON.stringify(activity).slice(0, -1) +
      ',"__proto__":{"polluted":"top"},"constructor":{"prototype":{"polluted":"ctor"}},"value":{"a":{"b":{"__proto__":{"polluted":"deep"}}}}}';
    const res = await post(`${open.url}/api/messages`, raw);
    expect(res.status).toBe(200);
    await open.connector.waitForMessages(1, activity.conversation.id);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
  });
});

describe(`hostile requests without a valid Bot Framework token (seed ${SEED})`, () => {
  function snapshot(dir: string): Record<string, string> {
    if (!existsSync(dir)) return {};
    return Object.fromEntries(
      readdirSync(dir)
        .sort()
        .map((f) => [
          f,
          createHash('sha256')
            .update(readFileSync(join(dir, f)))
            .digest('hex'),
        ]),
    );
  }

  it('answers 600 of them with 4xx, runs no bot logic and changes no state', async () => {
    const rng = new Rng(SEED + 1);
    const su = authed.connector.url;
    const stateBefore = snapshot(authed.stateDir);
    const now = Math.floor(Date.now() / 1000);
    // A pool of bad tokens: each is wrong in one way; HS256 signed with the public key is the classic key-confusion attack.
    const jwks = (await (await fetch(`${issuer.url}/v1/.well-known/keys`)).json()) as { keys: unknown[] };
    const publicJwk: unknown = JSON.parse(JSON.stringify(jwks.keys[0]));
    const tokens = [
      await issuer.token({ aud: APP_ID, serviceUrl: su, expiresIn: -900, notBefore: -7200 }),
      await issuer.token({ aud: '00000000-0000-0000-0000-000000000000', serviceUrl: su }),
      await issuer.token({ aud: APP_ID, serviceUrl: su, signWith: 'unpublished' }),
      await issuer.token({ aud: APP_ID, serviceUrl: su, signWith: 'unpublished', kid: issuer.kid }),
      await issuer.token({ aud: APP_ID, serviceUrl: 'https://smba.trafficmanager.net/emea/' }),
      await issuer.token({ aud: APP_ID, serviceUrl: su, iss: 'https://sts.windows.net.example/' }),
      issuer.unsigned({ aud: APP_ID, serviceUrl: su }),
      await new SignJWT({ serviceurl: su })
        .setProtectedHeader({ alg: 'HS256', kid: issuer.kid })
        .setIssuer('https://api.botframework.com')
        .setAudience(APP_ID)
        .setNotBefore(now)
        .setExpirationTime(now + 3600)
        .sign(new TextEncoder().encode(JSON.stringify(publicJwk))),
    ];
    const header = (): Record<string, string> => {
      const r = rng.next();
      if (r < 0.15) return {};
      // Header values are visible ASCII on the wire (the HTTP client refuses anything else).
      if (r < 0.3)
        return {
          authorization:
            String(randomJson(rng, 0))
              .replace(/[^\x20-\x7e]/g, '')
              .trim() || 'x',
        };
      if (r < 0.45)
        return {
          authorization: `Bearer ${Buffer.from(String(randomJson(rng, 0))).toString('base64url')}.${Buffer.from('{}').toString('base64url')}.x`,
        };
      const token = rng.pick(tokens);
      // Tamper with a payload byte now and then: the signature no longer matches.
      const [h, p, s] = token.split('.');
      return { authorization: `Bearer ${rng.chance(0.2) ? `${h}.${p!.slice(0, -2)}${rng.pick(['A', 'B'])}${p!.slice(-1)}.${s}` : token}` };
    };
    const answers = await fire(`${authed.url}/api/messages`, 600, () => ({ body: hostile(rng, su), headers: header() }));

    const counts = statusCounts(answers);
    expect(
      Object.keys(counts)
        .map(Number)
        .every((s) => s >= 400 && s < 500),
      JSON.stringify(counts),
    ).toBe(true);
    // Every well-formed activity (that fits the body limit) was refused for its token, not let through; once this
    // sender's byte budget for refused requests is spent, refused 429 before its body is even read.
    const wellFormed = answers.filter((a) => a.wellFormed && a.status !== 413);
    expect(wellFormed.length).toBeGreaterThan(100);
    expect(wellFormed.filter((a) => a.status !== 401 && a.status !== 429)).toEqual([]);
    expect(wellFormed.filter((a) => a.status === 401).length, JSON.stringify(counts)).toBeGreaterThan(50);
    expect(authed.connector.calls).toHaveLength(0);
    expect(login.tokenRequests).toHaveLength(0);
    expect(snapshot(authed.stateDir)).toEqual(stateBefore);
    expect(existsSync(join(authed.stateDir, 'audit.log'))).toBe(false);
  });
});
