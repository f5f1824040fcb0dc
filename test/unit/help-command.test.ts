// `help` builds its card once per kind of conversation, demo note and version, and hands out a frozen card.
import { describe, expect, it } from 'vitest';
import { helpCommand } from '../../src/features/admin/help.js';
import { SANDBOX_NOTE } from '../../src/cards/words.js';
import { createRegistry } from '../../src/features/index.js';
import type { CommandContext, CommandDefinition } from '../../src/features/types.js';
import type { CardReply } from '../../src/cards/card.js';

function ctx(registry: ReturnType<typeof createRegistry>, kind: 'channel' | 'personal', backend: 'sandbox' | 'bill', version = '1.2.3'): CommandContext {
  return { services: { registry, backend: { kind: backend }, config: { version } }, scope: { kind } } as unknown as CommandContext;
}

const help = (c: CommandContext) => helpCommand.run(c) as Promise<CardReply>;

describe('help card', () => {
  it('is built once per kind of conversation, note and version, and cannot be changed by a turn', async () => {
    const registry = createRegistry();
    const first = await help(ctx(registry, 'channel', 'sandbox'));
    expect(await help(ctx(registry, 'channel', 'sandbox'))).toBe(first);
    expect(Object.isFrozen(first.card)).toBe(true);
    expect(() => (first.card.body as unknown[]).push({ type: 'TextBlock', text: 'x' })).toThrow(TypeError);
    expect(JSON.stringify(first.card)).toContain(SANDBOX_NOTE);

    const real = await help(ctx(registry, 'channel', 'bill'));
    expect(real).not.toBe(first);
    expect(JSON.stringify(real.card)).not.toContain(SANDBOX_NOTE);
    expect(await help(ctx(registry, 'channel', 'bill', '1.2.4'))).not.toBe(real);
  });

  it('shows a command registered later', async () => {
    const registry = createRegistry();
    const before = await help(ctx(registry, 'personal', 'bill'));
    const late: CommandDefinition = { name: 'zz late', usage: 'zz late', description: 'Registered after the first help', examples: ['zz late'], upstream: false, async run() { return before; } };
    registry.register(late);
    const after = await help(ctx(registry, 'personal', 'bill'));
    expect(after).not.toBe(before);
    expect(JSON.stringify(after.card)).toContain('Registered after the first help');
    expect(JSON.stringify(before.card)).not.toContain('Registered after the first help');
  });
});
