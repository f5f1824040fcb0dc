// Approvers' own BILL identities at rest (approvals run as the approver, never as the bot): each link is sealed with
// AES-256-GCM under a key derived from SECRETS_KEY and stored under an opaque key derived from (tenant, Entra object
// id, org). Without SECRETS_KEY nothing in NS.userLinks can be read, or even told apart: not the token, not who.
import { createHmac } from 'node:crypto';
import type { Clock } from '../../infra/clock.js';
import { withEditLock } from '../../infra/state/editLock.js';
import { deriveKey, openText, sealText, type SealedBox } from '../../infra/state/sealing.js';
import type { Logger } from '../../infra/log.js';
import { NS, type StateStore } from '../../infra/state/types.js';
import { BillApiError, NotLinked } from '../../errors.js';
import type { PersonCredentials } from '../../bill/gateway.js';

/** Who a link belongs to: a person of a tenant, in one BILL organisation. */
interface UserLinkRef {
  tenantId: string;
  aadObjectId: string;
  orgId: string;
}

/** A person's link to their BILL identity. Everything in it is sealed at rest. */
export interface UserLink extends UserLinkRef {
  /** The BILL user the token signs in as (from the verifying sign-in). */
  billUserId: string;
  /** AP/AR sync token (name and password). Never shown or logged, nor taught to the log scrubber (it would censor that text everywhere). */
  token: { name: string; value: string };
  /** Bot Framework id of the person (29:...): what Teams' refresh.userIds and proactive sends name. */
  teamsUserId: string;
  /** Teams display name, for "Approved by Dana Lee at 10:42". */
  displayName?: string;
  /** The personal chat's conversation reference (digests go there). */
  reference?: Record<string, unknown>;
  /** Daily digest time "HH:MM" in BOT_TIMEZONE; undefined when off. */
  digestTime?: string;
  /** When the digest was set: earlier slots are never sent. */
  digestSince?: number;
}

const lower = (id: string): string => id.trim().toLowerCase();

/** "tenant|person", lower case: the person's session slot (`owner`) and the first part of their links' keys. */
const personOf = (p: Pick<UserLinkRef, 'tenantId' | 'aadObjectId'>): string => `${lower(p.tenantId)}|${lower(p.aadObjectId)}`;

/** The person's own BILL sign-in, in a session slot of their own (`owner`) that their connect attempts count against. */
export function personCredentials(link: Pick<UserLink, 'tenantId' | 'aadObjectId' | 'token'>): PersonCredentials {
  return { username: link.token.name, password: link.token.value, owner: personOf(link) };
}

export class UserLinks {
  private readonly sealKey: Buffer;
  private readonly idKey: Buffer;
  private warnedUnreadable = false;

  constructor(private readonly deps: { store: StateStore; secretsKey: Buffer; log: Logger; clock: Clock }) {
    this.sealKey = deriveKey(deps.secretsKey, 'user-links/seal/v1');
    this.idKey = deriveKey(deps.secretsKey, 'user-links/ids/v1');
  }

  /** The person's link in this org, or undefined (never linked, disconnected, or sealed under another SECRETS_KEY). */
  async get(ref: UserLinkRef): Promise<UserLink | undefined> {
    const key = this.key(ref);
    const sealed = await this.deps.store.get<unknown>(NS.userLinks, key);
    const link = sealed ? this.open(key, sealed) : undefined;
    // The record must be this very person's in this org, whatever key it was found under.
    const same = link?.tenantId === lower(ref.tenantId) && link.aadObjectId === lower(ref.aadObjectId) && link.orgId === ref.orgId.trim();
    return same ? link : undefined;
  }

  /** Stores (or replaces) a link; after any change of it in flight, never under it. */
  put(link: UserLink): Promise<void> {
    return this.editing(link, () => this.write(link));
  }

  /** Changes a stored link (undefined when there is none) under the edit lock: concurrent changes all land, none undoes a disconnect. */
  update(
    ref: UserLinkRef,
    patch: Partial<Pick<UserLink, 'digestTime' | 'digestSince' | 'reference' | 'displayName' | 'teamsUserId'>>,
  ): Promise<UserLink | undefined> {
    return this.editing(ref, async () => {
      const link = await this.get(ref);
      if (!link) return undefined;
      const next: UserLink = { ...link, ...patch };
      await this.write(next);
      return next;
    });
  }

  remove(ref: UserLinkRef): Promise<boolean> {
    return this.editing(ref, () => this.deps.store.delete(NS.userLinks, this.key(ref)));
  }

  /** One write of a link at a time across instances (no compare-and-set), under a lease outside NS.userLinks (links only). */
  private editing<T>(ref: UserLinkRef, change: () => Promise<T>): Promise<T> {
    return withEditLock(this.deps, { ns: NS.userLinks, key: this.key(ref) }, change);
  }

  private async write(link: UserLink): Promise<void> {
    const value: UserLink = { ...link, tenantId: lower(link.tenantId), aadObjectId: lower(link.aadObjectId), orgId: link.orgId.trim() };
    const key = this.key(value);
    // The storage key is authenticated with the data: a sealed link moved under another person's key will not open.
    const box = sealText(this.sealKey, JSON.stringify(value), `user-link|v1|${key}`);
    await this.deps.store.set(NS.userLinks, key, { v: 1, ...box });
  }

  /** Every link that opens with this SECRETS_KEY; with `person`, only theirs (their keys share a prefix). */
  async all(person?: Pick<UserLinkRef, 'tenantId' | 'aadObjectId'>): Promise<UserLink[]> {
    const prefix = person ? `${this.personPart(person)}.` : '';
    const entries = await this.deps.store.entries<unknown>(NS.userLinks);
    const links = entries.map(([key, sealed]) => (key.startsWith(prefix) ? this.open(key, sealed) : undefined));
    return links.filter((link) => link !== undefined);
  }

  /** How many stored links cannot be opened with this SECRETS_KEY (start-up report; no log line per link). */
  async unopenable(): Promise<number> {
    const entries = await this.deps.store.entries<unknown>(NS.userLinks);
    return entries.filter(([key, sealed]) => this.unseal(key, sealed) === undefined).length;
  }

  /** Opaque storage key: HMAC of the person, then HMAC of the org (so a person's links share a prefix). */
  key(ref: UserLinkRef): string {
    return `${this.personPart(ref)}.${this.mac(`org|${ref.orgId.trim()}`)}`;
  }

  private personPart(p: Pick<UserLinkRef, 'tenantId' | 'aadObjectId'>): string {
    return this.mac(`person|${personOf(p)}`);
  }

  private mac(text: string): string {
    return createHmac('sha256', this.idKey).update(text).digest('base64url').slice(0, 32);
  }

  /** The plain text of a sealed link of this format (v1) under this SECRETS_KEY; anything else is not opened. */
  private unseal(key: string, stored: unknown): string | undefined {
    const box = stored as (SealedBox & { v?: unknown }) | null | undefined;
    try {
      return box?.v === 1 ? openText(this.sealKey, box, `user-link|v1|${key}`) : undefined;
    } catch {
      return undefined;
    }
  }

  private open(key: string, sealed: unknown): UserLink | undefined {
    const text = this.unseal(key, sealed);
    if (text !== undefined) return JSON.parse(text) as UserLink;
    if (!this.warnedUnreadable) {
      this.warnedUnreadable = true;
      this.deps.log.warn('a stored approver link cannot be opened (SECRETS_KEY changed?); that person must connect again');
    }
    return undefined;
  }
}

/** BILL refusing a person's token means their link went stale (token deleted), not that the bot's credentials are wrong. */
export async function asPerson<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof BillApiError && err.category === 'credentials') throw new NotLinked('tokenRefused');
    throw err;
  }
}
