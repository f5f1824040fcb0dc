// The logger censors secret fields by name (top level and two levels down, any letter case, in a line's own fields
// and in a child logger's bound fields) without changing the logged object, and scrubs known secret values anywhere.
import { describe, expect, it } from 'vitest';
import { CENSOR, createLogger, redactSecretFields, SecretRegistry } from '../../src/infra/log.js';
import { LogCapture } from '../harness/logs.js';

function logger() {
  const lines = new LogCapture('log redaction test');
  const secrets = new SecretRegistry(['known-secret-value-77']);
  return { lines, log: createLogger({ level: 'debug', secrets, destination: lines }) };
}

describe('redactSecretFields', () => {
  it('returns an object without secret fields as it is (no copy)', () => {
    const fields = { orgId: '00801ORG', nested: { count: 3, list: [{ id: 'a' }] }, when: new Date(0) };
    expect(redactSecretFields(fields)).toBe(fields);
  });

  it('censors secret fields at the top and two levels down, in any case, and copies only the way to them', () => {
    const untouched = { id: 'kept' };
    const fields = {
      password: 'p1',
      DEVKEY: 'd1',
      request: { headers: { authorization: 'Bearer abc', accept: 'json' }, untouched },
      list: [{ sessionId: 's1', n: 1 }],
      deep: { a: { b: { token: 'too deep to look for' } } },
      absent: { token: undefined },
    };
    const before = structuredClone(fields);
    const out = redactSecretFields(fields);
    expect(out).toEqual({
      password: CENSOR,
      DEVKEY: CENSOR,
      request: { headers: { authorization: CENSOR, accept: 'json' }, untouched },
      list: [{ sessionId: CENSOR, n: 1 }],
      deep: { a: { b: { token: 'too deep to look for' } } },
      absent: { token: undefined },
    });
    // The caller's object is unchanged; branches without a secret are shared, not copied.
    expect(fields).toEqual(before);
    expect(out.request.untouched).toBe(untouched);
    expect(out.deep).toBe(fields.deep);
  });
});

describe('createLogger', () => {
  it('writes censored lines for secret fields in a line and in a child logger', () => {
    const { lines, log } = logger();
    const child = log.child({ correlationId: 'c-1', session: { sessionId: 'sess-bound-1234' } });
    const fields = { devKey: 'dev-key-9876', call: { headers: { Authorization: 'Basic xyz' } }, orgId: 'O1' };
    child.info(fields, 'calling BILL');
    log.flush();
    const [line] = lines.records();
    expect(line).toMatchObject({
      msg: 'calling BILL',
      correlationId: 'c-1',
      session: { sessionId: CENSOR },
      devKey: CENSOR,
      call: { headers: { Authorization: CENSOR } },
      orgId: 'O1',
    });
    expect(lines.text()).not.toMatch(/dev-key-9876|sess-bound-1234|Basic xyz/);
    // Logging did not change the caller's object.
    expect(fields.devKey).toBe('dev-key-9876');
  });

  it('scrubs a known secret value wherever it appears, the message included', () => {
    const { lines, log } = logger();
    log.warn({ detail: 'value known-secret-value-77 in text' }, 'also here: known-secret-value-77');
    log.flush();
    expect(lines.text()).not.toContain('known-secret-value-77');
    expect(lines.records()[0]).toMatchObject({ detail: `value ${CENSOR} in text`, msg: `also here: ${CENSOR}` });
  });

  it('censors a secret field of a logged error and keeps its message and stack', () => {
    const { lines, log } = logger();
    const err = Object.assign(new Error('login failed'), { apiToken: 'tok-err-4321' });
    log.warn({ err }, 'BILL login failed');
    log.flush();
    const [line] = lines.records();
    expect(line).toMatchObject({ err: { message: 'login failed', apiToken: CENSOR } });
    expect(line!.err).toMatchObject({ stack: err.stack });
    expect(lines.text()).not.toContain('tok-err-4321');
    expect(err.apiToken).toBe('tok-err-4321');
  });

  it('leaves a line with no secret field exactly as pino wrote it (binary data included)', () => {
    const { lines, log } = logger();
    const body = Buffer.from('{"password":"x"}');
    log.info({ body, orgId: 'O1' }, 'raw body');
    log.flush();
    expect(lines.records()[0]).toMatchObject({ orgId: 'O1', body: { type: 'Buffer', data: [...body] } });
  });
});
