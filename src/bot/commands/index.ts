// Every command billbridge ships, registered once; the router, help card and manifest read this registry.
import { CommandRegistry } from './registry.js';
import { helpCommand } from './help.js';
import { linkCommand, unlinkCommand } from './link.js';
import { statusCommand } from './status.js';

export function createRegistry(): CommandRegistry {
  return new CommandRegistry().register(helpCommand).register(linkCommand, unlinkCommand).register(statusCommand);
}
