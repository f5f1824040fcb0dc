// BILL answers errors as arrays of {code, severity, category, message}; the client classifies them by code.
import { describe, expect, it } from 'vitest';
import { classifyResponse, parseErrorEntries } from '../../src/bill/http.js';
import { errorReply } from '../../src/cards/errorCards.js';
import { nextHour } from '../../src/infra/limits/windows.js';

const at = Date.UTC(2025, 5, 3, 14, 20, 0);
const body = (code: string | undefined, message = 'x') =>
  JSON.stringify([{ timestamp: '2025-06-03T14:20:00Z', ...(code ? { code } : {}), severity: 'ERROR', category: 'REQUEST', message }]);

describe('classifying BILL error answers', () => {
  it.each([
    ['BDC_1109', 401, 'session'],
    ['BDC_1101', 400, 'credentials'],
    ['BDC_1102', 401, 'credentials'],
    ['BDC_1103', 401, 'credentials'],
    ['BDC_1144', 400, 'hourlyLimit'],
    ['BDC_1322', 400, 'concurrencyLimit'],
    ['BDC_1205', 404, 'notFound'],
  ])('%s -> %s whatever the HTTP status', (code, status, category) => {
    const err = classifyResponse(status, body(code), {}, at);
    expect(err.category).toBe(category);
    expect(err.code).toBe(code);
    // The same code under a different status is classified the same way.
    expect(classifyResponse(500, body(code), {}, at).category).toBe(category);
  });

  it('a code that names what every JavaScript object has (constructor, __proto__, toString) is an unknown code', () => {
    for (const code of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const err = classifyResponse(400, body(code), {}, at);
      expect(err.category, code).toBe('validation');
      expect(err.code, code).toBe(code);
      expect(classifyResponse(503, body(code), {}, at).category, code).toBe('server');
    }
  });

  it('a spent hourly budget reports when the next clock hour starts', () => {
    const err = classifyResponse(400, body('BDC_1144'), {}, at);
    expect(err.retryAfterMs).toBe(40 * 60_000);
    expect(nextHour(at)).toBe(Date.UTC(2025, 5, 3, 15, 0, 0));
  });

  it('falls back to the status for entries without a code, non-JSON and empty bodies', () => {
    const noCode = classifyResponse(
      400,
      JSON.stringify([{ timestamp: 't', severity: 'ERROR', message: 'max must be between 1 and 100' }]),
      {},
      at,
    );
    expect(noCode.category).toBe('validation');
    expect(noCode.code).toBeUndefined();
    expect(noCode.entries[0]!.message).toMatch(/max/);
    const html = classifyResponse(502, '<html>Bad Gateway</html>', {}, at);
    expect(html.category).toBe('server');
    expect(html.message).toMatch(/non-JSON/);
    const empty = classifyResponse(503, '', {}, at);
    expect(empty.category).toBe('server');
    expect(empty.message).toMatch(/empty body/);
    expect(classifyResponse(404, '', {}, at).category).toBe('notFound');
    expect(classifyResponse(401, '', {}, at).category).toBe('credentials');
  });

  it('reads Retry-After on a 429 (seconds or a date)', () => {
    expect(classifyResponse(429, '', { 'retry-after': '17' }, at).retryAfterMs).toBe(17_000);
    expect(classifyResponse(429, '', { 'retry-after': new Date(at + 5_000).toUTCString() }, at).retryAfterMs).toBe(5_000);
    expect(classifyResponse(429, '', {}, at).category).toBe('rateLimited');
  });

  it('a 429 whose Retry-After is years away (seconds or a date) is said as at most an hour, as long as the limiter pauses', () => {
    for (const value of ['99999999999', 'Fri, 01 Jan 2100 00:00:00 GMT']) {
      const err = classifyResponse(429, '', { 'retry-after': value }, at);
      expect(err.retryAfterMs, value).toBe(3_600_000);
      const card = JSON.stringify(errorReply(err, { correlationId: 'c1' }));
      expect(card, value).toContain('try again in 3600 s');
    }
  });

  it('prefers a known code over unknown ones in the same array', () => {
    const text = JSON.stringify([
      { code: 'BDC_9999', message: 'other' },
      { code: 'BDC_1109', message: 'Session is invalid' },
    ]);
    expect(classifyResponse(400, text, {}, at).category).toBe('session');
  });

  it("a code of 100,000 characters, or one carrying markdown, is not named: neither in the message (logged) nor as the code (the status card's last error)", () => {
    for (const code of ['B'.repeat(100_000), '[BDC_1](https://evil.example)']) {
      const err = classifyResponse(400, body(code), {}, at);
      expect(err.code).toBeUndefined();
      expect(err.category).toBe('validation');
      expect(err.message.length).toBeLessThan(200);
      expect(err.message).not.toContain('evil');
    }
    expect(classifyResponse(400, body('BDC_9999'), {}, at).code).toBe('BDC_9999');
  });

  it('reads a single error object, and ignores junk entries', () => {
    expect(parseErrorEntries(JSON.stringify({ code: 'BDC_1205', message: 'nf' }))).toEqual([{ code: 'BDC_1205', message: 'nf' }]);
    expect(parseErrorEntries(JSON.stringify([null, 3, { code: 7, message: 'm' }]))).toEqual([{ message: 'm' }]);
    expect(parseErrorEntries('not json')).toEqual([]);
  });
});
