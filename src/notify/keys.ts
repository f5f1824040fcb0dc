// Security keys of the BILL webhook subscriptions billbridge created: kept in the StateStore (NS.webhookKeys),
// sealed with SECRETS_KEY (AES-256-GCM) when one is configured, and registered with the SecretRegistry as soon
// as they are read so no log line can print them. BILL shows a key once (create or rotation), so losing it means
// rotating the key; the previous key keeps verifying for a while after a rotation (events already on their way).
import { openText, sealText } from '../state/sealing.js';
import type { Clock } from '../clock.js';
import type { Logger, SecretRegistry } from '../log.js';
import { NS, type StateStore } from '../state/types.js';

/** How long the key a rotation replaced still verifies events. */
export const ROTATION_GRACE_MS = 24 * 3_600_000;

type Sealed = { alg: 'aes-256-gcm'; iv: string; tag: string; data: string } | { alg: 'none'; value: string };

interface StoredKey {
  v: 1;
  subscriptionId: string;
  orgId: string;
  name: string;
  notificationUrl: string;
  events: string[];
  key: Sealed;
  previous?: { key: Sealed; until: number };
  createdAt: number;
  updatedAt: number;
}

/** What callers see of a stored subscription: never the key itself. */
export interface WebhookKeyInfo {
  subscriptionId: string;
  orgId: string;
  name: string;
  notificationUrl: string;
  events: string[];
  createdAt: number;
  updatedAt: number;
  sealed: boolean;
}

export interface WebhookKeysDeps {
  state: StateStore;
  clock: Clock;
  log: Logger;
  secrets: SecretRegistry;
  /** SECRETS_KEY: 32 bytes; without it keys are stored as they are (file mode 0600). */
  secretsKey: Buffer | undefined;
}

export class WebhookKeys {
  private warned = false;

  constructor(private readonly deps: WebhookKeysDeps) {}

  /** Stores the key BILL returned for a new subscription (or a rotated one). */
  async save(input: { subscriptionId: string; orgId: string; name: string; notificationUrl: string; events: string[]; securityKey: string }): Promise<void> {
    this.deps.secrets.add(input.securityKey);
    const now = this.deps.clock.now();
    const existing = await this.deps.state.get<StoredKey>(NS.webhookKeys, input.subscriptionId);
    const record: StoredKey = {
      v: 1,
      subscriptionId: input.subscriptionId,
      orgId: input.orgId,
      name: input.name,
      notificationUrl: input.notificationUrl,
      events: input.events,
      key: this.seal(input.securityKey),
      // The key being replaced goes on verifying events BILL signed before the rotation.
      previous: existing && existing.v === 1 ? { key: existing.key, until: now + ROTATION_GRACE_MS } : undefined,
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    await this.deps.state.set(NS.webhookKeys, input.subscriptionId, record);
  }

  /** The keys that may verify an event of this subscription (current first), or [] when it is not ours. */
  async keysFor(subscriptionId: string): Promise<Array<{ key: string; orgId: string }>> {
    const record = await this.deps.state.get<StoredKey>(NS.webhookKeys, subscriptionId);
    if (!record || record.v !== 1 || record.subscriptionId !== subscriptionId) return [];
    const out: Array<{ key: string; orgId: string }> = [];
    const current = this.open(record.key);
    if (current) out.push({ key: current, orgId: record.orgId });
    if (record.previous && record.previous.until > this.deps.clock.now()) {
      const old = this.open(record.previous.key);
      if (old) out.push({ key: old, orgId: record.orgId });
    }
    return out;
  }

  async list(orgId?: string): Promise<WebhookKeyInfo[]> {
    return (await this.deps.state.entries<StoredKey>(NS.webhookKeys))
      .map(([, r]) => r)
      .filter((r) => r && r.v === 1 && (!orgId || r.orgId === orgId))
      .map((r) => ({
        subscriptionId: r.subscriptionId,
        orgId: r.orgId,
        name: r.name,
        notificationUrl: r.notificationUrl,
        events: r.events,
        createdAt: r.createdAt,
        updatedAt: r.updatedAt,
        sealed: r.key.alg !== 'none',
      }));
  }

  async has(subscriptionId: string): Promise<boolean> {
    return (await this.deps.state.get<StoredKey>(NS.webhookKeys, subscriptionId)) !== undefined;
  }

  async remove(subscriptionId: string): Promise<boolean> {
    return this.deps.state.delete(NS.webhookKeys, subscriptionId);
  }

  /** Reads every stored key once so the SecretRegistry scrubs them from logs from the start. */
  async registerAll(): Promise<number> {
    let n = 0;
    for (const [id] of await this.deps.state.entries<StoredKey>(NS.webhookKeys)) n += (await this.keysFor(id)).length;
    return n;
  }

  private seal(value: string): Sealed {
    const key = this.deps.secretsKey;
    if (!key) {
      if (!this.warned) {
        this.warned = true;
        this.deps.log.warn('SECRETS_KEY is not set: webhook security keys are stored unencrypted in the state store (file mode 0600); set SECRETS_KEY to seal them');
      }
      return { alg: 'none', value };
    }
    return { alg: 'aes-256-gcm', ...sealText(key, value, { encoding: 'base64' }) };
  }

  private open(sealed: Sealed | undefined): string | undefined {
    if (!sealed) return undefined;
    let value: string | undefined;
    if (sealed.alg === 'none') value = typeof sealed.value === 'string' ? sealed.value : undefined;
    else if (sealed.alg === 'aes-256-gcm') {
      const key = this.deps.secretsKey;
      if (!key) {
        this.deps.log.error('a webhook security key is sealed but SECRETS_KEY is not set: events of that subscription cannot be verified');
        return undefined;
      }
      try {
        value = openText(key, sealed, { encoding: 'base64' });
      } catch {
        this.deps.log.error('a webhook security key could not be unsealed (SECRETS_KEY changed?): events of that subscription cannot be verified');
        return undefined;
      }
    }
    if (value) this.deps.secrets.add(value);
    return value;
  }
}
