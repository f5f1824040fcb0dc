// Every card the skeleton can send parses cleanly at Adaptive Cards 1.5, stays small and says what it is in one line.
import { describe, expect, it } from 'vitest';
import { helpCard, tooLongCard, unknownCommandCard } from '../../src/cards/help.js';
import { errorReply } from '../../src/cards/errorCards.js';
import { escapeMarkdown, type CardReply } from '../../src/cards/card.js';
import { commandCatalogue } from '../../src/features/index.js';
import {
  BillApiError,
  DependencyUnavailable,
  FilterValueError,
  Forbidden,
  InputError,
  LimitExceeded,
  NotBound,
  NotLinked,
  TenantNotAllowed,
} from '../../src/errors.js';
import { checkCard } from '../harness/cards.js';

const registry = commandCatalogue();
const ctx = { correlationId: 'c0ffee123456', retryCommand: 'bills due', timeIn: () => '11:00' };

const cards: Array<[string, CardReply]> = [
  ['help', helpCard(registry.list(), { version: '1.0.0', note: 'Demo organisation — simulated data' })],
  ['unknown with suggestion', unknownCommandCard('hlep', registry.get('help'))],
  ['unknown without suggestion', unknownCommandCard('what is the weather', undefined)],
  ['too long', tooLongCard(5000, 1000)],
  [
    'input error',
    errorReply(new InputError('That is not a number of days', 'Type bills due 14 for the next two weeks.', 'bills due'), ctx),
  ],
  ['filter value', errorReply(new FilterValueError('vendor name', 'contains a quote'), ctx)],
  ['busy', errorReply(new LimitExceeded('bill.concurrency', 4200, 'busy'), ctx)],
  ['hourly', errorReply(new LimitExceeded('bill.requests', 1_200_000, 'hourly'), ctx)],
  ['logins', errorReply(new LimitExceeded('bill.logins', 600_000, 'logins'), ctx)],
  ['user rate', errorReply(new LimitExceeded('user', 20_000, 'userRate'), ctx)],
  ['tenant', errorReply(new TenantNotAllowed(), ctx)],
  ['unbound', errorReply(new NotBound(), ctx)],
  ['org not allowed', errorReply(new NotBound('orgNotAllowed'), ctx)],
  ['not linked', errorReply(new NotLinked(), ctx)],
  ['forbidden', errorReply(new Forbidden('Only billbridge admins can link a team.'), ctx)],
  ['dependency', errorReply(new DependencyUnavailable('redis'), ctx)],
  ['bill not found', errorReply(new BillApiError({ category: 'notFound', status: 404, code: 'BDC_1205' }), ctx)],
  ['bill credentials', errorReply(new BillApiError({ category: 'credentials', status: 401, code: 'BDC_1101' }), ctx)],
  ['bill hourly', errorReply(new BillApiError({ category: 'hourlyLimit', status: 400, code: 'BDC_1144', retryAfterMs: 60_000 }), ctx)],
  ['bill server', errorReply(new BillApiError({ category: 'server', status: 500 }), ctx)],
  ['unexpected', errorReply(new Error('boom at /v3/bills?sessionId=abc'), ctx)],
];

describe('core cards', () => {
  it.each(cards)('%s parses at 1.5 with no warnings, is under 40 KB and has a one-line summary', (_name, reply) => {
    const check = checkCard(reply.card);
    expect(check.problems).toEqual([]);
    expect(check.bytes).toBeLessThan(40 * 1024);
    expect(reply.summary).toMatch(/\S/);
    expect(reply.summary).not.toMatch(/\n/);
    expect(reply.card.fallbackText).toBe(reply.summary);
  });

  it('error cards carry the correlation id and never the upstream message', () => {
    const upstream = new BillApiError({
      category: 'server',
      status: 500,
      code: 'BDC_9999',
      message: 'Internal detail: table bills_shard_7 locked',
    });
    const reply = errorReply(upstream, ctx);
    const json = JSON.stringify(reply.card);
    expect(json).toContain('c0ffee123456');
    expect(json).not.toContain('bills_shard_7');
    expect(JSON.stringify(errorReply(new Error('boom at /v3/bills?sessionId=abc'), ctx).card)).not.toContain('sessionId');
  });

  it('the busy card tells when to try again', () => {
    expect(errorReply(new LimitExceeded('bill.concurrency', 4200, 'busy'), ctx).summary).toBe('BILL is busy — try again in 5 s.');
  });

  it('escapes markdown in text that came from people or BILL', () => {
    expect(escapeMarkdown('**Acme** [x](http://evil) <at>x</at>')).toBe('\\*\\*Acme\\*\\* \\[x\\]\\(http\\://evil\\) \\<at\\>x\\</at\\>');
    expect(escapeMarkdown('INV_2026-11 _italic_ c:\\temp')).toBe('INV_2026-11 \\_italic\\_ c:\\\\temp');
    expect(escapeMarkdown('line1\n- item')).toBe('line1 - item');
    expect(escapeMarkdown('- item\n2. x')).toBe('\\- item 2. x');
  });
});
