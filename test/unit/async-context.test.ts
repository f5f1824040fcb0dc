// Slots of the one AsyncLocalStorage behave as separate storages would: independent, nested, carried through awaits.
import { describe, expect, it } from 'vitest';
import { ContextSlot } from '../../src/infra/asyncContext.js';

describe('context slots', () => {
  it('keep their own values through awaits, nested runs and concurrent calls', async () => {
    const turn = new ContextSlot<string>('turn');
    const grant = new ContextSlot<number>('grant');
    expect(turn.getStore()).toBeUndefined();
    const seen = await Promise.all(
      ['a', 'b'].map((t) =>
        turn.run(t, async () => {
          await new Promise((r) => setImmediate(r));
          const inner = await grant.run(t === 'a' ? 1 : 2, async () => {
            await Promise.resolve();
            return [turn.getStore(), grant.getStore()];
          });
          // The grant's run ended: the turn is still set, the grant is not.
          return [...inner, turn.getStore(), grant.getStore()];
        }),
      ),
    );
    expect(seen).toEqual([
      ['a', 1, 'a', undefined],
      ['b', 2, 'b', undefined],
    ]);
    // A slot run inside another slot's run with the same slot again: the innermost value wins, then the outer returns.
    expect(turn.run('outer', () => [turn.run('inner', () => turn.getStore()), turn.getStore()])).toEqual(['inner', 'outer']);
    expect(turn.getStore()).toBeUndefined();
    expect(grant.getStore()).toBeUndefined();
  });
});
