// `approvals digest daily <HH:MM>`: a personal message to each linked approver with the bills waiting for them, at that
// time in BOT_TIMEZONE, only on days some are. The pending list is read in the approver's own BILL session (never the
// bot's); the card goes through the Bot Framework to the personal chat stored when they connected.
// Slots come from the channel digests' primitive (src/notify/schedule.ts): the latest slot at or before now, skipped
// when more than CATCH_UP_MS old (the bot was down) or set after it. One message per person, org and slot, across
// restarts and instances: the slot is claimed with setIfAbsent (NS.approvalDigests) before anything is read or sent.
import type { Clock } from '../../infra/clock.js';
import type { Logger } from '../../infra/log.js';
import { NotLinked, errorMessage } from '../../errors.js';
import { CATCH_UP_MS } from '../../notify/digests.js';
import { Periodic } from '../../notify/periodic.js';
import { latestSlot } from '../../notify/schedule.js';
import type { ConversationRef, OutgoingMessage, SendOutcome } from '../../notify/types.js';
import { NS, type StateStore } from '../../infra/state/types.js';
import type { Approvals } from './service.js';
import type { UserLink } from './userLinks.js';

/** A handled slot is remembered this long (longer than any catch-up window). */
const SLOT_TTL_MS = 3 * 24 * 3_600_000;
const TICK_MS = 30_000;
/** A failed digest is tried again after this long (still within the catch-up window). */
const RETRY_AFTER_MS = 5 * 60_000;

/** Proactive sends with a stored conversation reference (src/teams/proactive.ts BotFrameworkSender fits). */
interface PersonalSender {
  send(reference: ConversationRef, message: OutgoingMessage): Promise<SendOutcome>;
}

export interface ApprovalDigestDeps {
  /** Undefined without SECRETS_KEY: approvals are off and nothing is sent. */
  approvals: Approvals | undefined;
  state: StateStore;
  /** BOT_TIMEZONE: digest times are read there. */
  timeZone: string;
  sender: PersonalSender;
  clock: Clock;
  log: Logger;
  tickMs?: number;
}

export interface ApprovalDigestReport {
  /** Digests sent. */
  sent: number;
  /** Approvers whose slot came with nothing waiting (no message). */
  empty: number;
  failed: number;
}

export class ApprovalDigest {
  private readonly periodic: Periodic<ApprovalDigestReport>;

  constructor(private readonly deps: ApprovalDigestDeps) {
    this.periodic = new Periodic(() => this.run(), { everyMs: deps.tickMs ?? TICK_MS, log: deps.log, what: 'approvals digest' });
  }

  start(): void {
    if (this.deps.approvals) this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** Sends every approvals digest whose slot has come (one run at a time; a call during a run gets a fresh run after it). */
  tick(): Promise<ApprovalDigestReport> {
    return this.periodic.tick();
  }

  private async run(): Promise<ApprovalDigestReport> {
    const report: ApprovalDigestReport = { sent: 0, empty: 0, failed: 0 };
    const approvals = this.deps.approvals;
    if (!approvals) return report;
    const now = this.deps.clock.now();
    const links = this.periodic.stopped ? [] : await approvals.links.all();
    for (const link of links) {
      if (this.periodic.stopped) break;
      try {
        await this.slot(approvals, link, now, report);
      } catch (err) {
        report.failed++;
        this.deps.log.warn({ orgId: link.orgId, err: errorMessage(err) }, 'approvals digest for one approver failed; will try again');
      }
    }
    return report;
  }

  private async slot(approvals: Approvals, link: UserLink, now: number, report: ApprovalDigestReport): Promise<void> {
    const { digestTime, reference } = link;
    if (!digestTime || !reference) return;
    const { state, log } = this.deps;
    const slot = latestSlot({ every: 'daily', time: digestTime }, now, this.deps.timeZone);
    if (slot.at < (link.digestSince ?? 0) || now - slot.at > CATCH_UP_MS) return;
    const key = `${approvals.links.key(link)}|${slot.id}`;
    if (!(await state.setIfAbsent(NS.approvalDigests, key, { at: now }, { ttlMs: SLOT_TTL_MS }))) return;
    const conversation = (reference.conversation ?? {}) as { id?: unknown };
    if (typeof conversation.id !== 'string') return;
    let settled = false;
    try {
      const { reply, waiting } = await approvals.pendingReply(
        link,
        { kind: 'personal', tenantId: link.tenantId, conversationId: conversation.id },
        { teamsUserId: link.teamsUserId, name: link.displayName || 'you' },
        { priority: 'background' },
      );
      if (waiting === 0) {
        report.empty++;
        settled = true;
        return;
      }
      const outcome = await this.deps.sender.send(reference, { card: reply.card, summary: `Approvals digest: ${reply.summary}` });
      if (outcome.ok) {
        report.sent++;
        settled = true;
        log.info({ orgId: link.orgId, waiting, slot: slot.id }, 'approvals digest sent');
        return;
      }
      // The person removed the bot or blocked it: no retry.
      if (outcome.status === 403 || outcome.status === 404) {
        settled = true;
        log.info({ orgId: link.orgId, status: outcome.status, code: outcome.code }, 'approvals digest not deliverable to this person');
        return;
      }
      throw new Error(`send failed (HTTP ${outcome.status}${outcome.code ? ' ' + outcome.code : ''})`);
    } catch (err) {
      // A token BILL no longer accepts is not retried (each try would spend a login from the dev key's 200 an hour).
      if (err instanceof NotLinked && err.reason === 'tokenRefused') {
        settled = true;
        log.warn(
          { orgId: link.orgId },
          "approvals digest skipped: BILL no longer accepts this approver's token; they need to connect again",
        );
        return;
      }
      throw err;
    } finally {
      // Not settled: hold the slot a few minutes, then the next tick (within the catch-up window) tries again.
      if (!settled) await state.set(NS.approvalDigests, key, { at: now, retry: true }, { ttlMs: RETRY_AFTER_MS }).catch(() => undefined);
    }
  }
}
