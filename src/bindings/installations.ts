// Where billbridge is installed: one record per team or chat (conversation reference, Entra group id, tenant),
// and the clean-up when it is removed (record, binding, subscriptions, digests of that team or chat).
//
// Convention for team-scoped entries kept by other features (NS.subscriptions, NS.digests): their key starts with
// `targetKey(target) + '|'` (e.g. "<tenant>|team|19:abc@thread.tacv2|<channel>|<event>"), or their value carries
// `tenantId` and `teamId` (teams) / `conversationId` (chats). Removal deletes both kinds.
import type { Clock } from '../infra/clock.js';
import { bindingTarget, targetKey, type BindingScope, type BindingTarget, type OrgBindings } from './bindings.js';
import { NS, type StateStore } from '../infra/state/types.js';
import { withEditLock } from '../infra/state/editLock.js';
import type { TeamInfo } from '../graph/teams.js';

/** Namespaces whose entries belong to one team or chat and go when the bot is removed from it. */
const TARGET_SCOPED_NAMESPACES = [NS.subscriptions, NS.digests] as const;

export interface InstallRecord extends BindingTarget {
  /** 'channel' for teams; 'groupChat' or 'personal' for chats. */
  conversationType: 'channel' | 'groupChat' | 'personal';
  /** The team's Entra group id (what Graph needs); teams only. */
  aadGroupId: string | undefined;
  /** Team name as Teams sent it on install (Graph's displayName replaces it once read). */
  name: string | undefined;
  /** The channel the welcome went to (teams). */
  channelId: string | undefined;
  /** Bot Framework ConversationReference (JSON) for proactive sends; contains no secrets. */
  reference: Record<string, unknown>;
  /** AAD object id of the person who added the bot. */
  installedBy: string | undefined;
  installedAt: number;
  updatedAt: number;
  /** From Graph GET /teams/{aadGroupId}, when it answered. */
  graph?: TeamInfo;
}

export class Installations {
  constructor(
    private readonly state: StateStore,
    private readonly bindings: OrgBindings,
    private readonly clock: Clock,
  ) {}

  /** Stores or refreshes a record; `created` only the first time, so one welcome goes out for Teams' two install events. */
  async recordInstall(input: Omit<InstallRecord, 'installedAt' | 'updatedAt'>): Promise<{ created: boolean; record: InstallRecord }> {
    const key = targetKey(input);
    const now = this.clock.now();
    const fresh: InstallRecord = { ...input, tenantId: input.tenantId.toLowerCase(), installedAt: now, updatedAt: now };
    if (await this.state.setIfAbsent(NS.conversations, key, fresh)) return { created: true, record: fresh };
    return this.editing(key, async () => {
      const existing = (await this.state.get<InstallRecord>(NS.conversations, key)) ?? fresh;
      const record: InstallRecord = {
        ...existing,
        ...(Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as Partial<InstallRecord>),
        tenantId: existing.tenantId,
        installedAt: existing.installedAt,
        updatedAt: now,
      };
      await this.state.set(NS.conversations, key, record);
      return { created: false, record };
    });
  }

  async get(target: BindingTarget): Promise<InstallRecord | undefined> {
    return this.state.get<InstallRecord>(NS.conversations, targetKey(target));
  }

  async forScope(scope: BindingScope): Promise<InstallRecord | undefined> {
    const target = bindingTarget(scope);
    return target ? this.get(target) : undefined;
  }

  /** A rename and a Graph read made at once both land; a record removed meanwhile stays removed. */
  update(target: BindingTarget, patch: Partial<Pick<InstallRecord, 'name' | 'graph' | 'aadGroupId'>>): Promise<void> {
    const key = targetKey(target);
    return this.editing(key, async () => {
      const existing = await this.state.get<InstallRecord>(NS.conversations, key);
      if (!existing) return;
      await this.state.set(NS.conversations, key, { ...existing, ...patch, updatedAt: this.clock.now() });
    });
  }

  /** One change of a record at a time, on one instance or a fleet (the stores have no compare-and-set). */
  private editing<T>(key: string, change: () => Promise<T>): Promise<T> {
    return withEditLock({ store: this.state, clock: this.clock }, { ns: NS.conversations, key }, change);
  }

  /** The bot left a team or chat: its record, binding, subscriptions and digests go (how many per namespace in `removed`). */
  async remove(target: BindingTarget): Promise<{ record: boolean; bindingOrgId: string | undefined; removed: Record<string, number> }> {
    const key = targetKey(target);
    const record = await this.editing(key, () => this.state.delete(NS.conversations, key));
    const bindingOrgId = await this.bindings.remove(target);
    const removed: Record<string, number> = {};
    for (const ns of TARGET_SCOPED_NAMESPACES) {
      let n = 0;
      for (const [k, v] of await this.state.entries<unknown>(ns))
        if ((k.startsWith(`${key}|`) || belongsTo(v, target)) && (await this.state.delete(ns, k))) n++;
      removed[ns] = n;
    }
    return { record, bindingOrgId, removed };
  }
}

/** A stored value that names this team (tenantId + teamId) or this chat (tenantId + conversationId). */
function belongsTo(value: unknown, target: BindingTarget): boolean {
  if (value === null || typeof value !== 'object') return false;
  const v = value as { tenantId?: unknown; teamId?: unknown; conversationId?: unknown };
  if (typeof v.tenantId !== 'string' || v.tenantId.toLowerCase() !== target.tenantId.toLowerCase()) return false;
  return target.kind === 'team' ? v.teamId === target.targetId : v.conversationId === target.targetId;
}
