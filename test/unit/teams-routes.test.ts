// The route table: the first route that selects an activity takes it, its steps run in the order listed, may act on
// what the rest came to, and may stop the turn; an invoke gets the answer its route gave, and one no route takes 501.
import { describe, expect, it } from 'vitest';
import type { TurnContext } from 'botbuilder';
import { routeTable, type Step } from '../../src/teams/routes.js';
import { createLogger, SecretRegistry } from '../../src/infra/log.js';
import { adaptiveCard } from '../../src/cards/card.js';

const log = createLogger({ level: 'silent', secrets: new SecretRegistry() });

/** A turn as the router sees it: the activity, the turn's state, and what it sent back. */
function turnOf(activity: Record<string, unknown>) {
  const sent: Array<Record<string, unknown>> = [];
  const context = {
    activity: { conversation: { id: 'a:chat', tenantId: 't1' }, from: { id: '29:x' }, ...activity },
    turnState: new Map(),
    sendActivity: async (a: Record<string, unknown>) => (sent.push(a), { id: String(sent.length) }),
  } as unknown as TurnContext;
  return { context, sent };
}

describe('the route table', () => {
  it('runs the steps of the first matching route in the order listed, then its handler', async () => {
    const seen: string[] = [];
    const step =
      (name: string): Step =>
      async (_turn, next) => {
        seen.push(name);
        return next();
      };
    const router = routeTable(log, [
      {
        name: 'command',
        select: (a) => a.type === 'message',
        steps: [step('tenant'), step('dedupe'), step('rate')],
        run: async (t) => void seen.push(`run ${t.scope.tenantId}`),
      },
      { name: 'any message', select: (a) => a.type === 'message', steps: [], run: async () => void seen.push('second route') },
    ]);
    await router(turnOf({ type: 'message', text: 'help' }).context);
    expect(seen).toEqual(['tenant', 'dedupe', 'rate', 'run t1']);
  });

  it('lets a step act on what the rest came to: an earlier step acts after a later one (the answer goes out after the audit)', async () => {
    const seen: string[] = [];
    const answer: Step = async (_turn, next) => {
      const result = await next();
      seen.push(`answer ${result?.outcome}`);
      return result;
    };
    const audit: Step = async (_turn, next) => {
      const result = await next();
      seen.push(`audit ${result?.outcome}`);
      return result;
    };
    const refuse: Step = async () => ({ reply: adaptiveCard([], { summary: 'no' }), outcome: 'refused' });
    const router = routeTable(log, [
      { name: 'refused', select: (a) => a.text === 'x', steps: [answer, audit, refuse], run: async () => void seen.push('run') },
      {
        name: 'command',
        select: () => true,
        steps: [answer, audit],
        run: async () => (seen.push('run'), { reply: adaptiveCard([], { summary: 'ok' }), outcome: 'ok' }),
      },
    ]);
    await router(turnOf({ type: 'message', text: 'help' }).context);
    await router(turnOf({ type: 'message', text: 'x' }).context);
    expect(seen).toEqual(['run', 'audit ok', 'answer ok', 'audit refused', 'answer refused']);
  });

  it('lets a step stop the turn: later steps and the handler do not run', async () => {
    const seen: string[] = [];
    const refuse: Step = async () => void seen.push('refused');
    const router = routeTable(log, [
      {
        name: 'command',
        select: () => true,
        steps: [refuse, async (_t, next) => (seen.push('later'), next())],
        run: async () => void seen.push('run'),
      },
    ]);
    await router(turnOf({ type: 'message' }).context);
    expect(seen).toEqual(['refused']);
  });

  it('answers an invoke with what its route gave, and one no route takes (a message-extension query) with 501', async () => {
    const router = routeTable(log, [
      {
        name: 'card action',
        select: (a) => a.type === 'invoke' && a.name === 'adaptiveCard/action',
        steps: [],
        run: async (t) => void (t.answer = { status: 200, body: { ok: true } }),
      },
    ]);
    const card = turnOf({ type: 'invoke', name: 'adaptiveCard/action' });
    await router(card.context);
    expect(card.sent).toEqual([{ type: 'invokeResponse', value: { status: 200, body: { ok: true } } }]);
    const query = turnOf({ type: 'invoke', name: 'composeExtension/query' });
    await router(query.context);
    expect(query.sent).toEqual([{ type: 'invokeResponse', value: { status: 501 } }]);
    // Anything else no route takes (a reaction, a typing indicator) gets no answer at all.
    const reaction = turnOf({ type: 'messageReaction' });
    await router(reaction.context);
    expect(reaction.sent).toEqual([]);
  });

  it('refuses two routes of one name', () => {
    const route = { name: 'command', select: () => true, steps: [], run: async () => undefined };
    expect(() => routeTable(log, [route, route])).toThrow('already registered');
  });
});
