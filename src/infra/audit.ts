// The audit trail: one append-only JSON line per command and per admin action (STATE_DIR/audit.log, or a Redis stream).
import { errorMessage } from '../errors.js';
import type { Clock } from './clock.js';
import type { Logger } from './log.js';
import type { StateStore } from './state/types.js';

/** Who and where, from the activity (never from text the person typed): the person's Entra object id and Bot Framework id. */
export type AuditActor = Partial<Record<'tenantId' | 'teamId' | 'channelId' | 'conversationId' | 'aadObjectId' | 'userId', string>>;

export interface CommandAudit extends AuditActor {
  /** Registry name ("bills due"); undefined for text that was not a command. */
  command: string | undefined;
  /** Arguments as typed (shortened, secrets scrubbed); [] for commands whose arguments are secret. */
  args: string[];
  orgId?: string;
  /** ok | unknown | empty | refused | error */
  result: string;
  /** Why it was refused or failed, as an error kind ("LimitExceeded:userRate", "BillApiError:notFound"). */
  reason?: string;
  /** BILL, Spend & Expense, Graph and token calls the command made. */
  upstreamCalls: number;
  /** The same per service, bot connector sends included. */
  upstream: Record<string, number>;
  correlationId: string;
  durationMs: number;
}

/** Admin actions are always recorded: who linked, unlinked, subscribed or set up webhooks, and what came of it. */
export interface AdminAudit extends AuditActor {
  /** e.g. "link", "unlink", "subscribe", "unsubscribe", "webhook.setup". */
  action: string;
  orgId?: string;
  result: 'ok' | 'refused' | 'error';
  /** Non-secret facts about the action (event types, a subscription id...). Values are shortened and scrubbed. */
  detail?: Record<string, string | number | boolean | string[]>;
  correlationId?: string;
}

/** An approve/deny from Teams: who, which bill, what, the comment, and what BILL answered. */
export interface ApprovalAudit extends AuditActor {
  orgId: string;
  billId: string;
  decision: 'APPROVE' | 'DENY';
  // 'requested' is written before BILL is asked; then 'ok', 'refused' (by billbridge: not the approver, tampered,
  // replayed, no longer waiting) or 'error' (BILL refused or failed).
  result: 'requested' | 'ok' | 'refused' | 'error';
  comment?: string;
  /** BILL's answer: its status ("SUCCESS"), or the error category and code. */
  billResult?: string;
  reason?: string;
  /** The BILL user the decision ran as (the approver's own sign-in). */
  billUserId?: string;
  correlationId?: string;
}

export type AuditRecord = { v: 1; time: string } & (
  ({ kind: 'command' } & CommandAudit) | ({ kind: 'admin' } & AdminAudit) | ({ kind: 'approval' } & ApprovalAudit)
);

const MAX_ARGS = 20;
const MAX_ARG_LENGTH = 120;
const MAX_COMMENT_LENGTH = 500;

export class AuditTrail {
  /** `scrub` replaces known secret values (config secrets, live sessionIds) in free text. */
  constructor(private readonly deps: { store: StateStore; clock: Clock; log: Logger; scrub: (text: string) => string }) {}

  /** Where the trail is, for `status`. */
  get location(): string {
    return this.deps.store.auditLocation;
  }

  /** Records a command's outcome. Never throws: a failed write is logged as an error. */
  async command(entry: CommandAudit): Promise<void> {
    await this.write('command', { ...entry, args: this.args(entry.args), durationMs: Math.round(entry.durationMs) }).catch(() => undefined);
  }

  /** Records an admin action. Throws when it cannot, so no success is reported for an action that left no trace. */
  async admin(entry: AdminAudit): Promise<void> {
    await this.write('admin', { ...entry, action: this.text(entry.action, 40), detail: entry.detail && this.detail(entry.detail) });
  }

  /** Records an approval decision (or its refusal). Throws when it cannot, so nothing is sent to BILL without a trace. */
  async approval(entry: ApprovalAudit): Promise<void> {
    await this.write('approval', {
      ...entry,
      billId: this.text(entry.billId, 64),
      comment: this.text(entry.comment, MAX_COMMENT_LENGTH),
      billResult: this.text(entry.billResult, 80),
      reason: this.text(entry.reason, 80),
    });
  }

  /** Appends a record (format version, time, kind, then the entry's fields); a failure is logged and thrown on. */
  private async write(kind: AuditRecord['kind'], entry: CommandAudit | AdminAudit | ApprovalAudit): Promise<void> {
    try {
      await this.deps.store.appendAudit({ v: 1, time: new Date(this.deps.clock.now()).toISOString(), kind, ...entry });
    } catch (err) {
      this.deps.log.error({ kind, correlationId: entry.correlationId, err: errorMessage(err) }, 'audit trail write failed');
      throw err;
    }
  }

  /** Scrubbed of known secrets and shortened; undefined stays undefined. */
  private text<T extends string | undefined>(value: T, max: number): T | string {
    if (value === undefined) return value;
    const scrubbed = this.deps.scrub(value);
    return scrubbed.length > max ? scrubbed.slice(0, max - 1) + '…' : scrubbed;
  }

  private args(args: string[]): string[] {
    const kept = args.slice(0, MAX_ARGS).map((a) => this.text(a, MAX_ARG_LENGTH));
    if (args.length > MAX_ARGS) kept.push(`…(+${args.length - MAX_ARGS})`);
    return kept;
  }

  private detail(detail: NonNullable<AdminAudit['detail']>): NonNullable<AdminAudit['detail']> {
    const kept = Object.entries(detail).slice(0, 20);
    return Object.fromEntries(
      kept.map(([k, v]) => [this.text(k, 40), typeof v === 'string' ? this.text(v, MAX_ARG_LENGTH) : Array.isArray(v) ? this.args(v) : v]),
    );
  }
}
