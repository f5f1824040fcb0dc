// `help`: every command usable here, with usage and an example.
import { helpCard } from '../cards/help.js';
import type { CommandDefinition } from './types.js';

export const SANDBOX_NOTE = 'Demo organisation — simulated data';

export const helpCommand: CommandDefinition = {
  name: 'help',
  usage: 'help',
  description: 'List every command with an example',
  examples: ['help'],
  upstream: false,
  rank: 0,
  async run(ctx) {
    const { registry, backend, config } = ctx.services;
    return helpCard(registry.forScope(ctx.scope.kind), {
      note: backend.kind === 'sandbox' ? SANDBOX_NOTE : undefined,
      version: config.version,
    });
  },
};
