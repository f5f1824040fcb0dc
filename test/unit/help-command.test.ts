// `help` builds its card once per kind of conversation, demo note and version, and hands out a frozen card.
import { describe, expect, it } from 'vitest';
import { helpCommand } from '../../src/features/admin/help.js';
import { SANDBOX_NOTE } from '../../src/cards/words.js';
import { commandCatalogue } from '../../src/features/index.js';
import type { CommandRegistry } from '../../src/features/registry.js';
import type { CommandContext, CommandInfo } from '../../src/features/types.js';

/** `help` declares the registry, the demo note and the version: nothing else is built. */
function asked(registry: CommandRegistry<CommandInfo>, kind: 'channel' | 'personal', backend: 'sandbox' | 'bill', version = '1.2.3') {
  return {
    ctx: { scope: { kind } } as CommandContext,
    deps: { registry, note: backend === 'sandbox' ? SANDBOX_NOTE : undefined, version },
  };
}

const help = ({ ctx, deps }: ReturnType<typeof asked>) => helpCommand.run(ctx, deps);

describe('help card', () => {
  it('is built once per kind of conversation, note and version, and cannot be changed by a turn', async () => {
    const registry = commandCatalogue();
    const first = await help(asked(registry, 'channel', 'sandbox'));
    expect(await help(asked(registry, 'channel', 'sandbox'))).toBe(first);
    expect(Object.isFrozen(first.card)).toBe(true);
    expect(() => (first.card.body as unknown[]).push({ type: 'TextBlock', text: 'x' })).toThrow(TypeError);
    expect(JSON.stringify(first.card)).toContain(SANDBOX_NOTE);

    const real = await help(asked(registry, 'channel', 'bill'));
    expect(real).not.toBe(first);
    expect(JSON.stringify(real.card)).not.toContain(SANDBOX_NOTE);
    expect(await help(asked(registry, 'channel', 'bill', '1.2.4'))).not.toBe(real);
  });

  it('shows a command registered later', async () => {
    const registry = commandCatalogue();
    const before = await help(asked(registry, 'personal', 'bill'));
    const late: CommandInfo = {
      name: 'zz late',
      usage: 'zz late',
      description: 'Registered after the first help',
      examples: ['zz late'],
      upstream: false,
    };
    registry.register(late);
    const after = await help(asked(registry, 'personal', 'bill'));
    expect(after).not.toBe(before);
    expect(JSON.stringify(after.card)).toContain('Registered after the first help');
    expect(JSON.stringify(before.card)).not.toContain('Registered after the first help');
  });
});
