// The log scrubber's registry stays bounded and forgets what it was given for a while, whatever it is given, and
// scrubbing never throws: a value of any length or content cannot break logging.
import { describe, expect, it } from 'vitest';
import { CENSOR, createLogger, MAX_SECRET_LENGTH, MAX_SECRETS, redactSecretFields, SecretRegistry } from '../../src/infra/log.js';
import { LogCapture } from '../harness/logs.js';

function clocked() {
  let now = Date.UTC(2026, 0, 5, 9, 0, 0);
  const secrets = new SecretRegistry(['config-password-1'], { now: () => now });
  return { secrets, advance: (ms: number) => (now += ms) };
}

describe('SecretRegistry', () => {
  it('forgets a value obtained at run time when its end of life passes, and keeps it while it is added again', () => {
    const { secrets, advance } = clocked();
    expect(secrets.add('session-aaaa-1111', 40 * 60_000)).toBe(true);
    expect(secrets.scrub('sid=session-aaaa-1111')).toBe(`sid=${CENSOR}`);
    advance(30 * 60_000);
    secrets.add('session-aaaa-1111', 40 * 60_000);
    advance(30 * 60_000);
    expect(secrets.list()).toContain('session-aaaa-1111');
    advance(11 * 60_000);
    expect(secrets.list()).not.toContain('session-aaaa-1111');
    expect(secrets.scrub('sid=session-aaaa-1111')).toBe('sid=session-aaaa-1111');
    // Configuration stays for good.
    expect(secrets.list()).toContain('config-password-1');
  });

  it('removes a value when it is deleted (a session logged out, a token replaced)', () => {
    const { secrets } = clocked();
    secrets.add('graph-token-xyz-1', 3_600_000);
    secrets.delete('graph-token-xyz-1');
    expect(secrets.list()).toEqual(['config-password-1']);
  });

  it(`stays bounded: never more than ${MAX_SECRETS} values, the run-time value nearest its end makes room, configuration is never pushed out`, () => {
    const { secrets } = clocked();
    for (let i = 0; i < MAX_SECRETS + 500; i++) secrets.add(`session-${i}-padding`, 60_000 + i);
    expect(secrets.list().length).toBe(MAX_SECRETS);
    expect(secrets.list()).toContain('config-password-1');
    expect(secrets.list()).not.toContain('session-0-padding');
    expect(secrets.list()).toContain(`session-${MAX_SECRETS + 499}-padding`);
    // Full of configuration: a new value is refused rather than pushing one out.
    const full = new SecretRegistry(Array.from({ length: MAX_SECRETS }, (_, i) => `configured-${i}`));
    expect(full.add('one-more-value', 60_000)).toBe(false);
    expect(full.list().length).toBe(MAX_SECRETS);
  });

  it('refuses values too short to be secrets ("info") or longer than any secret it holds', () => {
    const { secrets } = clocked();
    expect(secrets.add('abc')).toBe(false);
    expect(secrets.add('x'.repeat(MAX_SECRET_LENGTH + 1), 60_000)).toBe(false);
    expect(secrets.add('y'.repeat(MAX_SECRET_LENGTH), 60_000)).toBe(true);
  });

  it('scrubs without throwing whatever it holds: a lone surrogate, regex syntax, thousands of long values', () => {
    const { secrets } = clocked();
    secrets.add('\ud800lone-surrogate', 60_000);
    secrets.add('(a|b)*[x]+?$1', 60_000);
    for (let i = 0; i < 900; i++) secrets.add(`${i}-${'z'.repeat(8_000)}`, 60_000);
    const line = `{"level":"info","msg":"\ud800lone-surrogate (a|b)*[x]+?$1 kept"}`;
    expect(secrets.scrub(line)).toBe(`{"level":"info","msg":"${CENSOR} ${CENSOR} kept"}`);
  });

  it('censors JSON-escaped and URL-encoded forms of a value too', () => {
    const { secrets } = clocked();
    secrets.add('pa"ss/wo rd', 60_000);
    expect(secrets.scrub(JSON.stringify({ a: 'pa"ss/wo rd', b: encodeURIComponent('pa"ss/wo rd') }))).toBe(
      `{"a":"${CENSOR}","b":"${CENSOR}"}`,
    );
  });
});

describe('the connect form', () => {
  it('has its token fields censored by name in any log line, so the value is never needed by the scrubber', () => {
    expect(redactSecretFields({ data: { verb: 'connect', billTokenName: 'dana', billTokenValue: 'dana-token' } })).toEqual({
      data: { verb: 'connect', billTokenName: CENSOR, billTokenValue: CENSOR },
    });
    const lines = new LogCapture('connect form redaction');
    const log = createLogger({ level: 'info', secrets: new SecretRegistry(), destination: lines });
    log.info({ data: { billTokenValue: 'dana-token-value-77' } }, 'card action');
    log.flush();
    expect(lines.text()).not.toContain('dana-token-value-77');
    expect(lines.records()[0]).toMatchObject({ level: 'info', data: { billTokenValue: CENSOR } });
  });
});
