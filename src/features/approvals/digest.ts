// `approvals digest daily <HH:MM>`: each linked approver's waiting bills, read in their own BILL session and sent to their
// personal chat at that time in BOT_TIMEZONE on days some wait. One message per person, org and slot across instances:
// the due slot is claimed as channel digests claim theirs (slotClaims, NS.approvalDigests).
import { NotLinked, errorMessage } from '../../errors.js';
import { slotClaims, slotJob } from '../../notify/jobs.js';
import { dueSlot } from '../../notify/schedule.js';
import type { NotifyDeps } from '../../notify/types.js';
import { NS } from '../../infra/state/types.js';
import type { Approvals } from './service.js';
import type { UserLink } from './userLinks.js';

/** A failed digest is tried again after this long (still within the catch-up window). */
const RETRY_AFTER_MS = 5 * 60_000;

/** Each run sends every digest whose slot has come, counting those sent, those with nothing waiting, and failures. */
export function approvalDigestJob(
  deps: Pick<NotifyDeps, 'state' | 'sender' | 'clock' | 'log'> & {
    /** Undefined without SECRETS_KEY: approvals are off and nothing is sent. */
    approvals: Approvals | undefined;
    /** BOT_TIMEZONE: digest times are read there. */
    timeZone: string;
  },
) {
  const { approvals, state, log } = deps;
  const claim = slotClaims(state, deps.clock, NS.approvalDigests);
  // What became of one approver's digest: sent, nothing waiting, or nothing due now (undefined).
  const sendDigest = async (link: UserLink, now: number): Promise<'sent' | 'empty' | undefined> => {
    const { digestTime, reference } = link;
    if (!approvals || !digestTime || !reference) return;
    const conversation = (reference.conversation ?? {}) as { id?: unknown };
    if (typeof conversation.id !== 'string') return;
    const slot = dueSlot({ every: 'daily', time: digestTime }, link.digestSince ?? 0, now, deps.timeZone);
    if (!slot) return;
    const personal = { kind: 'personal', conversationId: conversation.id } as const;
    return claim(`${approvals.links.key(link)}|${slot.id}`, async ({ sending, reopen }) => {
      try {
        const { reply, waiting } = await approvals.pendingReply(link, personal, { priority: 'background' });
        if (waiting === 0) return 'empty';
        if (!(await sending())) return;
        const outcome = await deps.sender.send(reference, { card: reply.card, summary: `Approvals digest: ${reply.summary}` });
        if (outcome.ok) {
          log.info({ orgId: link.orgId, waiting, slot: slot.id }, 'approvals digest sent');
          return 'sent';
        }
        // The person removed the bot or blocked it: no retry, and the digest is off (each day would read their BILL for
        // nothing); `approvals digest daily <HH:MM>` after adding the bot again turns it on.
        if (outcome.status === 403 || outcome.status === 404) {
          log.info({ orgId: link.orgId, status: outcome.status, code: outcome.code }, 'approvals digest not deliverable to this person');
          await approvals.links.update(link, { digestTime: undefined });
          return;
        }
        throw new Error(`send failed (HTTP ${outcome.status}${outcome.code ? ' ' + outcome.code : ''})`);
      } catch (err) {
        // A token BILL no longer accepts is not retried (each try would spend a login from the dev key's 200 an hour).
        if (err instanceof NotLinked && err.reason === 'tokenRefused') {
          log.warn(
            { orgId: link.orgId },
            "approvals digest skipped: BILL no longer accepts this approver's token; they need to connect again",
          );
          return;
        }
        // Hold the slot a few minutes, then the next tick (within the catch-up window) tries again.
        await reopen(RETRY_AFTER_MS).catch(() => undefined);
        throw err;
      }
    });
  };
  return slotJob({
    what: 'approvals digest',
    clock: deps.clock,
    log,
    outcomes: { sent: 0, empty: 0 },
    items: async () => (approvals ? approvals.links.all() : []),
    post: sendDigest,
    failed: (link, err) =>
      log.warn({ orgId: link.orgId, err: errorMessage(err) }, 'approvals digest for one approver failed; will try again'),
  });
}
