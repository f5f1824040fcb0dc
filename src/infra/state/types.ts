// The storage interface every stateful feature uses; an SQLite file under STATE_DIR for one instance, Redis for a fleet.

export interface SetOptions {
  ttlMs?: number;
}

export interface StateStore {
  /** 'file': the single-instance SQLite store under STATE_DIR; 'redis': the fleet's shared store. */
  readonly kind: 'file' | 'redis';
  get<T>(ns: string, key: string): Promise<T | undefined>;
  /** Resolves once the write is durable (committed and synced to disk, or acknowledged by Redis); rejects otherwise. */
  set(ns: string, key: string, value: unknown, opts?: SetOptions): Promise<void>;
  /** Atomically sets when no live entry exists; true when this call created it (dedupe, leases). */
  setIfAbsent(ns: string, key: string, value: unknown, opts?: SetOptions): Promise<boolean>;
  delete(ns: string, key: string): Promise<boolean>;
  /** Every live entry of a namespace. Namespaces are meant to stay small (thousands, not millions). */
  entries<T>(ns: string): Promise<Array<[string, T]>>;
  /** Atomically puts `value` first in the list at `key`, keeps `keep` and restarts the TTL: a bounded "last N" for namespaces read by key. */
  prepend(ns: string, key: string, value: unknown, keep: number, opts?: SetOptions): Promise<void>;
  /** Where appendAudit writes the audit trail, for `status`: STATE_DIR/audit.log, or the Redis stream "audit". */
  readonly auditLocation: string;
  appendAudit(record: object): Promise<void>;
  isReady(): boolean;
  close(): Promise<void>;
}

/** Namespaces become key prefixes: lower-case letters, digits and dashes only. */
export function checkNamespace(ns: string): void {
  if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(ns)) throw new Error(`Invalid state namespace name "${ns}"`);
}

/** A value as both stores keep it: JSON text (undefined is kept as null). */
export function encode(value: unknown): string {
  return JSON.stringify(value === undefined ? null : value);
}

/** Namespaces in use, in one place so nothing collides. */
export const NS = {
  seenActivities: 'seen-activities',
  conversations: 'conversations',
  bindings: 'bindings',
  subscriptions: 'subscriptions',
  webhookKeys: 'webhook-keys',
  webhookEvents: 'webhook-events',
  outbox: 'outbox',
  deadLetters: 'dead-letters',
  digests: 'digests',
  /** The per-org mirror of bills, invoices, vendors and customers (src/mirror). */
  mirror: 'mirror',
  userLinks: 'user-links',
  /** Short leases of changes to stored records (withEditLock), keyed "<namespace>|<key>" of the record being changed. */
  editLocks: 'edit-locks',
  approvalCards: 'approval-cards',
  /** Network invitations on their way to BILL (one per org and party, held 2 minutes at most). */
  networkInvites: 'network-invites',
  /** Approvers' daily digest slots already handled (one per person, org and day). */
  approvalDigests: 'approval-digests',
  /** The buttons each card message the bot posted carries (one per message, kept 7 days). */
  cardMessages: 'card-messages',
  /** The last webhook events of each org, for the dashboard tab (prepend(), 10 per org, kept 30 days). */
  tabEvents: 'tab-events',
} as const;
