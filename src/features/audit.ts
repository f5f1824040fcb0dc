// What the audit trail says of a turn: who and where, and for a command line what it was and how it went.
import type { AdminAudit, AuditActor, AuditTrail, CommandAudit } from '../infra/audit.js';
import type { Caller, CommandContext, ConversationScope } from './types.js';
import { upstreamTotal, type UpstreamCounts } from '../infra/upstreamCalls.js';
import { BillApiError, LimitExceeded, NotBound, errorName } from '../errors.js';
import type { CommandLine, TurnResult } from './dispatch.js';

/** Who did it and where, as every audit record states it. */
export function auditActor(scope: ConversationScope, caller: Caller): AuditActor {
  const { tenantId, teamId, channelId, conversationId } = scope;
  return { tenantId, teamId, channelId, conversationId, aadObjectId: caller.aadObjectId, userId: caller.id };
}

/** Records an admin command (link, subscribe, webhooks …) in the audit trail: who, where, which org, what came of it. */
export function auditAdmin(
  audit: Pick<AuditTrail, 'admin'>,
  ctx: Turn,
  action: string,
  result: AdminAudit['result'],
  orgId: string | undefined,
  detail?: AdminAudit['detail'],
): Promise<void> {
  return audit.admin({ ...auditActor(ctx.scope, ctx.caller), action, orgId, result, detail, correlationId: ctx.correlationId });
}

/** No trace, no change: when the audit record of a change cannot be written, `undo` puts things back and the audit failure is thrown. */
export async function auditOrUndo(record: Promise<void>, undo: () => Promise<unknown>): Promise<void> {
  try {
    await record;
  } catch (err) {
    await undo().catch(() => undefined);
    throw err;
  }
}

type Turn = Pick<CommandContext, 'scope' | 'caller' | 'correlationId'>;

/** The audit record of a read through a door other than a command line (the dashboard tab). */
export function readAudit(
  who: Turn,
  name: string | undefined,
  outcome: { orgId?: string; result: string; reason?: string; args?: string[] },
  upstream: UpstreamCounts,
  durationMs: number,
): CommandAudit {
  return {
    ...auditActor(who.scope, who.caller),
    command: name,
    args: outcome.args ?? [],
    orgId: outcome.orgId,
    result: outcome.result,
    reason: outcome.reason,
    upstreamCalls: upstreamTotal(upstream),
    upstream,
    correlationId: who.correlationId,
    durationMs,
  };
}

/** A short, non-secret name for why a command was refused or failed. */
function auditReason(err: unknown): string | undefined {
  if (err === undefined) return undefined;
  if (err instanceof LimitExceeded) return `LimitExceeded:${err.reason}`;
  if (err instanceof BillApiError) return `BillApiError:${err.category}${err.code ? ':' + err.code : ''}`;
  if (err instanceof NotBound) return `NotBound:${err.reason}`;
  return errorName(err);
}

/** The audit record of a command line's turn: its arguments too, unless they may be a secret (`connect <token>`). */
export function commandAudit(
  turn: Turn,
  { parsed, command }: CommandLine,
  result: TurnResult,
  upstream: UpstreamCounts,
  durationMs: number,
): CommandAudit {
  // A line that is no registered command names itself (the compose box's "search bills").
  const name = command?.name ?? (parsed.kind === 'command' ? parsed.name : undefined);
  const args = parsed.kind === 'command' && !command?.secretArgs ? parsed.args : [];
  const outcome = { orgId: result.orgId, result: result.outcome, reason: auditReason(result.error), args };
  return readAudit(turn, name, outcome, upstream, durationMs);
}
