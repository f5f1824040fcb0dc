// Shapes shared by the receiver, the outbox worker, the digests and the parts that send (src/teams implements them),
// and the dependencies they are all built from.
import type { Clock } from '../infra/clock.js';
import type { Config } from '../config.js';
import type { Logger, SecretRegistry } from '../infra/log.js';
import type { BillGateway } from '../bill/gateway.js';
import type { Mirror } from '../mirror/mirror.js';
import type { EntityKind } from '../mirror/records.js';
import type { AuditTrail } from '../infra/audit.js';
import type { BindingScope } from '../bindings/bindings.js';
import type { StateStore } from '../infra/state/types.js';
import type { DigestContent } from './digests.js';

/** A Bot Framework ConversationReference as JSON (what TurnContext.getConversationReference returns); no secrets. */
export type ConversationRef = Record<string, unknown>;

/** A team channel (tenant id in lower case, team and channel thread ids), as subscriptions and digests are keyed. */
export interface ChannelTarget {
  tenantId: string;
  teamId: string;
  channelId: string;
}

/** A card and its one-line summary (src/cards' CardReply has this shape). */
interface OutgoingMessage {
  card: object;
  summary: string;
}

export type SendOutcome =
  | { ok: true }
  /** status 0: no HTTP answer (network). code: the Bot Framework error code, e.g. BotNotInConversationRoster. */
  | { ok: false; status: number; code?: string; retryAfterMs?: number; message: string };

/** Teams says the bot was taken out of the channel (403 BotNotInConversationRoster or 404): the reason to record, else undefined. */
export const removedFromChannel = (o: Extract<SendOutcome, { ok: false }>): string | undefined =>
  (o.status === 403 && o.code === 'BotNotInConversationRoster') || o.status === 404 ? (o.code ?? `HTTP ${o.status}`) : undefined;

/** Proactive sends through the Bot Framework with a stored conversation reference (src/teams/proactive.ts). */
export interface ChannelSender {
  send(reference: ConversationRef, message: OutgoingMessage): Promise<SendOutcome>;
}

/** What the worker learns about an event before rendering it (one BILL look-up per event, not per channel). */
export interface Enrichment {
  /** Bill id -> the vendor's invoice number, for payment events. */
  billNumbers?: Record<string, string>;
  vendorName?: string;
  customerName?: string;
  currency?: string;
}

/** One accepted BILL event in the durable outbox (NS.outbox, key "ev|<orgId>|<eventId>": outboxKey). */
export interface OutboxEvent {
  v: 1;
  eventId: string;
  type: string;
  orgId: string;
  entityType: EntityKind;
  /** The record, reduced to the fields cards use (no bank or tax numbers): the payload's until `confirmed`, then BILL's. */
  entity: Record<string, unknown>;
  errors: Array<{ code?: string; message?: string }>;
  receivedAt: number;
  /** `entity` was replaced by the record as BILL answered it (or the record was gone and nothing is posted). */
  confirmed?: boolean;
  /** Reads of the record that BILL did not answer (the deliveries back off meanwhile). */
  confirmTries?: number;
  enrichment?: Enrichment;
  /** Subscription key -> delivery; set once the event is routed (and the records it names were marked stale in the mirror). */
  targets?: Record<string, DeliveryState>;
}

export interface DeliveryState {
  state: 'pending' | 'sent' | 'dropped' | 'dead';
  tries: number;
  /** Earliest next attempt (ms since epoch). */
  nextAt: number;
}

/** Renders cards for the worker and the digests (src/features/notifications/cards.ts). */
export interface NotificationPresenter {
  event(event: OutboxEvent): OutgoingMessage;
  digest(content: DigestContent): OutgoingMessage;
}

/** What the notifications are built from (app.ts); each part takes what it uses of it. */
export interface NotifyDeps {
  state: StateStore;
  clock: Clock;
  log: Logger;
  secrets: SecretRegistry;
  bill: BillGateway;
  /** Webhooks tell it what is stale; cards' names come from it. */
  mirror: Pick<Mirror, 'markStale' | 'answers' | 'names' | 'rows'>;
  resolveOrg: (scope: BindingScope) => Promise<string | undefined>;
  /** The organisations this deployment serves (BILL_ORG_ID, or BILL_ALLOWED_ORG_IDS); events of others are ignored. */
  servesOrg: (orgId: string) => boolean;
  /** BILL_WEBHOOK_SECURITY_KEY[S] by organisation: each verifies its own organisation's events only, whatever their subscriptionId. */
  envKeys: Record<string, string>;
  audit: Pick<AuditTrail, 'admin'>;
  sender: ChannelSender;
  presenter: NotificationPresenter;
  settings: Pick<Config, 'secretsKey' | 'nodeEnv' | 'timeZone' | 'cache'>;
}
