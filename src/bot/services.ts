// The parts a turn may use, built once in app.ts and handed to the bot; handlers never build their own.
import type { BillGateway } from '../bill/gateway.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { GraphTeams } from '../graph/teams.js';
import type { Mirror } from '../mirror/mirror.js';
import type { Limiter } from '../limits/types.js';
import type { OrgBindings } from '../state/bindings.js';
import type { Installations } from '../state/conversations.js';
import type { StateStore } from '../state/types.js';
import type { AuditTrail } from '../state/audit.js';
import type { AccessPolicy } from './access.js';
import type { Approvals } from '../features/approvals/service.js';
import type { CommandRegistry } from '../features/registry.js';
import type { ConversationScope } from '../features/types.js';
import type { Notifications } from '../notify/index.js';

/** Which BILL the bot talks to; the help card footer says so when it is the embedded sandbox. */
export interface BackendInfo {
  kind: 'sandbox' | 'bill';
  baseUrl: string;
}

/** Finds the BILL organisation a conversation is bound to, from its tenant and team ids. */
export interface OrgResolver {
  resolve(scope: ConversationScope): Promise<string | undefined>;
}

export interface BotServices {
  config: Config;
  clock: Clock;
  registry: CommandRegistry;
  state: StateStore;
  backend: BackendInfo;
  bindings: OrgResolver;
  access: AccessPolicy;
  /** The one limiter every outbound call goes through. */
  limiter: Limiter;
  /** The per-org mirror of bills, invoices, vendors and customers, and the answers it does not hold (mirror.answers). */
  mirror: Mirror;
  /** The audit trail; admin actions (link, unlink, subscribe, webhook setup) call audit.admin(...). */
  audit: AuditTrail;
  /** The same bindings as `bindings`, with their admin side (mode, describe, link, unlink). */
  orgBindings?: OrgBindings;
  /** Where the bot is installed (conversation references) and the clean-up when it is removed. */
  installs?: Installations;
  /** Graph GET /teams/{id}; undefined in local mode (no app id) or without a client secret. */
  graph?: GraphTeams;
  /** BILL: `bill.org(orgId, { priority, maxWaitMs })` for AP/AR, `bill.spend(orgId)` for Spend & Expense, `bill.status()`. */
  bill: BillGateway;
  /** Approvals run as the approver (links, card records, signing); undefined without SECRETS_KEY: approvals are off. */
  approvals?: Approvals;
  /** BILL webhook notifications: channel subscriptions, the outbox worker, digests, webhook keys and set-up. */
  notify?: Notifications;
  /** Stored secrets (webhook keys, approvers' tokens) SECRETS_KEY cannot open, counted at start-up: admins see it in status. */
  storedSecrets?: { unopenable: number };
}
