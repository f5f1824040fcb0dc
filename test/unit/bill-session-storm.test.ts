// BILL answering BDC_1109 to every session it has just issued: each command used to sign in again (twice), so
// members' commands drained the dev key's 200 sign-ins an hour, the people's share included.
import { describe, expect, it } from 'vitest';
import type { BillHttp, BillRequest } from '../../src/bill/http.js';
import { OrgSession, slotKey, type SessionCredentials } from '../../src/bill/sessions.js';
import { BillApiError, LimitExceeded } from '../../src/errors.js';
import { ManualClock } from '../../src/infra/clock.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { UpstreamCallCounter } from '../../src/infra/upstreamCalls.js';
import { heardByTurnEnd } from './limits-helpers.js';

const creds: SessionCredentials = {
  baseUrl: 'http://bill.test/connect',
  devKey: 'dev-key',
  username: 'bot',
  password: 'pw',
  orgId: 'org-1',
};

/** A BILL stand-in: logins always work; other calls are refused with BDC_1109 while `refusing`, and the next `refuseNext`. */
function bill() {
  const state = { logins: 0, refusing: true, refuseNext: 0 };
  const http = {
    send: (req: BillRequest): Promise<unknown> => {
      if (req.path === '/v3/login') return Promise.resolve({ sessionId: `session-${++state.logins}` });
      if (state.refusing || state.refuseNext-- > 0)
        return Promise.reject(
          new BillApiError({ category: 'session', status: 401, code: 'BDC_1109', message: 'BILL BDC_1109 (session, HTTP 401)' }),
        );
      return Promise.resolve({ ok: true });
    },
  } as unknown as BillHttp;
  return { state, http };
}

function session(http: BillHttp, clock: ManualClock): OrgSession {
  const secrets = new SecretRegistry();
  return new OrgSession({ http, clock, log: createLogger({ level: 'silent', secrets }), secrets }, creds, {
    key: slotKey(creds),
    orgId: creds.orgId,
  });
}

const whoami = (s: OrgSession) =>
  s.call({ method: 'GET', path: '/v3/login/session', route: 'GET /v3/login/session' }, { priority: 'interactive' });

describe('BILL refusing every session it has just issued', () => {
  it('50 commands in a minute sign in once, not twice each, and sign-ins resume a minute later when a session works', async () => {
    const clock = new ManualClock(Date.UTC(2025, 5, 3, 14, 0, 0));
    const { state, http } = bill();
    const s = session(http, clock);
    for (let i = 0; i < 50; i++) {
      const err = await whoami(s).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BillApiError);
      expect((err as BillApiError).category).toBe('session');
      clock.advance(1_000);
    }
    expect(state.logins).toBe(1);

    // BILL is well again: after the hold, one sign-in and the call is answered.
    state.refusing = false;
    clock.advance(60_000);
    expect(await whoami(s)).toEqual({ ok: true });
    expect(state.logins).toBe(2);
  });

  it('a session that answered calls and then expired is replaced at once, every time', async () => {
    const clock = new ManualClock(Date.UTC(2025, 5, 3, 14, 0, 0));
    const { state, http } = bill();
    state.refusing = false;
    const s = session(http, clock);
    await whoami(s);
    for (let i = 0; i < 3; i++) {
      // BILL ends the session (it expired on BILL's clock): the next call is refused once, then answered.
      state.refuseNext = 1;
      expect(await whoami(s)).toEqual({ ok: true });
    }
    expect(state.logins).toBe(4);
  });
});

describe("a person's command joining a sign-in already under way", () => {
  it('is told BILL is busy when its 14 s turn ends, while the background sign-in it joined (hung at BILL) goes on and answers its own caller', async () => {
    const clock = new ManualClock(Date.UTC(2025, 5, 3, 14, 0, 0));
    let answerLogin: (v: unknown) => void = () => undefined;
    const http = {
      send: (req: BillRequest): Promise<unknown> =>
        req.path === '/v3/login' ? new Promise((resolve) => (answerLogin = resolve)) : Promise.resolve({ ok: true }),
    } as unknown as BillHttp;
    const turns = new UpstreamCallCounter(clock);
    const secrets = new SecretRegistry();
    const s = new OrgSession({ http, clock, log: createLogger({ level: 'silent', secrets }), secrets, turns }, creds, {
      key: slotKey(creds),
      orgId: creds.orgId,
    });
    const call = { method: 'GET', path: '/v3/login/session', route: 'GET /v3/login/session' } as const;
    // The digest scheduler (no turn) starts a sign-in BILL does not answer; a person's command arrives meanwhile.
    const background = s.call(call, { priority: 'background' });
    const person = heardByTurnEnd(turns.run(() => s.call(call, { priority: 'interactive' })));
    clock.advance(14_001);
    const heard = await person;
    expect(heard).toBeInstanceOf(LimitExceeded);
    expect((heard as LimitExceeded).reason).toBe('busy');
    answerLogin({ sessionId: 'session-1' });
    expect(await background).toEqual({ ok: true });
  });
});
