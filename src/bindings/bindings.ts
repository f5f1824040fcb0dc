// Which BILL organisation a team (or chat) is bound to: resolved from the activity's tenant and team ids, never typed text.
//
// - single-org (BILL_ALLOWED_ORG_IDS empty): every team and chat of an allowed tenant is bound to the one configured
//   org (BILL_ORG_ID, or the sandbox's demo org). Nothing is stored.
// - multi-org: nothing is bound until a billbridge admin types `link <orgId>` in it. A channel binds its whole team; a
//   chat binds only itself, so a person can never reach an org through a chat nobody linked. BILL_ORG_ID is then not
//   a default. A link to an org later removed from BILL_ALLOWED_ORG_IDS stops resolving ("orgNotAllowed").
import type { Clock } from '../infra/clock.js';
import type { Config } from '../config.js';
import { NS, type StateStore } from '../infra/state/types.js';
import { TenantNotAllowed } from '../errors.js';
import type { ConversationScope } from '../features/types.js';

export type BindingMode = 'single' | 'multi';

/** The parts of a conversation's scope a binding is keyed by. */
export type BindingScope = Pick<ConversationScope, 'kind' | 'tenantId' | 'teamId' | 'conversationId'>;

/** What a binding is attached to: a whole team, or one chat. */
export interface BindingTarget {
  tenantId: string;
  kind: 'team' | 'chat';
  /** Team thread id (19:...@thread.tacv2) for teams, conversation id for chats. */
  targetId: string;
}

/** A stored link (multi-org mode). */
export interface OrgBinding extends BindingTarget {
  orgId: string;
  /** AAD object id of the admin who linked it. */
  linkedBy: string | undefined;
  linkedAt: number;
}

export type BindingState =
  | { state: 'bound'; orgId: string; source: 'deployment' | 'link' }
  | { state: 'unbound'; reason: 'notLinked' | 'noOrgConfigured' | 'noTarget' }
  | { state: 'orgNotAllowed'; orgId: string }
  | { state: 'tenantNotAllowed' };

/** The team of a channel, or the chat itself; undefined when the activity carries neither. */
export function bindingTarget(scope: BindingScope): BindingTarget | undefined {
  const tenantId = (scope.tenantId ?? '').toLowerCase();
  if (scope.kind === 'channel') return scope.teamId ? { tenantId, kind: 'team', targetId: scope.teamId } : undefined;
  return scope.conversationId ? { tenantId, kind: 'chat', targetId: scope.conversationId } : undefined;
}

/** Storage key of everything kept about a team or chat (bindings, install records; subscriptions start with it). */
export function targetKey(target: BindingTarget): string {
  return `${target.tenantId.toLowerCase()}|${target.kind}|${target.targetId}`;
}

export class OrgBindings {
  readonly mode: BindingMode;
  /** BILL_ALLOWED_ORG_IDS: the organisations a team may be linked to (multi-org). */
  readonly allowedOrgIds: readonly string[];

  /** `defaultOrgId`: the org of a single-org deployment (BILL_ORG_ID, or the sandbox's demo org without credentials). */
  constructor(
    private readonly deps: {
      config: Config;
      access: { tenantAllowed(tenantId: string | undefined): boolean };
      state: StateStore;
      clock: Clock;
      defaultOrgId: string | undefined;
    },
  ) {
    this.allowedOrgIds = deps.config.bill.allowedOrgIds;
    this.mode = this.allowedOrgIds.length > 0 ? 'multi' : 'single';
  }

  /** The org a conversation may use right now, or undefined (unbound, stale link, other tenant). */
  async resolve(scope: BindingScope): Promise<string | undefined> {
    const s = await this.describe(scope);
    return s.state === 'bound' ? s.orgId : undefined;
  }

  /** A message extension's org: a channel's team binding; elsewhere only single-org mode's (nothing says which org). */
  async forExtension(scope: BindingScope): Promise<{ orgId: string } | { refused: 'chat in multi-org' | 'not bound' }> {
    if (scope.kind !== 'channel' && this.mode === 'multi') return { refused: 'chat in multi-org' };
    const orgId = await this.resolve(scope);
    return orgId ? { orgId } : { refused: 'not bound' };
  }

  /** The full answer, for the welcome card, `status` and refusals. */
  async describe(scope: BindingScope): Promise<BindingState> {
    if (!this.deps.access.tenantAllowed(scope.tenantId)) return { state: 'tenantNotAllowed' };
    if (this.mode === 'single') {
      const orgId = this.deps.defaultOrgId;
      return orgId ? { state: 'bound', orgId, source: 'deployment' } : { state: 'unbound', reason: 'noOrgConfigured' };
    }
    const target = bindingTarget(scope);
    if (!target) return { state: 'unbound', reason: 'noTarget' };
    const binding = await this.deps.state.get<OrgBinding>(NS.bindings, targetKey(target));
    // The stored record must be for this very target: a key is never trusted alone.
    if (binding?.tenantId !== target.tenantId || binding.targetId !== target.targetId || binding.kind !== target.kind)
      return { state: 'unbound', reason: 'notLinked' };
    if (!this.allowedOrgIds.includes(binding.orgId)) return { state: 'orgNotAllowed', orgId: binding.orgId };
    return { state: 'bound', orgId: binding.orgId, source: 'link' };
  }

  /** The allowed org id as configured, matched case-insensitively; undefined when not allowed. */
  allowedOrg(orgId: string): string | undefined {
    return this.allowedOrgIds.find((o) => o.toLowerCase() === orgId.trim().toLowerCase());
  }

  /** Binds a team (or a chat) to an allowed org for an admin the caller checked; the org it replaced comes back. */
  async link(target: BindingTarget, orgId: string, linkedBy: string | undefined): Promise<string | undefined> {
    if (!this.deps.access.tenantAllowed(target.tenantId)) throw new TenantNotAllowed();
    // A single-org deployment allows no org here (BILL_ALLOWED_ORG_IDS is empty), so it never stores a link.
    const org = this.allowedOrg(orgId);
    if (!org) throw new Error('organisation not in BILL_ALLOWED_ORG_IDS');
    return this.replace(target, { ...target, orgId: org, linkedBy, linkedAt: this.deps.clock.now() });
  }

  /** Deletes a team's or chat's binding (unlink, or the bot was removed); the org it had, if any. */
  remove(target: BindingTarget): Promise<string | undefined> {
    return this.replace(target, undefined);
  }

  private async replace(target: BindingTarget, binding: OrgBinding | undefined): Promise<string | undefined> {
    const key = targetKey(target);
    const previous = await this.deps.state.get<OrgBinding>(NS.bindings, key);
    await (binding ? this.deps.state.set(NS.bindings, key, binding) : this.deps.state.delete(NS.bindings, key));
    return previous?.orgId;
  }
}
