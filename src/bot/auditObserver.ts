// Feeds every dispatched command into the audit trail: who, where, what, the outcome and the upstream calls it made.
import type { AuditTrail } from '../state/audit.js';
import { upstreamTotal, type UpstreamCounts } from '../upstreamCalls.js';
import {
  BillApiError,
  LimitExceeded,
  NotBound,
} from '../errors.js';
import type { CommandRegistry } from './commands/registry.js';
import type { DispatchObserver } from './dispatch.js';

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
    await audit.command({
      tenantId: req.scope.tenantId,
      teamId: req.scope.teamId,
      channelId: req.scope.channelId,
      conversationId: req.scope.conversationId,
      aadObjectId: req.caller.aadObjectId,
      userId: req.caller.id,
      command: result.command,
      args: def?.secretArgs ? [] : result.args,
      orgId: result.orgId,
      result: result.outcome,
      reason: auditReason(result.error),
      upstreamCalls: upstreamTotal(counts),
      upstream: counts as Record<string, number>,
      correlationId: req.correlationId,
      durationMs,
    });
  };
}
