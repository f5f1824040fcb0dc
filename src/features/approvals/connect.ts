// `connect` / `disconnect`: a person links (or unlinks) their own BILL sign-in, so approvals run as them in BILL.
// The token is collected only in a personal chat, with masked inputs on a card (service.ts verifies and seals it);
// anything typed after "connect" is never used, never logged, and the audit trail keeps no arguments.
import { Forbidden } from '../../errors.js';
import { auditAdmin } from '../audit.js';
import type { AuditTrail } from '../../infra/audit.js';
import type { OrgBindings } from '../../bindings/bindings.js';
import type { Command, CommandContext } from '../types.js';
import type { Approvals } from './service.js';
import { approvalsOffCard, connectCard, connectElsewhereCard, disconnectedCard, tokenTypedCard } from './cards.js';
import type { UserLink } from './userLinks.js';

/** What the approvals commands use: the service (undefined without SECRETS_KEY: approvals are off), the binding mode, the audit trail. */
export interface ApprovalsDeps {
  approvals: Approvals | undefined;
  orgBindings: Pick<OrgBindings, 'mode'>;
  audit: Pick<AuditTrail, 'admin'>;
}

/** The person as Teams names them; approvals need both ids. */
export function personOf(ctx: CommandContext): { tenantId: string; aadObjectId: string } {
  if (!ctx.scope.tenantId || !ctx.caller.aadObjectId)
    throw new Forbidden("Teams did not say which Microsoft 365 account sent this, so I can't connect it to BILL.");
  return { tenantId: ctx.scope.tenantId, aadObjectId: ctx.caller.aadObjectId };
}

export const connectCommand: Command<ApprovalsDeps> = {
  name: 'connect',
  usage: 'connect',
  description: 'Link your own BILL account so you can approve bills from Teams (in a personal chat)',
  examples: ['connect'],
  upstream: false,
  rank: 80,
  secretArgs: true,
  async run(ctx, { approvals, orgBindings }) {
    // Whatever follows "connect" may be a token: it is not used, logged or recorded (secretArgs), and not taught to
    // the log scrubber either, where any word a person types would censor that word in every later line.
    const typed = ctx.input.args.length > 0;
    if (ctx.scope.kind !== 'personal') return connectElsewhereCard(typed);
    if (typed) return tokenTypedCard();
    if (!approvals) return approvalsOffCard();
    const person = personOf(ctx);
    const askOrg = !ctx.orgId && orgBindings.mode === 'multi';
    const connected = ctx.orgId
      ? !!(await approvals.links.get({ ...person, orgId: ctx.orgId }))
      : (await approvals.links.forPerson(person.tenantId, person.aadObjectId)).length > 0;
    return connectCard({ askOrg, connected, note: approvals.note });
  },
};

export const disconnectCommand: Command<ApprovalsDeps> = {
  name: 'disconnect',
  usage: 'disconnect',
  description: 'Remove the link to your BILL account and sign its session out',
  examples: ['disconnect'],
  upstream: true,
  rank: 85,
  async run(ctx, { approvals, audit }) {
    if (!approvals) return approvalsOffCard();
    const person = personOf(ctx);
    // Here: this conversation's org; in a personal chat bound to none, every org the person linked.
    const links: UserLink[] = ctx.orgId
      ? [await approvals.links.get({ ...person, orgId: ctx.orgId })].filter((l): l is UserLink => !!l)
      : ctx.scope.kind === 'personal'
        ? await approvals.links.forPerson(person.tenantId, person.aadObjectId)
        : [];
    const removed: string[] = [];
    for (const link of links) {
      if (!(await approvals.links.remove(link))) continue;
      removed.push(link.orgId);
      await approvals
        .release(link.orgId, approvals.person(link))
        .catch((err: unknown) =>
          ctx.log.info({ orgId: link.orgId, err: String(err) }, 'approver session logout failed; BILL ends it by itself'),
        );
      await auditAdmin(audit, ctx, 'approvals.disconnect', 'ok', link.orgId).catch(() => undefined);
      ctx.log.info({ orgId: link.orgId }, 'approver link removed');
    }
    return disconnectedCard(removed);
  },
};
