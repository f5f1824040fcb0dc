// Which team channels follow which kinds of BILL events (NS.subscriptions), with the conversation reference to post with.
// Keys follow src/bindings/installations.ts (removing the bot from a team removes them): "<tenant>|team|<team>|<channel>|<kind>".
// One record per channel and kind: two people subscribing at once (even on two instances) never overwrite each other.
// A channel's scheduled digest is one more of them, of kind 'digest'.
import type { Clock } from '../infra/clock.js';
import { targetKey, type BindingScope } from '../bindings/bindings.js';
import { NS, type StateStore } from '../infra/state/types.js';
import { eventTypeInfo, SUBSCRIPTION_KINDS, type SubscriptionKind } from './kinds.js';
import type { DigestSchedule } from './schedule.js';
import type { ChannelTarget, ConversationRef } from './types.js';

/** No organisation is kept: the team's binding is checked right before each send. */
export interface ChannelSubscription extends ChannelTarget {
  v: 1;
  kind: SubscriptionKind;
  reference: ConversationRef;
  createdAt: number;
}

/** A channel's digest schedule; slots before `createdAt` (when it was set) are never posted. */
export type DigestSetting = Omit<ChannelSubscription, 'kind'> & { kind: 'digest'; schedule: DigestSchedule };

type Kind = SubscriptionKind | 'digest';

/** "<tenant>|team|<team>|<channel>": every key of the channel starts with it. */
export function channelKey(target: ChannelTarget): string {
  return `${targetKey({ tenantId: target.tenantId, kind: 'team', targetId: target.teamId })}|${target.channelId}`;
}

const subscriptionKey = (target: ChannelTarget, kind: Kind): string => `${channelKey(target)}|${kind}`;

/** The binding scope of a channel, for re-checking its org right before a send. */
export function channelScope(target: ChannelTarget): BindingScope {
  return { kind: 'channel', tenantId: target.tenantId, teamId: target.teamId, conversationId: target.channelId };
}

const isSubscription = (v: unknown): v is ChannelSubscription | DigestSetting => {
  const s = v as Partial<ChannelSubscription | DigestSetting> | null;
  return typeof s === 'object' && s !== null && s.v === 1 && typeof s.kind === 'string' && typeof s.channelId === 'string';
};

export class ChannelSubscriptions {
  constructor(
    private readonly state: StateStore,
    private readonly clock: Clock,
  ) {}

  /** Subscribes the channel to these kinds; the ones it did not have yet. */
  async add(target: ChannelTarget, kinds: SubscriptionKind[], reference: ConversationRef) {
    const added: SubscriptionKind[] = [];
    for (const kind of kinds) {
      const record: ChannelSubscription = { v: 1, ...target, kind, reference, createdAt: this.clock.now() };
      const key = subscriptionKey(target, kind);
      if (await this.state.setIfAbsent(NS.subscriptions, key, record)) added.push(kind);
      else {
        // Keep the reference fresh (service URL changes), keep when it began.
        const existing = await this.get(key);
        if (existing) await this.state.set(NS.subscriptions, key, { ...existing, reference });
      }
    }
    return added;
  }

  /** Sets (or replaces) the channel's digest schedule. */
  async setDigest(target: ChannelTarget, input: Pick<DigestSetting, 'schedule' | 'reference'>) {
    const setting: DigestSetting = { v: 1, ...target, ...input, kind: 'digest', createdAt: this.clock.now() };
    await this.state.set(NS.subscriptions, subscriptionKey(target, 'digest'), setting);
  }

  /** Removes these kinds (default: every event kind) from the channel; the kinds it had. */
  async remove(target: ChannelTarget, kinds: readonly Kind[] = SUBSCRIPTION_KINDS): Promise<Kind[]> {
    const removed: Kind[] = [];
    for (const kind of kinds) if (await this.state.delete(NS.subscriptions, subscriptionKey(target, kind))) removed.push(kind);
    return removed;
  }

  async forChannel(target: ChannelTarget): Promise<ChannelSubscription[]> {
    const subs = await Promise.all(SUBSCRIPTION_KINDS.map((kind) => this.get(subscriptionKey(target, kind))));
    return subs.filter((sub) => sub !== undefined);
  }

  async get(key: string): Promise<ChannelSubscription | undefined> {
    const sub = await this.state.get(NS.subscriptions, key);
    return isSubscription(sub) && sub.kind !== 'digest' ? sub : undefined;
  }

  async digest(target: ChannelTarget): Promise<DigestSetting | undefined> {
    const setting = await this.state.get(NS.subscriptions, subscriptionKey(target, 'digest'));
    return isSubscription(setting) && setting.kind === 'digest' ? setting : undefined;
  }

  async digests(): Promise<DigestSetting[]> {
    return (await this.state.entries(NS.subscriptions))
      .map(([, s]) => s)
      .filter((s): s is DigestSetting => isSubscription(s) && s.kind === 'digest');
  }

  /** The subscriptions of the kind a BILL event type belongs to (none for a type billbridge does not post). */
  async forEvent(type: string): Promise<Array<[string, ChannelSubscription]>> {
    const kind = eventTypeInfo(type)?.kind;
    return (await this.state.entries<ChannelSubscription>(NS.subscriptions)).filter(([, s]) => isSubscription(s) && s.kind === kind);
  }
}
