// `connect` / `disconnect` (a person's own BILL sign-in, taken only on a personal chat's card form; anything typed after
// "connect" is never used, logged or audited), `approvals` (the bills waiting for them, Approve / Deny theirs alone) and
// `approvals digest daily <HH:MM> | off`.
import { Forbidden, InputError, NotBound, NotLinked } from '../../errors.js';
import { nextSlot, parseTime } from '../../notify/schedule.js';
import { auditAdmin } from '../audit.js';
import type { AuditTrail } from '../../infra/audit.js';
import type { OrgBindings } from '../../bindings/bindings.js';
import type { Command, CommandContext } from '../types.js';
import {
  approvalsOffCard,
  chooseOrgCard,
  connectCard,
  connectElsewhereCard,
  digestSettingCard,
  disconnectedCard,
  tokenTypedCard,
} from './cards.js';
import type { Approvals } from './service.js';
import type { UserLink } from './userLinks.js';

export interface ApprovalsDeps {
  /** Undefined without SECRETS_KEY: approvals are off. */
  approvals: Approvals | undefined;
  orgBindings: Pick<OrgBindings, 'mode'>;
  audit: Pick<AuditTrail, 'admin'>;
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
    // Whatever follows "connect" may be a token: never used, logged or recorded (secretArgs), nor taught to the log scrubber.
    const typed = ctx.input.args.length > 0;
    if (ctx.scope.kind !== 'personal') return connectElsewhereCard(typed);
    if (typed) return tokenTypedCard();
    if (!approvals) return approvalsOffCard();
    const connected = (await linksHere(approvals, ctx)).length > 0;
    return connectCard({ askOrg: !ctx.orgId && orgBindings.mode === 'multi', connected, note: approvals.note });
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
    const removed: string[] = [];
    for (const link of await linksHere(approvals, ctx)) {
      if (!(await approvals.links.remove(link))) continue;
      removed.push(link.orgId);
      const loggedOut = (err: unknown) =>
        ctx.log.info({ orgId: link.orgId, err: String(err) }, 'approver session logout failed; BILL ends it by itself');
      await approvals.release(link).catch(loggedOut);
      await auditAdmin(audit, ctx, 'approvals.disconnect', 'ok', link.orgId).catch(() => undefined);
      ctx.log.info({ orgId: link.orgId }, 'approver link removed');
    }
    return disconnectedCard(removed);
  },
};

/** The person's links here: this conversation's org; in a personal chat bound to none, every org they linked. */
async function linksHere(approvals: Approvals, ctx: CommandContext): Promise<UserLink[]> {
  const { tenantId } = ctx.scope;
  const { aadObjectId } = ctx.caller;
  if (!tenantId || !aadObjectId)
    throw new Forbidden("Teams did not say which Microsoft 365 account sent this, so I can't connect it to BILL.");
  if (ctx.orgId) return [await approvals.links.get({ tenantId, aadObjectId, orgId: ctx.orgId })].filter((l): l is UserLink => !!l);
  return ctx.scope.kind === 'personal' ? approvals.links.all({ tenantId, aadObjectId }) : [];
}

/** The person's links here, at least one, or only the one named (personal chat bound to none). */
async function linksFor(approvals: Approvals, ctx: CommandContext, named?: string): Promise<[UserLink, ...UserLink[]]> {
  const links = await linksHere(approvals, ctx);
  if (!ctx.orgId && ctx.scope.kind !== 'personal') throw new NotBound();
  const [first, ...others] = links;
  if (!first) throw new NotLinked();
  if (!named) return [first, ...others];
  const link = links.find((l) => l.orgId.toLowerCase() === named.toLowerCase());
  if (link) return [link];
  const hint = 'Type **approvals** to pick one you are connected to, or **connect** to add it.';
  throw new InputError("You aren't connected to that organisation", hint, 'approvals …');
}

export const approvalsCommand: Command<ApprovalsDeps> = {
  name: 'approvals',
  usage: 'approvals',
  description: 'Bills waiting for your approval in BILL, with Approve and Deny (after you connect)',
  examples: ['approvals'],
  upstream: true,
  rank: 30,
  // What follows may be a token typed in the wrong place ("approvals connect <token>"): neither repeated nor recorded.
  secretArgs: true,
  async run(ctx, { approvals }) {
    if (!approvals) return approvalsOffCard();
    const args = ctx.input.args;
    const hint = 'Type **approvals** to see the bills waiting for you.';
    if (args.length > 1 || (args.length === 1 && (ctx.scope.kind !== 'personal' || ctx.orgId)))
      throw new InputError('"approvals" takes nothing after it here', hint, 'approvals …');
    const links = await linksFor(approvals, ctx, args[0]);
    if (links.length > 1) return chooseOrgCard(links.map((l) => l.orgId));
    let link = links[0];
    // Teams ids and names can change; keep what cards and digests use current.
    if (link.teamsUserId !== ctx.caller.id || (ctx.caller.name && link.displayName !== ctx.caller.name))
      link = (await approvals.links.update(link, { teamsUserId: ctx.caller.id, displayName: ctx.caller.name ?? link.displayName })) ?? link;
    return (await approvals.pendingReply(link, ctx.scope, { locale: ctx.locale })).reply;
  },
};

export const approvalsDigestCommand: Command<ApprovalsDeps> = {
  name: 'approvals digest',
  usage: 'approvals digest daily <HH:MM> | off',
  description: 'A personal message every day at that time with the bills waiting for your approval (only when some are)',
  examples: ['approvals digest daily 08:30', 'approvals digest off'],
  upstream: false,
  rank: 86,
  async run(ctx, { approvals }) {
    if (!approvals) return approvalsOffCard();
    const fmt = approvals.formatFor(ctx.locale);
    const { timeZone } = fmt;
    const hint = `Type **approvals digest daily 08:30** (24-hour time, ${timeZone}) or **approvals digest off**.`;
    const [word, ...rest] = ctx.input.args.map((a) => a.toLowerCase());
    const links = await linksFor(approvals, ctx);
    const since = ctx.now.getTime();
    const card = (time: string | undefined, changed: boolean) => {
      const nextDate = time ? nextSlot({ every: 'daily', time }, since, timeZone).date : undefined;
      return digestSettingCard({ time, changed, nextDate, fmt });
    };
    if (word === undefined) return card(links.find((l) => l.digestTime)?.digestTime, false);
    let time: string | undefined;
    if (word === 'daily' && rest.length > 0) {
      const typed = ctx.input.args.slice(1).join(' ');
      time = parseTime(typed);
      if (!time)
        throw new InputError(`I can't read "${typed.slice(0, 30)}" as a time of day`, hint, `approvals digest ${ctx.input.argText}`);
    } else if (word !== 'off' || rest.length > 0) throw new InputError('Which digest?', hint, `approvals digest ${ctx.input.argText}`);
    for (const link of links) await approvals.links.update(link, { digestTime: time, digestSince: time ? since : undefined });
    ctx.log.info({ digest: time ?? 'off', links: links.length }, 'approvals digest set');
    return card(time, true);
  },
};
