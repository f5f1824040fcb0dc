// Feeds every dispatched command into the audit trail: who, where, what, the outcome and the upstream calls it made.
import type { AdminAudit, AuditActor, AuditTrail, CommandAudit } from '../state/audit.js';
import type { Caller, CommandContext, ConversationScope } from '../features/types.js';
import { upstreamTotal, type UpstreamCounts } from '../upstreamCalls.js';
import {
  BillApiError,
  LimitExceeded,
  NotBound,
} from '../errors.js';
import type { CommandRegistry } from '../features/registry.js';
import type { DispatchObserver } from './dispatch.js';

/** Who did it and where, as every audit record states it. */
export function auditActor(scope: ConversationScope, caller: Caller): AuditActor {
  return {
    tenantId: scope.tenantId,
    teamId: scope.teamId,
    channelId: scope.channelId,
    conversationId: scope.conversationId,
    aadObjectId: caller.aadObjectId,
    userId: caller.id,
  };
}

/** Records an admin command (link, subscribe, webhooks …) in the audit trail: who, where, which org, what came of it. */
export function auditAdmin(audit: Pick<AuditTrail, 'admin'>, ctx: Pick<CommandContext, 'scope' | 'caller' | 'correlationId'>, action: string, result: AdminAudit['result'], orgId: string | undefined, detail?: AdminAudit['detail']): Promise<void> {
  return audit.admin({ ...auditActor(ctx.scope, ctx.caller), action, orgId, result, detail, correlationId: ctx.correlationId });
}

/** A short, non-secret name for why a command was refused or failed. */
export function auditReason(err: unknown): string | undefined {
  if (err === undefined) return undefined;
  if (err instanceof LimitExceeded) return `LimitExceeded:${err.reason}`;
  if (err instanceof BillApiError) return `BillApiError:${err.category}${err.code ? ':' + err.code : ''}`;
  if (err instanceof NotBound) return `NotBound:${err.reason}`;
  return err instanceof Error ? err.name : typeof err;
}

export function auditObserver(audit: AuditTrail, registry: CommandRegistry, upstream: () => UpstreamCounts | undefined): DispatchObserver {
  return async (req, result, durationMs) => {
    const def = result.command ? registry.get(result.command) : undefined;
    const counts = upstream() ?? {};
    // The command's fields are added to the actor record, not spread with it into a new literal: this runs for
    // every command, and the spread cost ~25 µs each (see AuditTrail.command).
    const entry = auditActor(req.scope, req.caller) as CommandAudit;
    entry.command = result.command;
    entry.args = def?.secretArgs ? [] : result.args;
    entry.orgId = result.orgId;
    entry.result = result.outcome;
    entry.reason = auditReason(result.error);
    entry.upstreamCalls = upstreamTotal(counts);
    entry.upstream = counts as Record<string, number>;
    entry.correlationId = req.correlationId;
    entry.durationMs = durationMs;
    await audit.command(entry);
  };
}
