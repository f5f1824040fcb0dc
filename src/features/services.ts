// The parts the Teams edge and the dispatcher use, built once in app.ts; each feature declares its own (features/index.ts).
import type { Clock } from '../infra/clock.js';
import type { Config } from '../config.js';
import type { GraphTeams } from '../graph/teams.js';
import type { OrgBindings } from '../bindings/bindings.js';
import type { Installations } from '../bindings/installations.js';
import type { StateStore } from '../infra/state/types.js';
import type { AccessPolicy } from './access.js';
import type { CommandRegistry } from './registry.js';

/** Which BILL the bot talks to; the help card footer says so when it is the embedded sandbox. */
export interface BackendInfo {
  kind: 'sandbox' | 'bill';
  baseUrl: string;
}

/**
 * What the Teams edge (teams/bot.ts, teams/install.ts) and the dispatcher use; the features get their own parts
 * (src/features/index.ts FeatureDeps).
 */
export interface BotServices {
  config: Config;
  clock: Clock;
  registry: CommandRegistry;
  state: StateStore;
  backend: BackendInfo;
  access: AccessPolicy;
  /** Which BILL organisation a team or chat uses, and its admin side (mode, describe, link, unlink). */
  orgBindings: OrgBindings;
  /** Where the bot is installed (conversation references) and the clean-up when it is removed. */
  installs: Installations;
  /** Graph GET /teams/{id}; undefined in local mode (no app id) or without a client secret. */
  graph: GraphTeams | undefined;
}
