// Which buttons a bot message carries: a click may edit only the message that carries the button it came from.
import { describe, expect, it } from 'vitest';
import { CardMessages, buttonsOf } from '../../src/teams/cardMessages.js';
import { adaptiveCard, executeAction, submitAction, text } from '../../src/cards/card.js';
import type { StateStore } from '../../src/infra/state/types.js';
import { systemClock } from '../../src/infra/clock.js';

/** The calls CardMessages makes, over a Map (no TTLs). */
function memoryState(): StateStore {
  const map = new Map<string, unknown>();
  return {
    get: async (ns: string, key: string) => structuredClone(map.get(`${ns}|${key}`)),
    set: async (ns: string, key: string, value: unknown) => void map.set(`${ns}|${key}`, structuredClone(value)),
    setIfAbsent: async (ns: string, key: string, value: unknown) => !map.has(`${ns}|${key}`) && !!map.set(`${ns}|${key}`, value),
    delete: async (ns: string, key: string) => map.delete(`${ns}|${key}`),
  } as unknown as StateStore;
}

const CHANNEL = { tenantId: 'Tenant-A', conversationId: '19:channel-ap@thread.tacv2;messageid=1700000000001' };
const list = adaptiveCard([text('Bills due')], {
  summary: 'Bills due',
  actions: [
    executeAction('Refresh', { verb: 'run', command: 'bills due 7', page: 0, refresh: true }),
    executeAction('Show overdue bills', { verb: 'run', command: 'bills overdue' }),
  ],
}).card;

describe('card messages', () => {
  it('finds the data of every button, fallbacks included', () => {
    expect(buttonsOf(list)).toHaveLength(4);
    expect(buttonsOf(adaptiveCard([], { summary: 's', actions: [submitAction('Go', { verb: 'run', command: 'help' })] }).card)).toEqual([
      { verb: 'run', command: 'help' },
    ]);
  });

  it('a click carrying a button of the message, with typed inputs merged in, is carried by it; the same click in the thread of the post too', async () => {
    const messages = new CardMessages(memoryState(), systemClock);
    await messages.posted(CHANNEL, 'msg-1', list, 'new');
    expect(
      await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills due 7', page: 0, refresh: true, comment_0: 'typed' }),
    ).toBe(true);
    expect(
      await messages.carries({ tenantId: 'tenant-a', conversationId: '19:channel-ap@thread.tacv2' }, 'msg-1', {
        verb: 'run',
        command: 'bills overdue',
      }),
    ).toBe(true);
  });

  it('a click with a changed or missing field, or naming another message, conversation or tenant, is not', async () => {
    const messages = new CardMessages(memoryState(), systemClock);
    await messages.posted(CHANNEL, 'msg-1', list, 'new');
    await messages.posted(
      CHANNEL,
      'msg-2',
      adaptiveCard([text('Help')], { summary: 'Help', actions: [executeAction('Show all commands', { verb: 'run', command: 'help' })] })
        .card,
      'new',
    );
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'unlink', page: 0, refresh: true })).toBe(false);
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills due 7', page: 0 })).toBe(false);
    expect(await messages.carries(CHANNEL, 'msg-2', { verb: 'run', command: 'bills overdue' })).toBe(false);
    expect(await messages.carries(CHANNEL, undefined, { verb: 'run', command: 'bills overdue' })).toBe(false);
    expect(
      await messages.carries({ ...CHANNEL, conversationId: '19:channel-other@thread.tacv2' }, 'msg-1', {
        verb: 'run',
        command: 'bills overdue',
      }),
    ).toBe(false);
    expect(await messages.carries({ ...CHANNEL, tenantId: 'tenant-b' }, 'msg-1', { verb: 'run', command: 'bills overdue' })).toBe(false);
  });

  it('an edit for everyone forgets the buttons the message had; an answer shown to one person adds its buttons', async () => {
    const messages = new CardMessages(memoryState(), systemClock);
    await messages.posted(CHANNEL, 'msg-1', list, 'new');
    const next = adaptiveCard([text('Page 2')], {
      summary: 'p2',
      actions: [executeAction('Show more', { verb: 'run', command: 'bills due 7', page: 2 })],
    }).card;
    await messages.posted(CHANNEL, 'msg-1', next, 'shown');
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills due 7', page: 2 })).toBe(true);
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills overdue' })).toBe(true);
    await messages.posted(CHANNEL, 'msg-1', adaptiveCard([text('Done')], { summary: 'done' }).card, 'edited');
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills overdue' })).toBe(false);
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills due 7', page: 2 })).toBe(false);
  });

  it("two people shown answers on one message at once (each their own page): both answers' buttons are carried", async () => {
    const messages = new CardMessages(memoryState(), systemClock);
    await messages.posted(CHANNEL, 'msg-1', list, 'new');
    const page = (n: number) =>
      adaptiveCard([text(`Page ${n}`)], {
        summary: `p${n}`,
        actions: [executeAction('Show more', { verb: 'run', command: 'bills due 7', page: n })],
      }).card;
    await Promise.all([messages.posted(CHANNEL, 'msg-1', page(2), 'shown'), messages.posted(CHANNEL, 'msg-1', page(3), 'shown')]);
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills due 7', page: 2 })).toBe(true);
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills due 7', page: 3 })).toBe(true);
    expect(await messages.carries(CHANNEL, 'msg-1', { verb: 'run', command: 'bills overdue' })).toBe(true);
  });
});
