// Security keys of the BILL webhook subscriptions billbridge created (NS.webhookKeys), sealed when SECRETS_KEY is set
// (AES-256-GCM under a key derived for this purpose only, bound to subscription id and org id, so a sealed key copied
// under another subscription does not open), and registered with the SecretRegistry as soon as they are read so no log
// line can print them (a rotated-out key until its grace ends). With NODE_ENV=production and no SECRETS_KEY nothing is
// stored (refuseUnsealed). BILL shows a key once (create or rotation); the previous key verifies for a while after a
// rotation (events already on their way).
import { deriveKey, openText, sealText } from '../infra/state/sealing.js';
import { NS } from '../infra/state/types.js';
import type { NotifyDeps } from './types.js';

/** How long the key a rotation replaced still verifies events. */
export const ROTATION_GRACE_MS = 24 * 3_600_000;

type Sealed = { alg: 'aes-256-gcm/v2'; iv: string; tag: string; data: string } | { alg: 'none'; value: string };

/** Purpose of the key derived from SECRETS_KEY for webhook keys (approver links use 'user-links/seal/v1'). */
const SEAL_PURPOSE = 'webhook-keys/seal/v1';

interface StoredKey {
  /** A record of another version is not read. */
  v: number;
  subscriptionId: string;
  orgId: string;
  name: string;
  notificationUrl: string;
  events: string[];
  key: Sealed;
  previous?: { key: Sealed; until: number };
}

/** What callers see of a stored subscription: never the key itself. */
export type WebhookKeyInfo = Omit<StoredKey, 'v' | 'key' | 'previous'> & { sealed: boolean };

/** The subscription and organisation a sealed key is bound to. */
type Owner = Pick<StoredKey, 'subscriptionId' | 'orgId'>;

type WebhookKeysDeps = Pick<NotifyDeps, 'state' | 'clock' | 'log' | 'secrets'> & {
  /** SECRETS_KEY: 32 bytes; without it keys are stored as they are (file mode 0600), unless refuseUnsealed. */
  secretsKey: Buffer | undefined;
  /** NODE_ENV=production: never store a key unsealed. */
  refuseUnsealed?: boolean;
};

/** Why a key cannot be stored right now (production without SECRETS_KEY), in words for the admin. */
export const UNSEALED_REFUSED =
  'SECRETS_KEY is not set, and with NODE_ENV=production billbridge does not store webhook security keys unencrypted. Set SECRETS_KEY (openssl rand -base64 32) and restart, then set up webhooks again.';

const aad = (owner: Owner): string => `webhook-key|v2|${owner.subscriptionId}|${owner.orgId}`;

export class WebhookKeys {
  private warned = false;
  private readonly sealKey: Buffer | undefined;

  constructor(private readonly deps: WebhookKeysDeps) {
    this.sealKey = deps.secretsKey ? deriveKey(deps.secretsKey, SEAL_PURPOSE) : undefined;
  }

  /** False when a key could not be stored (production without SECRETS_KEY): check before asking BILL for one. */
  get canStore(): boolean {
    return !!this.deps.secretsKey || !this.deps.refuseUnsealed;
  }

  async save(
    input: Pick<StoredKey, 'subscriptionId' | 'orgId' | 'name' | 'notificationUrl' | 'events'> & { securityKey: string },
  ): Promise<void> {
    this.deps.secrets.add(input.securityKey);
    if (!this.canStore) throw new Error(UNSEALED_REFUSED);
    const existing = await this.deps.state.get<StoredKey>(NS.webhookKeys, input.subscriptionId);
    // The key rotated out before this one verifies nothing any more: it leaves the log scrubber.
    const twiceRotated = existing?.v === 1 ? this.open(existing.previous?.key, existing) : undefined;
    if (twiceRotated !== undefined && twiceRotated !== input.securityKey) this.deps.secrets.delete(twiceRotated);
    const replaced = existing?.v === 1 && this.open(existing.key, existing) !== input.securityKey ? existing : undefined;
    const { securityKey, ...info } = input;
    const record: StoredKey = {
      v: 1,
      ...info,
      key: this.seal(securityKey, input),
      // The key being replaced goes on verifying events BILL signed before the rotation (sealed again for this record).
      previous: replaced ? this.carryOver(replaced, replaced.key, input, this.deps.clock.now() + ROTATION_GRACE_MS) : undefined,
    };
    await this.deps.state.set(NS.webhookKeys, input.subscriptionId, record);
  }

  /** The keys that may verify an event of this subscription (current first), or [] when it is not ours. */
  async keysFor(subscriptionId: string): Promise<Array<{ key: string; orgId: string }>> {
    const record = await this.deps.state.get<StoredKey>(NS.webhookKeys, subscriptionId);
    if (record?.v !== 1 || record.subscriptionId !== subscriptionId) return [];
    const { previous } = record;
    const boxes: Array<[Sealed, number | undefined]> = [[record.key, undefined]];
    if (previous && previous.until > this.deps.clock.now()) boxes.push([previous.key, previous.until]);
    const out: Array<{ key: string; orgId: string }> = [];
    for (const [box, until] of boxes) {
      const key = this.open(box, record);
      this.scrub(key, until);
      if (key) out.push({ key, orgId: record.orgId });
      else if (box.alg !== 'none')
        this.deps.log.error(
          this.deps.secretsKey
            ? 'a webhook security key could not be unsealed (SECRETS_KEY changed, or the record belongs to another subscription): events of that subscription cannot be verified'
            : 'a webhook security key is sealed but SECRETS_KEY is not set: events of that subscription cannot be verified',
        );
    }
    return out;
  }

  /** The organisation's subscriptions: everything stored but the keys themselves. */
  async list(orgId: string): Promise<WebhookKeyInfo[]> {
    return (await this.deps.state.entries<StoredKey | null>(NS.webhookKeys))
      .map(([, r]) => r)
      .filter((r): r is StoredKey => !!r && r.v === 1 && r.orgId === orgId)
      .map(({ v: _v, key, previous: _previous, ...info }) => ({ ...info, sealed: key.alg !== 'none' }));
  }

  async has(subscriptionId: string): Promise<boolean> {
    return (await this.deps.state.get<StoredKey>(NS.webhookKeys, subscriptionId)) !== undefined;
  }

  /** Forgets a subscription's keys: the stored record, and their place in the log scrubber (they verify nothing now). */
  async remove(subscriptionId: string): Promise<boolean> {
    const record = await this.deps.state.get<StoredKey>(NS.webhookKeys, subscriptionId);
    const removed = await this.deps.state.delete(NS.webhookKeys, subscriptionId);
    if (record?.v === 1) for (const box of [record.key, record.previous?.key]) this.deps.secrets.delete(this.open(box, record));
    return removed;
  }

  /**
   * At start-up: registers every stored key with the SecretRegistry so logs are scrubbed from the start, seals what was
   * stored before SECRETS_KEY was set, and answers how many keys cannot be opened now (another key sealed them, none is
   * set, or the record was moved under another subscription), so a changed SECRETS_KEY is said before BILL disables anything.
   */
  async registerAll(): Promise<number> {
    let unopenable = 0;
    for (const [id, record] of await this.deps.state.entries<StoredKey | null>(NS.webhookKeys)) {
      if (record?.v !== 1) continue;
      const inGrace = !!record.previous && record.previous.until > this.deps.clock.now();
      unopenable += (inGrace ? 2 : 1) - (await this.keysFor(id)).length;
      if (this.sealKey && record.subscriptionId === id && [record.key, record.previous?.key].some((b) => b && b.alg !== 'aes-256-gcm/v2')) {
        // keysFor registered it with the log scrubber.
        const current = this.open(record.key, record);
        if (current === undefined) continue;
        const previous = record.previous ? this.carryOver(record, record.previous.key, record, record.previous.until) : undefined;
        const upgraded: StoredKey = { ...record, key: this.seal(current, record), previous };
        await this.deps.state.set(NS.webhookKeys, id, upgraded);
      }
    }
    return unopenable;
  }

  /** A key of `existing` kept as the previous key until `until`, sealed for `owner` (dropped when it cannot be opened). */
  private carryOver(existing: StoredKey, box: Sealed, owner: Owner, until: number): StoredKey['previous'] {
    const value = this.open(box, existing);
    this.scrub(value, until);
    return value === undefined ? undefined : { key: this.seal(value, owner), until };
  }

  private seal(value: string, owner: Owner): Sealed {
    const key = this.sealKey;
    if (!key) {
      if (!this.warned) {
        this.warned = true;
        this.deps.log.warn(
          'SECRETS_KEY is not set: webhook security keys are stored unencrypted in the state store (file mode 0600); set SECRETS_KEY to seal them',
        );
      }
      return { alg: 'none', value };
    }
    return { alg: 'aes-256-gcm/v2', ...sealText(key, value, aad(owner)) };
  }

  /** The key in a box, or undefined (no log line). */
  private open(sealed: Sealed | undefined, owner: Owner): string | undefined {
    if (sealed?.alg === 'none') return typeof sealed.value === 'string' && sealed.value ? sealed.value : undefined;
    // Stored data: an algorithm this version does not know opens nothing.
    if (sealed?.alg !== 'aes-256-gcm/v2' || !this.sealKey) return undefined;
    try {
      return openText(this.sealKey, sealed, aad(owner)) || undefined;
    } catch {
      // Sealed under another SECRETS_KEY, or for another subscription.
      return undefined;
    }
  }

  /** Registers a key with the log scrubber: for good, or (a rotated-out key) until `until` only, even if it was there for good. */
  private scrub(value: string | undefined, until: number | undefined): void {
    if (until !== undefined) this.deps.secrets.delete(value);
    this.deps.secrets.add(value, until === undefined ? undefined : until - this.deps.clock.now());
  }
}
