// Microsoft Graph answers that never end or never stop growing: the request timeout covers the body, and a body past
// its cap is refused unread, so a Graph stand-in gone wrong holds no limiter slot and no memory for ever.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenIdIssuer } from '../harness/openid.js';
import { LogCapture } from '../harness/logs.js';
import { TENANT, teamIds } from '../harness/activities.js';
import { loadConfig } from '../../src/config.js';
import { GraphTeams } from '../../src/graph/teams.js';
import { SharedLimiter } from '../../src/infra/limits/limiter.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { systemClock, type Clock } from '../../src/infra/clock.js';
import { TURN_DEADLINE_MS, UpstreamCallCounter } from '../../src/infra/upstreamCalls.js';

const APP_ID = '6f5e4d3c-2b1a-4f8e-8d7c-6b5a49382717';
let issuer: OpenIdIssuer;
let server: Server;
let url = '';
let mode: 'trickle' | 'huge' | 'silent' = 'trickle';
const open = new Set<ServerResponse>();

beforeAll(async () => {
  issuer = await OpenIdIssuer.start();
  server = createServer((_req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    if (mode === 'silent') return; // never answers
    res.writeHead(200, { 'content-type': 'application/json' });
    if (mode === 'trickle') {
      // A byte every 100 ms: never idle as long as the timeout, never finished.
      res.write('{');
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
    } else {
      // 8 MB of whitespace before the object ends, in 64 KiB chunks.
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let left = 128;
      const write = () => {
        while (left-- > 0) if (!res.write(chunk)) return void res.once('drain', write);
        res.end('{}');
      };
      res.write('{"access_token":"x","expires_in":3600,"pad":"');
      write();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of open) res.destroy();
  await new Promise((resolve) => server.close(resolve));
  await issuer.stop();
});

function client(clock: Clock = systemClock, turns?: UpstreamCallCounter, timeoutMs = 400) {
  const config = loadConfig({
    ...issuer.env(APP_ID, TENANT, 'graph-bodies-secret'),
    GRAPH_BASE_URL: `${url}/v1.0`,
    GRAPH_AUTHORITY_HOST: url,
  });
  const log = createLogger({ level: 'silent', secrets: new SecretRegistry(), destination: new LogCapture() });
  const limiter = new SharedLimiter({ config, clock, log, turns });
  const teams = new GraphTeams({ config, limiter, clock, log, secrets: new SecretRegistry(), timeoutMs });
  const running = () => limiter.snapshot().reduce((n, b) => n + b.running, 0);
  return { teams, limiter, running };
}

describe('Graph answers that never end', () => {
  it('a token answer that trickles a byte at a time fails at the request timeout, as no answer, and frees its slot', async () => {
    mode = 'trickle';
    const { teams, limiter, running } = client();
    try {
      const started = Date.now();
      const err = await teams.getTeam(TENANT, teamIds('trickle').aadGroupId).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'GraphApiError', category: 'network' });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(running()).toBe(0);
    } finally {
      teams.close();
      await limiter.close();
    }
  });

  it('an answer of 8 MB is refused unread, as no answer', async () => {
    mode = 'huge';
    const { teams, limiter } = client();
    try {
      const err = await teams.getTeam(TENANT, teamIds('huge').aadGroupId).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'GraphApiError', category: 'network' });
      expect((err as Error).message).toMatch(/too large/);
    } finally {
      teams.close();
      await limiter.close();
    }
  });
});

describe("a Graph call near the end of a person's turn", () => {
  it('admitted 400 ms before the turn deadline, ends at the deadline rather than after its 5 s timeout, and frees its slot', async () => {
    mode = 'silent';
    // The app clock, moved on by the test; the request timers run on real time underneath.
    const clock = { skew: 0, now: () => Date.now() + clock.skew };
    const turns = new UpstreamCallCounter(clock);
    const { teams, limiter, running } = client(clock, turns, 5_000);
    try {
      const started = Date.now();
      const err = await turns
        .run(() => {
          clock.skew = TURN_DEADLINE_MS - 400;
          return teams.getTeam(TENANT, teamIds('silent').aadGroupId);
        })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'GraphApiError', category: 'network' });
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(running()).toBe(0);
    } finally {
      teams.close();
      await limiter.close();
    }
  }, 10_000);
});
